"""A file replaced only when the new one is whole.

An export written straight into its file empties that file the moment it is opened: a
mistyped entity, a lost connection or Ctrl-C then leaves nothing where the last good export
was (issue 56: ``sbmgmt export ordrs --file keep.jsonl`` left ``keep.jsonl``, 34 messages,
empty). :func:`written_whole` writes to a temporary file in the same directory instead (the
same file system, so the rename is atomic: POSIX ``rename(2)``, and ``os.replace`` on
Windows), flushed to the disk, and renames it over the target only when the writer
finished without an error; on an error the temporary file is removed and the target is
byte for byte what it was (or still absent).
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

__all__ = ["written_whole"]


def _mode_for(path: Path) -> int:
    """The permissions the new file gets: the old file's, else what ``open`` would give
    (0o666 less the umask; a temporary file is made 0o600)."""
    try:
        return stat.S_IMODE(path.stat().st_mode)
    except FileNotFoundError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


@contextlib.contextmanager
def written_whole(path: str | os.PathLike[str], *, encoding: str = "utf-8") -> Iterator[IO[str]]:
    """A text file to write that replaces ``path`` only when the block ends without an
    error.

    Args:
        path: The file to create or replace.
        encoding: The text's encoding.

    Yields:
        A text file open for writing (a temporary file beside ``path``).

    Raises:
        OSError: The directory cannot be written, or ``path`` is a directory; nothing was
            changed. Whatever the block raises is raised after the temporary file is
            removed, with ``path`` left as it was.
    """
    target = Path(path)
    if target.is_dir():
        raise IsADirectoryError(21, "is a directory", str(target))
    mode = _mode_for(target)
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".partial",
                                         dir=target.parent)
    try:
        with os.fdopen(handle, "w", encoding=encoding) as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
