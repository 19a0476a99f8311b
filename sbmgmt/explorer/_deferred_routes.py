"""The explorer's deferred messages (:mod:`sbmgmt.actions.deferred`): a page of an entity's
deferred messages (found by a peek), and their settlement (all of them, or the ticked ones
as ``select_deferred`` turns numbers into messages, the CLI's way) as a job; completing and
dead-lettering ask first, abandoning does not."""

from __future__ import annotations

from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..actions import deferred as deferred_action
from ..actions.contract import CancelToken, OnProgress
from ..actions.deferred import DeferredAction
from ..errors import ServiceBusManagementError
from ..message import ReceivedMessage
from ._form_values import choice_value, number_value, selected_numbers, text_value
from ._held import Held
from ._outcomes import deferred_outcome
from ._site import Site, here

__all__ = ["routes"]

_DEFERRED_PAGE = 50


class _Settlement:
    """A settlement of deferred messages waiting for its confirmation: the ticked messages
    (peeked, with their session ids), or None for every deferred message of the entity."""

    def __init__(self, path: str, action: DeferredAction,
                 messages: list[ReceivedMessage] | None, count: int,
                 reason: str | None) -> None:
        self.path, self.action, self.messages = path, action, messages
        self.count, self.reason = count, reason


def routes(site: Site) -> list[Route]:
    """``GET /deferred`` and ``POST /deferred/settle``."""
    settlements: Held[_Settlement] = Held()

    async def deferred(request: Request) -> Response:
        """A page of an entity's deferred messages, with the forms that settle all of them
        or the ticked ones."""
        path = text_value(request.query_params, "path")
        start = number_value(request.query_params, "from", 1, minimum=1)

        def read() -> dict[str, Any]:
            return {"page": deferred_action.deferred_page(site.ns.entity(path), start,
                                                          _DEFERRED_PAGE),
                    "start": start}

        return await site.reading(request, "deferred.html", read, tab="deferred",
                                  reload=here(request))

    async def ask(request: Request, form: FormData) -> Response:
        path = text_value(form, "path")
        action = choice_value(form, "action", DeferredAction, DeferredAction.COMPLETE)
        reason = str(form.get("reason") or "").strip() or None
        numbers = selected_numbers(form)
        entity = site.ns.entity(path)

        def selection() -> tuple[list[ReceivedMessage] | None, int]:
            if numbers is None:
                return None, sum(1 for _ in deferred_action.find_deferred(entity))
            found = deferred_action.select_deferred(entity, numbers).messages
            return found, len(found)

        try:
            chosen, count = await run_in_threadpool(selection)
        except ServiceBusManagementError as error:
            return site.failed(request, error)
        if count == 0:
            return site.notice(request, f"no {'ticked ' if numbers else ''}deferred messages "
                               f"in {path}", error=True)
        held = _Settlement(path, action, chosen, count,
                           reason if action is DeferredAction.DEAD_LETTER else None)
        if action is DeferredAction.ABANDON:
            return run(request, held)
        which = "" if chosen is None else "ticked "
        doing = ("Complete (remove for good)" if action is DeferredAction.COMPLETE else
                 "Dead-letter (move to the dead-letter queue)")
        return site.ask(
            request, "/deferred/settle",
            f"{doing} the {count} {which}deferred messages of {path}"
            f"{' (those deferred when it runs)' if chosen is None else ''}.", settlements, held)

    def run(request: Request, held: _Settlement) -> Response:
        entity = site.ns.entity(held.path)

        def work(on_progress: OnProgress, cancel: CancelToken) -> str:
            chosen = (held.messages if held.messages is not None
                      else deferred_action.find_deferred(entity))
            return deferred_outcome(deferred_action.settle_deferred(
                entity, chosen, held.action, dead_letter_reason=held.reason,
                on_progress=on_progress, cancel=cancel))

        verb = held.action.value.replace("_", "-")
        return site.start(request, f"{verb} {held.count} deferred messages of {held.path}",
                          held.count, work)

    async def settle(request: Request) -> Response:
        """Complete, abandon or dead-letter deferred messages (all, or the ticked ones), as
        a job; completing and dead-lettering ask first."""
        return await site.confirmed(request, settlements, lambda form: ask(request, form),
                                    lambda held, _form: run(request, held))

    return [Route("/deferred", deferred),
            Route("/deferred/settle", settle, methods=["POST"])]
