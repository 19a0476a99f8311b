"""The destructive commands' confirmation: asked on a terminal, refused without one.

``purge``, ``resubmit``, ``move``, ``import`` and ``deferred complete | dead-letter`` say what
they will do, then call :func:`confirm`: ``--yes`` goes on; a terminal's user is asked (the
question on stderr, the answer read from stdin: stdout carries records); without a terminal
nobody can be asked, so the command refuses. Both refusals are :class:`NotConfirmed` (exit
code 11: nothing was done).
"""

from __future__ import annotations

import sys

from ._exit import NotConfirmed

__all__ = ["confirm"]


def _agreed(question: str) -> bool:
    """Ask on stderr, read the answer from stdin; only y / yes agrees.

    Not ``typer.confirm``: its ``input(" ")`` writes to stdout, which carries records.
    """
    sys.stderr.write(f"{question} [y/N] ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def confirm(question: str, *, yes: bool, refusal: str, declined: str,
            dry_run_hint: bool = True) -> None:
    """Go on only if ``--yes`` was given or the terminal's user agrees.

    Args:
        question: Asked on the terminal, e.g. "Delete them?".
        yes: ``--yes`` was given: nothing is asked.
        refusal: What is refused when stdin is not a terminal, e.g. "refused to delete 12
            messages" (the reason and the way out are added).
        declined: The message when the user says no, e.g. "nothing deleted: not confirmed".
        dry_run_hint: The command has ``--dry-run``: the refusal names it.

    Raises:
        NotConfirmed: Declined, or stdin is not a terminal and ``yes`` is False.
    """
    if yes:
        return
    if not sys.stdin.isatty():
        hint = " (or --dry-run to see what it would do)" if dry_run_hint else ""
        raise NotConfirmed(f"{refusal}: stdin is not a terminal, so nothing can be confirmed; "
                           f"pass --yes{hint}")
    if not _agreed(question):
        raise NotConfirmed(declined)
