"""What every router of the explorer shares: rendering a page or a fragment, a notice, the
one confirm-then-run mechanism, and starting a long action as a job.

Each area of the explorer is a small router module (``_browse.py``, ``_edits.py``,
``_job_pages.py``, one module per long action: ``_purge_routes.py``, ``_repair_routes.py``,
``_transfer_routes.py``, ``_deferred_routes.py``; ``_search.py``, ``_entity_forms.py``,
``_charts.py``) whose ``routes(site)`` lists its routes over one :class:`Site`.

Confirm then run. A destructive long action answers its first request with what it will
do (:meth:`Site.ask`): the value the second click must act on (a purge's plan, a repair's
plan, an uploaded file, a settlement) is held on the server (:class:`~._held.Held`) under
a random key that the question's form carries back. :meth:`Site.confirmed` reads the
answer: the first request goes to the action's ``ask``, the confirmation takes the held
value (once) and goes to its ``run``, and a confirmation whose value is no longer held
says so. Small edits that ask first (cancel a scheduled message, clear a session's state,
remove a rule) carry their few fields in the question instead (:meth:`Site.confirm`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.templating import Jinja2Templates

from ..actions.entities import EntityKind
from ..errors import ServiceBusManagementError
from ._form_values import error_text, kind_value, text_value
from ._held import Held
from ._jobs import Job, Jobs, Work
from ._namespace import Namespace

__all__ = ["Choices", "Site", "here"]

_T = TypeVar("_T")

Choices = tuple[tuple[str, str], ...]
"""The answers of a question that has a choice to make: an ``if_duplicate`` value and its
button's words (none: one "Yes")."""


def here(request: Request) -> str:
    """The address of this page, without the host: what a list re-reads after an action."""
    return f"{request.url.path}?{request.url.query}" if request.url.query else request.url.path


class Site:
    """The explorer over one namespace: its templates, its jobs, its rendering helpers."""

    def __init__(self, namespace: Namespace, templates: Jinja2Templates,
                 refresh_seconds: float) -> None:
        self.ns = namespace
        self.refresh = refresh_seconds
        self.jobs = Jobs()
        self._templates = templates

    # --- rendering -------------------------------------------------------------------

    def page(self, request: Request, name: str, status: int = 200,
             headers: Mapping[str, str] | None = None, **context: Any) -> Response:
        """Render template ``name`` (the namespace's label and the refresh added)."""
        context.setdefault("namespace", self.ns.label)
        context.setdefault("refresh", self.refresh)
        return self._templates.TemplateResponse(request, name, context, status_code=status,
                                                headers=headers)

    def entity_page(self, request: Request, name: str, tab: str, **context: Any) -> Response:
        """An entity's page (its header and tabs) on ``tab``."""
        path = text_value(request.query_params, "path")
        kind = kind_value(request.query_params, path)
        return self.page(request, name, path=path, kind=kind.value, tab=tab,
                         q=urlencode({"path": path, "kind": kind.value}),
                         has_messages=kind is not EntityKind.TOPIC,
                         has_rules=kind is EntityKind.SUBSCRIPTION, **context)

    def notice(self, request: Request, text: str, *, error: bool = False,
               changed: bool = False) -> Response:
        """A form's outcome; ``changed`` makes the page's lists reload themselves."""
        headers = {"HX-Trigger": "changed"} if changed else None
        return self.page(request, "_notice.html", headers=headers, text=text, error=error)

    def failed(self, request: Request, error: Exception) -> Response:
        """An error as a form's outcome, its text redacted."""
        return self.notice(request, self.ns.redacted(error_text(error)), error=True)

    async def acting(self, request: Request, work: Callable[[], str]) -> Response:
        """Run ``work`` (blocking: on a worker thread); its text, or its error, as a notice."""
        try:
            done = await run_in_threadpool(work)
        except (ServiceBusManagementError, ValueError) as error:
            return self.failed(request, error)
        return self.notice(request, done, changed=True)

    async def bad_input(self, request: Request, error: Exception) -> Response:
        """A value the explorer cannot take: 400 with the fault; to a form's request
        (htmx, which swaps only a 2xx answer in) the fault as the form's outcome."""
        if request.headers.get("HX-Request") == "true":
            return self.notice(request, f"not sent: {error}", error=True)
        return self.page(request, "error.html", status=400, text=str(error))

    async def reading(self, request: Request, name: str, read: Callable[[], dict[str, Any]],
                      tab: str = "", **extra: Any) -> Response:
        """A page whose content ``read`` gets (on a worker thread); a failed read is the
        page's error, with the entity's header and tabs kept."""
        try:
            context = {**extra, **await run_in_threadpool(read)}
        except ServiceBusManagementError as error:
            context = {**extra, "failure": self.ns.redacted(error_text(error))}
        if tab:
            return self.entity_page(request, name, tab, **context)
        return self.page(request, name, **context)

    # --- asking first ------------------------------------------------------------------

    def confirm(self, request: Request, action: str, what: str, fields: dict[str, str],
                choices: Choices = ()) -> Response:
        """The question before a change: ``fields`` go back with the answer; ``choices``
        replace the one "Yes" when there is a choice to make."""
        return self.page(request, "_confirm.html", action=action, what=what, fields=fields,
                         choices=choices)

    def ask(self, request: Request, action: str, what: str, held: Held[_T], value: _T,
            choices: Choices = ()) -> Response:
        """The question before a long action: ``value`` (what the answer acts on) is held
        on the server, its key goes back with the answer."""
        return self.confirm(request, action, what, {"held": held.put(value)}, choices)

    async def confirmed(self, request: Request, held: Held[_T],
                        ask: Callable[[FormData], Awaitable[Response]],
                        run: Callable[[_T, FormData], Response]) -> Response:
        """A long action's POST: the first one goes to ``ask`` (which plans and calls
        :meth:`ask`), the confirmation runs the held value (once)."""
        async with request.form() as form:  # an upload's spooled file closed at the end
            if form.get("confirmed") != "yes":
                return await ask(form)
            value = held.take(text_value(form, "held"))
            if value is None:
                return self.notice(request, "this confirmation is no longer held (too many "
                                   "others since, or already done): ask again", error=True)
            return run(value, form)

    # --- long actions ------------------------------------------------------------------

    def job_page(self, request: Request, job: Job) -> Response:
        """A job's fragment (once it ended, the page's lists reload themselves)."""
        headers = None if job.running else {"HX-Trigger": "changed"}
        return self.page(request, "_job.html", headers=headers, job=job)

    def start(self, request: Request, title: str, total: int | None, work: Work) -> Response:
        """Start ``work`` as a job; its fragment, which watches it."""
        job = self.jobs.start(title, total, work,
                              lambda error: self.ns.redacted(error_text(error)))
        return self.job_page(request, job)
