"""The explorer's small edits: send or schedule a test message, cancel a scheduled one, set
or clear a session's state, add or remove a subscription's rule. Each is one POST whose
answer is what was done, or the error (those that cannot be undone ask first, their few
fields carried in the question)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ..message import Message, id_text
from ..rules import SqlFilter, SqlRuleAction
from ._form_values import message_from, number_value, state_bytes, text_value, when_value
from ._site import Site

__all__ = ["routes"]


def _shown_id(message: Message) -> str:
    """A message's id as the page says it (the form always gives one)."""
    return "(none)" if message.message_id is None else id_text(message.message_id)


class _Edits:
    """The small edits' handlers."""

    def __init__(self, site: Site) -> None:
        self._site = site

    async def send(self, request: Request) -> Response:
        """Send a test message, on the entity's sender (a link of its own, attached for the
        one message)."""
        form = await request.form()
        path = text_value(form, "path")
        message = message_from(form)

        def work() -> str:
            with self._site.ns.entity(path).sender() as sender:
                sender.send_messages([message])
            return f"sent message {_shown_id(message)} to {path}"

        return await self._site.acting(request, work)

    async def schedule(self, request: Request) -> Response:
        """Schedule a message for a time to come (or in N minutes)."""
        form = await request.form()
        path = text_value(form, "path")
        message = message_from(form)
        when = when_value(text_value(form, "at"))

        def work() -> str:
            numbers = self._site.ns.entity(path).schedule_messages([message], when)
            return (f"scheduled message {_shown_id(message)} on {path} for "
                    f"{when.isoformat()}: sequence number {numbers[0]}")

        return await self._site.acting(request, work)

    async def cancel(self, request: Request) -> Response:
        """Cancel a scheduled message (asks first)."""
        form = await request.form()
        path = text_value(form, "path")
        sequence = number_value(form, "seq", 1, minimum=1)
        if form.get("confirmed") != "yes":
            return self._site.confirm(request, "/cancel",
                                 f"Cancel the scheduled message {sequence} of {path}: it will "
                                 "never be enqueued.", {"path": path, "seq": str(sequence)})

        def work() -> str:
            self._site.ns.entity(path).cancel_scheduled_messages([sequence])
            return f"cancelled the scheduled message {sequence} of {path}"

        return await self._site.acting(request, work)

    async def set_state(self, request: Request) -> Response:
        """Set a session's state from text (UTF-8) or base64."""
        form = await request.form()
        path, session_id = text_value(form, "path"), text_value(form, "id")
        state = state_bytes(text_value(form, "state", allow_empty=True),
                             form.get("encoding") == "base64")
        return await self._session_state(
            request, path, session_id, state,
            f"set the state of session {session_id} ({len(state)} bytes)")

    async def clear_state(self, request: Request) -> Response:
        """Clear a session's state (asks first)."""
        form = await request.form()
        path, session_id = text_value(form, "path"), text_value(form, "id")
        if form.get("confirmed") != "yes":
            return self._site.confirm(request, "/session/clear",
                                 f"Clear the state of session {session_id} of {path}.",
                                 {"path": path, "id": session_id})
        return await self._session_state(request, path, session_id, None,
                                         f"cleared the state of session {session_id}")

    async def _session_state(self, request: Request, path: str, session_id: str,
                             state: bytes | None, done: str) -> Response:
        """Set (or with None clear) a session's state under its lock; ``done`` says so."""

        def work() -> str:
            with self._site.ns.entity(path).session(session_id) as held:
                held.set_state(state)
            return done

        return await self._site.acting(request, work)

    async def add_rule(self, request: Request) -> Response:
        """Add a rule with a SQL filter (and maybe an action), the SQL checked first."""
        form = await request.form()
        path, name = text_value(form, "path"), text_value(form, "name")
        sql = text_value(form, "sql")
        action_text = str(form.get("action") or "").strip()
        try:
            if self._site.ns.check_sql_filter is not None:
                self._site.ns.check_sql_filter(sql)
            if action_text and self._site.ns.check_sql_action is not None:
                self._site.ns.check_sql_action(action_text)
        except ValueError as error:
            return self._site.notice(request, f"not sent: {error}", error=True)
        action = SqlRuleAction(expression=action_text) if action_text else None

        def work() -> str:
            self._site.ns.entity(path).add_rule(name, SqlFilter(expression=sql), action)
            return f"added the rule {name} to {path}"

        return await self._site.acting(request, work)

    async def remove_rule(self, request: Request) -> Response:
        """Remove a rule (asks first)."""
        form = await request.form()
        path, name = text_value(form, "path"), text_value(form, "name")
        if form.get("confirmed") != "yes":
            return self._site.confirm(request, "/rules/remove",
                                 f"Remove the rule {name} of {path}: the messages it lets "
                                 "through will no longer reach the subscription.",
                                 {"path": path, "name": name})

        def work() -> str:
            self._site.ns.entity(path).remove_rule(name)
            return f"removed the rule {name} of {path}"

        return await self._site.acting(request, work)


def routes(site: Site) -> list[Route]:
    """The small edits' routes."""
    views = _Edits(site)
    return [
        Route("/send", views.send, methods=["POST"]),
        Route("/schedule", views.schedule, methods=["POST"]),
        Route("/cancel", views.cancel, methods=["POST"]),
        Route("/session/state", views.set_state, methods=["POST"]),
        Route("/session/clear", views.clear_state, methods=["POST"]),
        Route("/rules/add", views.add_rule, methods=["POST"]),
        Route("/rules/remove", views.remove_rule, methods=["POST"]),
    ]
