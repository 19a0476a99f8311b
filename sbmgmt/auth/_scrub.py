"""``Scrubber``: known secrets, and anything shaped like a key or a signature, out of text.

One rule for every place a secret could leak into text meant for people: the CLI's stderr
and ``--debug`` log, and the fake namespace's log (``fakes/_log.py``). A connection string's
``SharedAccessKey=`` / ``SharedAccessSignature=`` values, a SAS token's ``sig=`` and a SAS
token as a whole (``SharedAccessSignature sr=...``) are masked whatever they are; the
secrets a caller names (:meth:`Scrubber.add`) are masked wherever they stand as whole
tokens.
"""

from __future__ import annotations

import re
import traceback
from collections.abc import Iterable

__all__ = ["Scrubber"]

_SECRET_SETTINGS = re.compile(
    r"(SharedAccessKey|SharedAccessSignature)\s*=\s*([^;]+)", re.IGNORECASE
)
_SAS_SIGNATURE = re.compile(r"(sig=)[^&\s;\"']+", re.IGNORECASE)
#: A SAS token as a whole (``SharedAccessSignature sr=...&sig=...&se=...&skn=...``): what it
#: grants is no one's business either.
_SAS_TOKEN = re.compile(r"(SharedAccessSignature)\s+[^\s;\"']+", re.IGNORECASE)
_MASK = "***"


# What a key, a signature or a token is made of (base64, URL-safe base64, URL escapes):
# a known secret is replaced only where none of these touches it on either side (a
# padding ``=`` only ends one: ``Key=b`` holds the token ``b``).
_TOKEN_BEFORE = r"[A-Za-z0-9+/%_\-]"
_TOKEN_AFTER = r"[A-Za-z0-9+/=%_\-]"


class Scrubber:
    """Replaces known secrets (and anything shaped like a key or signature) with ``***``.

    A known secret is replaced as a whole token only: a one-letter key ``b`` hides the
    ``b`` of ``SharedAccessKey=b``, never the one inside ``problem``.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        for secret in secrets:
            self.add(secret)

    def add(self, text: str | None) -> None:
        """Remember a secret: a connection string, a key or a token."""
        if not text or not text.strip():
            return
        self._secrets.add(text.strip())
        for match in _SECRET_SETTINGS.finditer(text):
            self._secrets.add(match.group(2).strip())
        longest_first = sorted(self._secrets, key=len, reverse=True)
        self._pattern = re.compile(
            f"(?<!{_TOKEN_BEFORE})(?:{'|'.join(map(re.escape, longest_first))})"
            f"(?!{_TOKEN_AFTER})"
        )

    def __call__(self, text: str) -> str:
        if self._pattern is not None:
            text = self._pattern.sub(_MASK, text)
        text = _SECRET_SETTINGS.sub(lambda m: f"{m.group(1)}={_MASK}", text)
        text = _SAS_TOKEN.sub(lambda m: f"{m.group(1)} {_MASK}", text)
        return _SAS_SIGNATURE.sub(lambda m: f"{m.group(1)}{_MASK}", text)

    def traceback(self, error: BaseException) -> str:
        """The error's formatted traceback, scrubbed."""
        return self("".join(traceback.format_exception(error)))
