"""The explorer's export and import (:mod:`sbmgmt.actions.export`'s format,
:mod:`sbmgmt.actions.import_file`): a (sub-)queue's messages downloaded as an export file,
peeked and sent as they come (the lines of the one export loop, ``Exporter.lines``); an
export file's messages sent to a queue or topic, asked first (the file uploaded and read
through, the target checked), then sent as a job."""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData, UploadFile
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from .._wording import counted
from ..actions.contract import CancelToken, OnProgress
from ..actions.export import Exporter, read_messages
from ..actions.import_file import import_messages
from ..actions.targets import IfDuplicate, check_target
from ..errors import ExportFormatError, ServiceBusManagementError
from ._form_values import choice_value, text_value
from ._held import Held
from ._outcomes import import_outcome
from ._pages import SubQueue, queue_path
from ._site import Site

__all__ = ["routes"]

#: An export is sent in pieces of about this many characters.
_EXPORT_CHUNK = 64 * 1024


class _Upload:
    """An uploaded export file, kept in a temporary file until its import is confirmed."""

    def __init__(self, path: str, name: str, entity: str, count: int) -> None:
        self.path, self.name, self.entity, self.count = path, name, entity, count

    @classmethod
    def keep(cls, sent: UploadFile, entity: str) -> _Upload:
        """Copy the upload to a file of our own and read it through (every line checked).

        Raises:
            sbmgmt.errors.ExportFormatError: A line is not a message of the format.
        """
        handle, path = tempfile.mkstemp(prefix="sbmgmt-explorer-import-", suffix=".jsonl")
        try:
            with os.fdopen(handle, "wb") as copy:
                shutil.copyfileobj(sent.file, copy)
            with open(path, encoding="utf-8") as lines:
                count = sum(1 for _ in read_messages(lines))
        except BaseException:
            os.unlink(path)
            raise
        return cls(path, sent.filename or "the file", entity, count)

    def remove(self) -> None:
        """Delete the temporary file (once imported, or dropped unconfirmed)."""
        Path(self.path).unlink(missing_ok=True)


def routes(site: Site) -> list[Route]:
    """``GET /export`` and ``POST /import``."""
    uploads: Held[_Upload] = Held(_Upload.remove)

    async def export(request: Request) -> Response:
        """A (sub-)queue's messages as an export file (one JSON line a message), peeked and
        sent as they come: the server holds a piece of the file at a time, never the
        entity."""
        source = queue_path(text_value(request.query_params, "path"),
                            choice_value(request.query_params, "queue", SubQueue,
                                         SubQueue.MAIN))
        entity = site.ns.entity(source)

        def pieces() -> Iterator[str]:
            piece: list[str] = []
            size = 0
            for line in Exporter(source).lines(entity.peek_all()):
                piece.append(line)
                size += len(line)
                if size >= _EXPORT_CHUNK:
                    yield "".join(piece)
                    piece, size = [], 0
            yield "".join(piece)

        name = re.sub(r"[^A-Za-z0-9._-]+", "_", source).strip("_") + ".jsonl"
        return StreamingResponse(pieces(), media_type="application/x-ndjson",
                                 headers={"Content-Disposition": f'attachment; filename="{name}"'})

    async def ask(request: Request, form: FormData) -> Response:
        path = text_value(form, "path")
        sent = form.get("file")
        if not isinstance(sent, UploadFile) or not sent.filename:
            return site.notice(request, "not sent: choose an export file first", error=True)
        try:
            check = await run_in_threadpool(lambda: check_target(
                site.ns.client, path, describe=site.ns.properties))
            kept = await run_in_threadpool(_Upload.keep, sent, path)
        except ExportFormatError as error:
            return site.notice(request, f"not sent: {sent.filename}: {error}", error=True)
        except (ServiceBusManagementError, ValueError) as error:
            return site.notice(request, f"not sent: {site.ns.redacted(str(error))}",
                               error=True)
        what = (f"Send the {counted(kept.count, 'message')} of {kept.name} to {path}, as they "
                "are in the file (each keeps its MessageId, properties and body).")
        if not check.duplicate_detection:
            return site.ask(request, "/import", what, uploads, kept)
        return site.ask(
            request, "/import",
            f"{what} {path} detects duplicates: it drops a message whose MessageId it saw "
            "within its window, and which ids it saw cannot be read. What should be done "
            "with the messages that have one?", uploads, kept,
            ((IfDuplicate.NEW_ID.value, "Send them with a new MessageId"),
             (IfDuplicate.LEAVE.value, "Leave them out")))

    def run(request: Request, upload: _Upload, form: FormData) -> Response:
        choice = choice_value(form, "if_duplicate", IfDuplicate, IfDuplicate.REFUSE)

        def work(on_progress: OnProgress, cancel: CancelToken) -> str:
            try:
                with open(upload.path, encoding="utf-8") as lines:
                    return import_outcome(import_messages(
                        site.ns.client, upload.entity, read_messages(lines),
                        on_progress=on_progress, cancel=cancel, if_duplicate=choice,
                        describe=site.ns.properties))
            finally:
                upload.remove()

        return site.start(request, f"import {counted(upload.count, 'message')} of "
                          f"{upload.name} into {upload.entity}", upload.count, work)

    async def import_file(request: Request) -> Response:
        """Send an export file's messages to a queue or topic: first the target is checked
        (a bad one is an error, nothing asked) and the file is uploaded and read through
        (every line checked), and the page says how many will be sent where (with the
        choices for a target that detects duplicates); then they are sent, as a job."""
        return await site.confirmed(request, uploads, lambda form: ask(request, form),
                                    lambda upload, form: run(request, upload, form))

    return [Route("/export", export), Route("/import", import_file, methods=["POST"])]
