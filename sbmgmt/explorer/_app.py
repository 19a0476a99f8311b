"""The explorer's routes: server-rendered pages, htmx for the live parts and the forms.

Every page is one request that reads what it shows through the public clients and
renders it (Jinja2, autoescape on: every value from a message, a property or an entity
name is text). The namespace's counts and an entity's counts refresh themselves (htmx
polls their fragments). A form that changes something is a POST whose answer is a
fragment (what was done, or the error); a destructive one answers first with what it
will do and a second form that does it (``confirmed=yes``). After a change the answer
carries ``HX-Trigger: changed``, on which the lists of the page reload themselves.

Routes read their query and form values through small parsers that answer 400 with the
fault named; a failed reply of the service becomes the page's error, its text redacted
(:meth:`Namespace.redacted`).
"""

from __future__ import annotations

import fnmatch
import functools
import io
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import jinja2
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response, StreamingResponse
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from .._wording import counted, utc_time
from ..actions import deferred as deferred_action
from ..actions import purge as purge_action
from ..actions import repair as repair_action
from ..actions.deferred import DeferredAction
from ..actions.entities import EntityKind
from ..actions.export import read_messages, write_messages
from ..actions.import_file import import_messages
from ..actions.purge import PurgePlan
from ..actions.repair import RepairPlan, Selection
from ..actions.targets import IfDuplicate, check_target
from ..actions.watch import Sampler
from ..errors import ExportFormatError, ServiceBusManagementError
from ..message import Message, MessageState, ReceivedMessage, id_text
from ..rules import CorrelationFilter, RuleFilter, SqlFilter, SqlRuleAction
from ._charts import chart_routes, sparkline
from ._entity_forms import entity_form_routes
from ._form_values import (
    BadInput,
    choice_value,
    error_text,
    kind_value,
    message_from,
    number_value,
    selected_numbers,
    state_bytes,
    text_value,
    trail_value,
    when_value,
)
from ._held import Held
from ._jobs import Job, Jobs, Work
from ._message_view import body_view, fields_of, system_fields, utf8_text, value_text
from ._namespace import Namespace
from ._outcomes import deferred_outcome, import_outcome, purge_outcome, repair_outcome
from ._pages import MAX_PAGE, StateFilter, SubQueue, peek_page, queue_path, trail_after
from ._search import search_routes

__all__ = ["create_app"]

_HERE = Path(__file__).parent
_DEFAULT_PAGE = 50
_SESSIONS_PAGE = 100
_DEFERRED_PAGE = 50
#: The repairs, each with what its outcome says it did.
_REPAIRED = {"resubmit": "resubmitted", "move": "moved"}
#: An export is sent in pieces of about this many characters.
_EXPORT_CHUNK = 64 * 1024
#: A listing is refreshed no more often than every this many times its duration.
_SLOW_LISTING = 5


def create_app(namespace: Namespace, *, refresh_seconds: float = 5.0,
               sampler: Sampler | None = None) -> Starlette:
    """The explorer's ASGI app over one namespace (without the guard: see ``serve``).

    Args:
        namespace: What it shows and changes.
        refresh_seconds: How often the counts refresh themselves.
        sampler: What the charts and sparklines draw (``_charts.py``; started by whoever
            serves the app); none: a sampler of the namespace that is never started.

    Returns:
        The Starlette app.
    """
    sampler = sampler or Sampler(namespace.entities)
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"), autoescape=True,
        undefined=jinja2.StrictUndefined)
    environment.filters["text"] = value_text
    environment.filters["rule_filter"] = _filter_text
    environment.filters["counted"] = counted
    environment.filters["time"] = utc_time
    environment.globals["sparkline"] = functools.partial(sparkline, sampler)
    templates = Jinja2Templates(env=environment)
    views = _Views(namespace, templates, refresh_seconds)
    routes = [
        Route("/", views.home),
        Route("/entities", views.entities_table),
        Route("/entity", views.entity_properties),
        Route("/entity/counts", views.entity_counts),
        Route("/messages", views.messages),
        Route("/message", views.message),
        Route("/sessions", views.sessions),
        Route("/session", views.session),
        Route("/rules", views.rules),
        Route("/nothing", views.nothing),
        Route("/send", views.send, methods=["POST"]),
        Route("/schedule", views.schedule, methods=["POST"]),
        Route("/cancel", views.cancel, methods=["POST"]),
        Route("/session/state", views.set_state, methods=["POST"]),
        Route("/session/clear", views.clear_state, methods=["POST"]),
        Route("/rules/add", views.add_rule, methods=["POST"]),
        Route("/rules/remove", views.remove_rule, methods=["POST"]),
        Route("/purge", views.purge, methods=["POST"]),
        Route("/repair", views.repair, methods=["POST"]),
        Route("/export", views.export),
        Route("/import", views.import_file, methods=["POST"]),
        Route("/deferred", views.deferred),
        Route("/deferred/settle", views.settle_deferred, methods=["POST"]),
        Route("/job", views.job),
        Route("/job/cancel", views.cancel_job, methods=["POST"]),
        *search_routes(namespace, views._page, views._entity_page),
        *entity_form_routes(namespace, views._page, views._entity_page),
        *chart_routes(sampler, views._page, namespace.redacted),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    return Starlette(routes=routes, exception_handlers={BadInput: views.bad_input})



def _here(request: Request) -> str:
    """The address of this page, without the host: what a list re-reads after an action."""
    return f"{request.url.path}?{request.url.query}" if request.url.query else request.url.path


def _shown_id(message: Message) -> str:
    """A message's id as the page says it (the form always gives one)."""
    return "(none)" if message.message_id is None else id_text(message.message_id)

class _Views:
    """The route handlers, over one namespace."""

    def __init__(self, namespace: Namespace, templates: Jinja2Templates,
                 refresh_seconds: float) -> None:
        self._ns = namespace
        self._templates = templates
        self._refresh = refresh_seconds
        self._jobs = Jobs()
        self._plans: Held[tuple[str, RepairPlan]] = Held()
        self._uploads: Held[_Upload] = Held(_Upload.remove)
        self._settlements: Held[_Settlement] = Held()

    # --- rendering -------------------------------------------------------------------

    def _page(self, request: Request, name: str, status: int = 200,
              headers: Mapping[str, str] | None = None, **context: Any) -> Response:
        context.setdefault("namespace", self._ns.label)
        context.setdefault("refresh", self._refresh)
        return self._templates.TemplateResponse(request, name, context, status_code=status,
                                                headers=headers)

    def _entity_page(self, request: Request, name: str, tab: str, **context: Any) -> Response:
        path = text_value(request.query_params, "path")
        kind = kind_value(request.query_params, path)
        return self._page(request, name, path=path, kind=kind.value, tab=tab,
                          q=urlencode({"path": path, "kind": kind.value}),
                          has_messages=kind is not EntityKind.TOPIC,
                          has_rules=kind is EntityKind.SUBSCRIPTION, **context)

    def _notice(self, request: Request, text: str, *, error: bool = False,
                changed: bool = False) -> Response:
        headers = {"HX-Trigger": "changed"} if changed else None
        return self._page(request, "_notice.html", headers=headers, text=text, error=error)

    def _confirm(self, request: Request, action: str, what: str,
                 fields: dict[str, str], choices: tuple[tuple[str, str], ...] = ()) -> Response:
        """The question before a destructive action; ``choices`` (an ``if_duplicate``
        value and its button's words) replace the one "Yes" when there is a choice to make."""
        return self._page(request, "_confirm.html", action=action, what=what, fields=fields,
                          choices=choices)

    async def _acting(self, request: Request, work: Callable[[], str]) -> Response:
        """Run ``work`` (blocking: on a worker thread); its text, or its error, as a notice."""
        try:
            done = await run_in_threadpool(work)
        except (ServiceBusManagementError, ValueError) as error:
            return self._notice(request, self._ns.redacted(error_text(error)), error=True)
        return self._notice(request, done, changed=True)

    async def bad_input(self, request: Request, error: Exception) -> Response:
        """A value the explorer cannot take: 400 with the fault; to a form's request
        (htmx, which swaps only a 2xx answer in) the fault as the form's outcome."""
        if request.headers.get("HX-Request") == "true":
            return self._notice(request, f"not sent: {error}", error=True)
        return self._page(request, "error.html", status=400, text=str(error))

    async def _reading(self, request: Request, name: str,
                       read: Callable[[], dict[str, Any]], tab: str = "",
                       **extra: Any) -> Response:
        """A page whose content ``read`` gets (on a worker thread); a failed read is the
        page's error, with the entity's header and tabs kept."""
        try:
            context = {**extra, **await run_in_threadpool(read)}
        except ServiceBusManagementError as error:
            context = {**extra, "failure": self._ns.redacted(error_text(error))}
        if tab:
            return self._entity_page(request, name, tab, **context)
        return self._page(request, name, **context)

    # --- the namespace -----------------------------------------------------------------

    async def home(self, request: Request) -> Response:
        """The namespace: every entity with its counts (refreshed by the table's fragment)."""
        return await self._reading(request, "namespace.html", lambda: self._listing(request),
                                   **self._listing_defaults(request))

    async def entities_table(self, request: Request) -> Response:
        """The namespace's table alone (what the page polls)."""
        return await self._reading(request, "_entities.html", lambda: self._listing(request),
                                   **self._listing_defaults(request))

    def _listing_defaults(self, request: Request) -> dict[str, Any]:
        """What the listing's templates need when the listing failed."""
        return {"match": request.query_params.get("match", "").strip(),
                "poll": self._refresh}

    def _listing(self, request: Request) -> dict[str, Any]:
        match = request.query_params.get("match", "").strip()
        started = time.monotonic()
        listed = self._ns.entities()
        listed_in = time.monotonic() - started
        if match:
            pattern = match.lower() if any(c in match for c in "*?[") else f"*{match.lower()}*"
            listed = [e for e in listed if fnmatch.fnmatchcase(e.name.lower(), pattern)]
        # The next refresh: the chosen interval, or longer for a namespace whose listing is
        # slow, so that refreshing never keeps the server (and the service) busy.
        poll = max(self._refresh, round(_SLOW_LISTING * listed_in, 1))
        return {"entities": listed, "match": match, "listed_in": listed_in, "poll": poll}

    # --- one entity ---------------------------------------------------------------------

    async def entity_properties(self, request: Request) -> Response:
        """An entity's properties."""
        path = text_value(request.query_params, "path")

        def read() -> dict[str, Any]:
            found = self._ns.properties(path)
            return {"counts": found.counts, "properties": fields_of(found.properties)}

        return await self._reading(request, "properties.html", read, tab="properties")

    async def entity_counts(self, request: Request) -> Response:
        """An entity's counts alone (what its pages poll)."""
        path = text_value(request.query_params, "path")
        return await self._reading(
            request, "_counts.html", lambda: {"counts": self._ns.properties(path).counts})

    async def messages(self, request: Request) -> Response:
        """One page of an entity's messages, from one sub-queue, maybe of one state."""
        query = request.query_params
        path = text_value(query, "path")
        queue = choice_value(query, "queue", SubQueue, SubQueue.MAIN)
        state = choice_value(query, "state", StateFilter, StateFilter.ALL)
        start = number_value(query, "from", 1, minimum=1)
        size = number_value(query, "size", _DEFAULT_PAGE, minimum=1, maximum=MAX_PAGE)
        trail = trail_value(query.get("trail", ""))

        def read() -> dict[str, Any]:
            page = peek_page(self._ns.entity(queue_path(path, queue)), start, size, state)
            return {"page": page, "next_trail": ",".join(map(str, trail_after(trail, start)))}

        back = trail[-1] if trail else None
        return await self._reading(
            request, "messages.html", read, tab="messages", queue=queue.value,
            state=state.value, size=size, start=start, back=back, reload=_here(request),
            back_trail=",".join(map(str, trail[:-1])), states=[s.value for s in StateFilter])

    async def message(self, request: Request) -> Response:
        """One message in full: its body in the form that fits, every property."""
        query = request.query_params
        path = text_value(query, "path")
        queue = choice_value(query, "queue", SubQueue, SubQueue.MAIN)
        sequence = number_value(query, "seq", 1, minimum=1)

        def read() -> dict[str, Any]:
            peeked = self._ns.entity(queue_path(path, queue)).peek_messages(sequence, 1)
            if not peeked or peeked[0].sequence_number != sequence:
                return {"found": None}
            found = peeked[0]
            return {"found": found, "body": body_view(found), "system": system_fields(found),
                    "application": fields_of(found.application_properties),
                    "annotations": fields_of(found.raw_annotations)}

        return await self._reading(request, "message.html", read, tab="messages",
                                   queue=queue.value, seq=sequence)

    async def sessions(self, request: Request) -> Response:
        """An entity's sessions, a page of ids at a time."""
        path = text_value(request.query_params, "path")
        skip = number_value(request.query_params, "skip", 0, minimum=0)

        def read() -> dict[str, Any]:
            ids = self._ns.entity(path).list_sessions(skip=skip, top=_SESSIONS_PAGE)
            more = len(ids) == _SESSIONS_PAGE
            return {"ids": ids, "skip": skip, "next_skip": skip + len(ids) if more else None}

        return await self._reading(request, "sessions.html", read, tab="sessions")

    async def session(self, request: Request) -> Response:
        """One session's state (as text when it is UTF-8, else as hex), with its forms."""
        path = text_value(request.query_params, "path")
        session_id = text_value(request.query_params, "id")

        def read() -> dict[str, Any]:
            with self._ns.entity(path).session(session_id) as held:
                state = held.get_state()
            text = None if state is None else utf8_text(state)
            return {"session_id": session_id, "state": state, "state_text": text,
                    "state_hex": None if state is None else state.hex(" ")}

        return await self._reading(request, "session.html", read, tab="sessions")

    async def rules(self, request: Request) -> Response:
        """A subscription's rules, with the form that adds one."""
        path = text_value(request.query_params, "path")
        fragment = request.query_params.get("fragment") == "table"

        def read() -> dict[str, Any]:
            return {"rules": self._ns.entity(path).list_rules(top=100)}

        if fragment:
            return await self._reading(request, "_rules_table.html",
                                       lambda: {**read(), "path": path})
        return await self._reading(request, "rules.html", read, tab="rules")

    async def nothing(self, request: Request) -> Response:
        """An empty answer: what a Cancel button swaps in."""
        return HTMLResponse("")

    # --- actions --------------------------------------------------------------------------

    async def send(self, request: Request) -> Response:
        """Send a test message, on the entity's sender (a link of its own, attached for the
        one message)."""
        form = await request.form()
        path = text_value(form, "path")
        message = message_from(form)

        def work() -> str:
            with self._ns.entity(path).sender() as sender:
                sender.send_messages([message])
            return f"sent message {_shown_id(message)} to {path}"

        return await self._acting(request, work)

    async def schedule(self, request: Request) -> Response:
        """Schedule a message for a time to come (or in N minutes)."""
        form = await request.form()
        path = text_value(form, "path")
        message = message_from(form)
        when = when_value(text_value(form, "at"))

        def work() -> str:
            numbers = self._ns.entity(path).schedule_messages([message], when)
            return (f"scheduled message {_shown_id(message)} on {path} for "
                    f"{when.isoformat()}: sequence number {numbers[0]}")

        return await self._acting(request, work)

    async def cancel(self, request: Request) -> Response:
        """Cancel a scheduled message (asks first)."""
        form = await request.form()
        path = text_value(form, "path")
        sequence = number_value(form, "seq", 1, minimum=1)
        if form.get("confirmed") != "yes":
            return self._confirm(request, "/cancel",
                                 f"Cancel the scheduled message {sequence} of {path}: it will "
                                 "never be enqueued.", {"path": path, "seq": str(sequence)})

        def work() -> str:
            self._ns.entity(path).cancel_scheduled_messages([sequence])
            return f"cancelled the scheduled message {sequence} of {path}"

        return await self._acting(request, work)

    async def set_state(self, request: Request) -> Response:
        """Set a session's state from text (UTF-8) or base64."""
        form = await request.form()
        path, session_id = text_value(form, "path"), text_value(form, "id")
        state = state_bytes(text_value(form, "state", allow_empty=True),
                             form.get("encoding") == "base64")

        def work() -> str:
            with self._ns.entity(path).session(session_id) as held:
                held.set_state(state)
            return f"set the state of session {session_id} ({len(state)} bytes)"

        return await self._acting(request, work)

    async def clear_state(self, request: Request) -> Response:
        """Clear a session's state (asks first)."""
        form = await request.form()
        path, session_id = text_value(form, "path"), text_value(form, "id")
        if form.get("confirmed") != "yes":
            return self._confirm(request, "/session/clear",
                                 f"Clear the state of session {session_id} of {path}.",
                                 {"path": path, "id": session_id})

        def work() -> str:
            with self._ns.entity(path).session(session_id) as held:
                held.set_state(None)
            return f"cleared the state of session {session_id}"

        return await self._acting(request, work)

    async def add_rule(self, request: Request) -> Response:
        """Add a rule with a SQL filter (and maybe an action), the SQL checked first."""
        form = await request.form()
        path, name = text_value(form, "path"), text_value(form, "name")
        sql = text_value(form, "sql")
        action_text = str(form.get("action") or "").strip()
        try:
            if self._ns.check_sql_filter is not None:
                self._ns.check_sql_filter(sql)
            if action_text and self._ns.check_sql_action is not None:
                self._ns.check_sql_action(action_text)
        except ValueError as error:
            return self._notice(request, f"not sent: {error}", error=True)
        action = SqlRuleAction(expression=action_text) if action_text else None

        def work() -> str:
            self._ns.entity(path).add_rule(name, SqlFilter(expression=sql), action)
            return f"added the rule {name} to {path}"

        return await self._acting(request, work)

    # --- long actions: run as jobs, watched by the page ------------------------------------

    def _job(self, request: Request, job: Job) -> Response:
        headers = None if job.running else {"HX-Trigger": "changed"}
        return self._page(request, "_job.html", headers=headers, job=job)

    def _start(self, request: Request, title: str, total: int | None, work: Work) -> Response:
        job = self._jobs.start(title, total, work,
                               lambda error: self._ns.redacted(error_text(error)))
        return self._job(request, job)

    async def job(self, request: Request) -> Response:
        """A long action's progress, or what it did once it ended."""
        found = self._jobs.get(text_value(request.query_params, "id"))
        if found is None:
            return self._notice(request, "no such job (the explorer was restarted?)",
                                error=True)
        return self._job(request, found)

    async def cancel_job(self, request: Request) -> Response:
        """Ask a long action to stop: it stops at its next step and says what it did."""
        form = await request.form()
        found = self._jobs.get(text_value(form, "id"))
        if found is None:
            return self._notice(request, "no such job", error=True)
        found.cancel.set()
        return self._job(request, found)

    async def purge(self, request: Request) -> Response:
        """Purge a (sub-)queue: first count what it would delete and ask, then delete what
        was counted (the messages enqueued before that moment), as a job."""
        form = await request.form()
        path = text_value(form, "path")
        queue = choice_value(form, "queue", SubQueue, SubQueue.MAIN)
        target = queue_path(path, queue)
        entity = self._ns.entity(target)
        if form.get("confirmed") != "yes":
            try:
                job = await run_in_threadpool(lambda: purge_action.plan(entity))
            except ServiceBusManagementError as error:
                return self._notice(request, self._ns.redacted(error_text(error)), error=True)
            return self._confirm(
                request, "/purge",
                f"Delete the {counted(job.eligible, 'message')} of {target} enqueued before "
                f"{utc_time(job.before)} UTC. Messages that arrive from now on stay; a locked "
                "message stays. This cannot be undone.",
                {"path": path, "queue": queue.value, "before": job.before.isoformat(),
                 "eligible": str(job.eligible)})
        planned = PurgePlan(entity=target, session_id=None,
                            before=when_value(text_value(form, "before")), max_count=None,
                            eligible=number_value(form, "eligible", 0, minimum=0))

        def work(progress: Callable[[int], None], cancel: threading.Event) -> str:
            return purge_outcome(purge_action.purge(entity, planned, on_progress=progress,
                                                     cancel=cancel))

        return self._start(request, f"purge {target}: {counted(planned.eligible, 'message')}",
                           planned.eligible, work)

    def _no_longer_held(self, request: Request) -> Response:
        return self._notice(request, "this confirmation is no longer held (too many others "
                            "since, or already done): ask again", error=True)

    async def repair(self, request: Request) -> Response:
        """Resubmit dead letters to where they came from, or move messages to another
        entity: all of a (sub-)queue's or the ticked ones. First plan (a peek, each target
        checked: a bad one is an error, nothing asked) and say how many go from where to
        where, and which copies a target's duplicate detection may drop (then the choices
        are what to do with them); then carry out that plan as a job."""
        form = await request.form()
        if form.get("confirmed") == "yes":
            held = self._plans.take(text_value(form, "plan"))
            if held is None:
                return self._no_longer_held(request)
            mode, plan = held
            choice = choice_value(form, "if_duplicate", IfDuplicate, IfDuplicate.REFUSE)

            def work(progress: Callable[[int], None], cancel: threading.Event) -> str:
                report = repair_action.repair(
                    self._ns.client, plan, if_duplicate=choice,
                    progress=lambda done, _planned: progress(done), cancel=cancel)
                return repair_outcome(_REPAIRED[mode], report)

            return self._start(request, f"{mode} {counted(len(plan.items), 'message')} of "
                               f"{plan.source} to {', '.join(plan.targets)}",
                               len(plan.items), work)
        source = queue_path(text_value(form, "path"),
                            choice_value(form, "queue", SubQueue, SubQueue.MAIN))
        mode = text_value(form, "mode")
        if mode not in _REPAIRED:
            raise BadInput(f"mode must be one of {', '.join(_REPAIRED)}")
        resubmit = mode == "resubmit"
        target = "" if resubmit else text_value(form, "target")
        numbers = selected_numbers(form)
        selection = Selection(sequence_numbers=numbers)

        def planned() -> RepairPlan:
            if resubmit:
                return repair_action.plan_resubmit(self._ns.client, source, selection,
                                                   describe=self._ns.properties)
            return repair_action.plan_move(self._ns.client, source, target, selection,
                                           describe=self._ns.properties)

        try:
            plan = await run_in_threadpool(planned)
        except (ServiceBusManagementError, ValueError) as error:
            return self._notice(request, self._ns.redacted(error_text(error)), error=True)
        which = "ticked " if numbers else ""
        if not plan.items:
            return self._notice(request, f"nothing to {mode}: no {which}messages in "
                                f"{source}", error=True)
        where = ", ".join(f"{count} to {to}" for to, count in plan.targets.items())
        missing = "" if not plan.not_found else (
            f" ({counted(len(plan.not_found), 'ticked message')} no longer there: "
            f"{', '.join(map(str, plan.not_found))})")
        locked = "" if not plan.held else (
            f" {counted(plan.held, 'other message')} of {source} ahead of them are locked "
            "while it runs and given back unchanged.")
        unread = "".join(f" The duplicate detection of {check.path} could not be read "
                         f"({check.unread}): if it is on, copies whose MessageId it saw "
                         "within its window are dropped."
                         for check in plan.checks.values() if check.unread is not None)
        what = (f"{mode.capitalize()} the {counted(len(plan.items), which + 'message')} of "
                f"{source}{missing}: {where}. Each is sent to its target and removed from "
                f"{source}, a batch at a time in a transaction (both or neither); the copies "
                f"keep their MessageId and lose the dead-letter reason and description.{locked}"
                f"{unread}")
        key = self._plans.put((mode, plan))
        if not plan.at_risk:
            return self._confirm(request, "/repair", what, {"plan": key})
        risky = [id_text(item.message_id) for item in plan.items
                 if item.sequence_number in plan.at_risk and item.message_id is not None]
        shown = ", ".join(risky[:10]) + (f" and {len(risky) - 10} more" if len(risky) > 10
                                         else "")
        return self._confirm(
            request, "/repair",
            f"{what} The target detects duplicates: it would drop "
            f"{counted(len(risky), 'copy', 'copies')} that keep their MessageId ({shown}), "
            "and the originals would be gone. What should be done with them?",
            {"plan": key},
            ((IfDuplicate.NEW_ID.value, "Send them with a new MessageId"),
             (IfDuplicate.LEAVE.value, "Leave them where they are")))

    async def export(self, request: Request) -> Response:
        """A (sub-)queue's messages as an export file (one JSON line a message,
        :mod:`sbmgmt.actions.export`'s format), peeked and sent as they come: the server
        holds a piece of the file at a time, never the entity."""
        source = queue_path(text_value(request.query_params, "path"),
                            choice_value(request.query_params, "queue", SubQueue,
                                         SubQueue.MAIN))
        entity = self._ns.entity(source)

        def pieces() -> Iterator[str]:
            out = io.StringIO()
            for message in entity.peek_all():
                write_messages((message,), out)
                if out.tell() >= _EXPORT_CHUNK:
                    yield out.getvalue()
                    out.seek(0)
                    out.truncate()
            yield out.getvalue()

        name = re.sub(r"[^A-Za-z0-9._-]+", "_", source).strip("_") + ".jsonl"
        return StreamingResponse(pieces(), media_type="application/x-ndjson",
                                 headers={"Content-Disposition": f'attachment; filename="{name}"'})

    async def import_file(self, request: Request) -> Response:
        """Send an export file's messages to a queue or topic: first the target is checked
        (a bad one is an error, nothing asked) and the file is uploaded and read through
        (every line checked), and the page says how many will be sent where (with the
        choices for a target that detects duplicates); then they are sent, as a job."""
        async with request.form() as form:  # the upload's spooled file closed at the end
            if form.get("confirmed") == "yes":
                return self._import_confirmed(
                    request, text_value(form, "upload"),
                    choice_value(form, "if_duplicate", IfDuplicate, IfDuplicate.REFUSE))
            path = text_value(form, "path")
            sent = form.get("file")
            if not isinstance(sent, UploadFile) or not sent.filename:
                return self._notice(request, "not sent: choose an export file first",
                                    error=True)
            try:
                check = await run_in_threadpool(lambda: check_target(
                    self._ns.client, path, describe=self._ns.properties))
                kept = await run_in_threadpool(_Upload.keep, sent, path)
            except ExportFormatError as error:
                return self._notice(request, f"not sent: {sent.filename}: {error}",
                                    error=True)
            except (ServiceBusManagementError, ValueError) as error:
                return self._notice(request, f"not sent: {self._ns.redacted(str(error))}",
                                    error=True)
        what = (f"Send the {counted(kept.count, 'message')} of {kept.name} to {path}, as they "
                "are in the file (each keeps its MessageId, properties and body).")
        key = self._uploads.put(kept)
        if not check.duplicate_detection:
            return self._confirm(request, "/import", what, {"upload": key})
        return self._confirm(
            request, "/import",
            f"{what} {path} detects duplicates: it drops a message whose MessageId it saw "
            "within its window, and which ids it saw cannot be read. What should be done "
            "with the messages that have one?", {"upload": key},
            ((IfDuplicate.NEW_ID.value, "Send them with a new MessageId"),
             (IfDuplicate.LEAVE.value, "Leave them out")))

    def _import_confirmed(self, request: Request, key: str, choice: IfDuplicate) -> Response:
        upload = self._uploads.take(key)
        if upload is None:
            return self._no_longer_held(request)

        def work(progress: Callable[[int], None], cancel: threading.Event) -> str:
            try:
                with open(upload.path, encoding="utf-8") as lines:
                    return import_outcome(import_messages(
                        self._ns.client, upload.entity, read_messages(lines),
                        progress=progress, cancel=cancel, if_duplicate=choice,
                        describe=self._ns.properties))
            finally:
                upload.remove()

        return self._start(request, f"import {counted(upload.count, 'message')} of {upload.name} "
                           f"into {upload.entity}", upload.count, work)

    async def deferred(self, request: Request) -> Response:
        """A page of an entity's deferred messages (found by a peek), with the forms that
        settle all of them or the ticked ones."""
        path = text_value(request.query_params, "path")
        start = number_value(request.query_params, "from", 1, minimum=1)

        def read() -> dict[str, Any]:
            return {"page": deferred_action.deferred_page(self._ns.entity(path), start,
                                                          _DEFERRED_PAGE),
                    "start": start}

        return await self._reading(request, "deferred.html", read, tab="deferred",
                                   reload=_here(request))

    async def settle_deferred(self, request: Request) -> Response:
        """Complete, abandon or dead-letter deferred messages (all, or the ticked ones), as a
        job; completing and dead-lettering ask first."""
        form = await request.form()
        if form.get("confirmed") == "yes":
            held = self._settlements.take(text_value(form, "settlement"))
            if held is None:
                return self._no_longer_held(request)
            return self._settle(request, held)
        path = text_value(form, "path")
        action = choice_value(form, "action", DeferredAction, DeferredAction.COMPLETE)
        reason = str(form.get("reason") or "").strip() or None
        numbers = selected_numbers(form)
        entity = self._ns.entity(path)

        def selection() -> tuple[list[ReceivedMessage] | None, int]:
            if numbers is None:
                return None, sum(1 for _ in deferred_action.find_deferred(entity))
            found = [m for n in sorted(numbers) for m in entity.peek_messages(n, 1)
                     if m.sequence_number == n and m.state is MessageState.DEFERRED]
            return found, len(found)

        try:
            chosen, count = await run_in_threadpool(selection)
        except ServiceBusManagementError as error:
            return self._notice(request, self._ns.redacted(error_text(error)), error=True)
        if count == 0:
            return self._notice(request, f"no {'ticked ' if numbers else ''}deferred messages "
                                f"in {path}", error=True)
        held = _Settlement(path, action, chosen, count,
                           reason if action is DeferredAction.DEAD_LETTER else None)
        if action is DeferredAction.ABANDON:
            return self._settle(request, held)
        which = "" if chosen is None else "ticked "
        doing = ("Complete (remove for good)" if action is DeferredAction.COMPLETE else
                 "Dead-letter (move to the dead-letter queue)")
        return self._confirm(
            request, "/deferred/settle",
            f"{doing} the {count} {which}deferred messages of {path}"
            f"{' (those deferred when it runs)' if chosen is None else ''}.",
            {"settlement": self._settlements.put(held)})

    def _settle(self, request: Request, held: _Settlement) -> Response:
        entity = self._ns.entity(held.path)

        def work(progress: Callable[[int], None], cancel: threading.Event) -> str:
            chosen = (held.messages if held.messages is not None
                      else deferred_action.find_deferred(entity))
            return deferred_outcome(deferred_action.settle_deferred(
                entity, chosen, held.action, dead_letter_reason=held.reason,
                progress=lambda counts: progress(counts.done), cancel=cancel))

        verb = held.action.value.replace("_", "-")
        return self._start(request, f"{verb} {held.count} deferred messages of {held.path}",
                           held.count, work)

    async def remove_rule(self, request: Request) -> Response:
        """Remove a rule (asks first)."""
        form = await request.form()
        path, name = text_value(form, "path"), text_value(form, "name")
        if form.get("confirmed") != "yes":
            return self._confirm(request, "/rules/remove",
                                 f"Remove the rule {name} of {path}: the messages it lets "
                                 "through will no longer reach the subscription.",
                                 {"path": path, "name": name})

        def work() -> str:
            self._ns.entity(path).remove_rule(name)
            return f"removed the rule {name} of {path}"

        return await self._acting(request, work)


def _filter_text(rule_filter: RuleFilter) -> str:
    """A rule's filter as one line of text."""
    if isinstance(rule_filter, SqlFilter):
        return rule_filter.expression
    if isinstance(rule_filter, CorrelationFilter):
        pairs = {**rule_filter.model_dump(exclude={"kind", "properties"}, exclude_none=True),
                 **rule_filter.properties}
        return "correlation: " + ", ".join(f"{k} = {value_text(v)}" for k, v in pairs.items())
    return rule_filter.kind.upper()


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


class _Settlement:
    """A settlement of deferred messages waiting for its confirmation: the ticked messages
    (peeked, with their session ids), or None for every deferred message of the entity."""

    def __init__(self, path: str, action: DeferredAction,
                 messages: list[ReceivedMessage] | None, count: int,
                 reason: str | None) -> None:
        self.path, self.action, self.messages = path, action, messages
        self.count, self.reason = count, reason
