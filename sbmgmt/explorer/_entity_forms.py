"""The explorer's entity management: create, edit and delete queues, topics, subscriptions
and rules, each confirmed, on :mod:`sbmgmt.actions.topology` (the actions of
``sbmgmt entities create | update | delete`` and ``sbmgmt topology apply``).

Theory of operation. A form (``GET /entities/new``: a new entity; an entity's ``edit``
tab: its properties, and a subscription's rules) has one field per property of the
entity's kind (the table of :mod:`sbmgmt.actions.topology`, so every property the
administration API has; an authorization rule's keys never reach a page). Its POST reads
the namespace and makes the plan (what would change, a delete with the messages its entity
holds), holds it under a random key (:class:`~._held.Held`) and answers with the question
(``_confirm.html``); the question's "Yes" posts the key to ``/entities/apply``, which
applies exactly the plan it asked about (once; an older plan than the 20 last is no
longer held) and answers what was done. A plan the service would refuse (a session
choice changed) or one with nothing to change answers so at once, without a question.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._wording import counted
from ..actions import topology
from ..actions.entities import EntityKind
from ..errors import ServiceBusManagementError
from ._form_values import BadInput, error_text, text_value
from ._held import Held
from ._namespace import Namespace

__all__ = ["entity_form_routes"]

Render = Callable[..., Response]
_PAST = {topology.ChangeKind.CREATE: "created", topology.ChangeKind.UPDATE: "updated",
         topology.ChangeKind.DELETE: "deleted"}
#: A correlation filter's fields, as the form and the file name them.
CORRELATION_FIELDS = ("CorrelationId", "MessageId", "To", "ReplyTo", "Label", "SessionId",
                      "ReplyToSessionId", "ContentType")


def _kind(text: str) -> EntityKind:
    try:
        return EntityKind(text)
    except ValueError:
        raise BadInput(f"kind: queue, topic or subscription, not {text[:40]!r}") from None


def _inputs(kind: EntityKind, values: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The form's fields of ``kind``: each property (not the authorization rules, whose
    keys stay in the namespace) with its input and value (None: a new entity's default)."""
    shown = []
    for field in topology.fields_of(kind):
        if field.form is topology.Form.AUTHORIZATION:
            continue
        value = None if values is None else values[field.key]
        shown.append({"key": field.key, "form": field.form.value, "default": field.default,
                      "value": "" if value is None else value, "fixed": not field.mutable,
                      "statuses": topology.STATUSES})
    return shown


def _values(form: Mapping[str, Any], kind: EntityKind) -> dict[str, Any]:
    """The properties a form gives, by key (an empty field: the service's default; a whole
    number as a number, true / false as booleans: the checks say what is wrong)."""
    values: dict[str, Any] = {}
    for field in topology.fields_of(kind):
        if field.key not in form or field.form is topology.Form.AUTHORIZATION:
            continue
        text = str(form[field.key]).strip()
        if not text:
            values[field.key] = field.default
        elif field.form is topology.Form.BOOL:
            values[field.key] = text == "true"
        elif field.form is topology.Form.INT and text.lstrip("-").isdigit():
            values[field.key] = int(text)
        else:
            values[field.key] = text
    return values


def _rule_from(form: Mapping[str, Any]) -> topology.RuleSpec:
    """The rule a rule form describes (its SQL or correlation filter, its action)."""
    name = text_value(form, "name")
    if str(form.get("filter_type")) == "correlation":
        fields: dict[str, Any] = {key: str(form[key]).strip() for key in CORRELATION_FIELDS
                                  if str(form.get(key) or "").strip()}
        pairs = [line.partition("=") for line in str(form.get("properties") or "").splitlines()
                 if line.strip()]
        if any(not sep for _, sep, _ in pairs):
            raise BadInput("properties: one KEY=VALUE a line")
        if pairs:
            fields["Properties"] = {key.strip(): value.strip() for key, _, value in pairs}
        properties: dict[str, Any] = {"FilterType": "Correlation", "CorrelationFilter": fields}
    else:
        properties = {"FilterType": "Sql",
                      "SqlFilter": {"SqlExpression": text_value(form, "sql")}}
    action = str(form.get("action") or "").strip()
    if action:
        properties["Action"] = {"SqlExpression": action}
    try:
        return topology.rule_spec(name, properties)
    except topology.TopologyFileError as error:
        raise BadInput(str(error)) from None


def _question(plan: topology.Plan) -> str:
    changes = "; ".join(change.describe() for change in plan.changes)
    return f"{changes[0].upper()}{changes[1:]}?"


class _EntityForms:
    """The routes' views (see the module's docstring)."""

    def __init__(self, namespace: Namespace, page: Render, entity_page: Render) -> None:
        self._ns = namespace
        self._page = page
        self._entity_page = entity_page
        self._plans: Held[topology.Plan] = Held()

    def _notice(self, request: Request, text: str, *, error: bool = False,
                changed: bool = False) -> Response:
        headers = {"HX-Trigger": "changed"} if changed else None
        return self._page(request, "_notice.html", headers=headers, text=text, error=error)

    async def _planned(self, request: Request, make: Callable[[], topology.Plan]) -> Response:
        """Make the plan (on a worker thread) and ask about it; a refusal or nothing to
        change said at once."""
        try:
            plan = await run_in_threadpool(make)
        except (ServiceBusManagementError, ValueError) as error:
            return self._notice(request, f"not changed: {self._ns.redacted(error_text(error))}",
                                error=True)
        if plan.refused:
            return self._notice(request, "not changed: " + "; ".join(plan.refused), error=True)
        if not plan.changes:
            return self._notice(request, "nothing to change")
        key = self._plans.put(plan)
        return self._page(request, "_confirm.html", action="/entities/apply",
                          what=_question(plan), fields={"key": key}, choices=())

    async def apply(self, request: Request) -> Response:
        """Apply the plan a question was about (its key), once."""
        form = await request.form()
        plan = self._plans.take(text_value(form, "key"))
        if plan is None:
            return self._notice(request, "that question is no longer held: ask again",
                                error=True)
        report = await run_in_threadpool(topology.apply_plan, self._ns.admin, plan)
        done = "; ".join(f"{_PAST[c.action]} {c.kind} {c.path}"
                         + (f" (it held {counted(c.messages, 'message')})" if c.messages else "")
                         for c in report.done) or "nothing done"
        if report.error is not None:
            failed = report.failed.describe() if report.failed is not None else "a change"
            return self._notice(request, self._ns.redacted(
                f"{done}; then {failed} failed: {error_text(report.error)}"), error=True,
                changed=bool(report.done))
        return self._notice(request, done, changed=True)

    async def new_form(self, request: Request) -> Response:
        """The form of a new queue, topic or subscription."""
        kind = _kind(request.query_params.get("kind", "queue"))
        return self._page(request, "entity_new.html", kind=kind.value,
                          kinds=[k.value for k in EntityKind],
                          topic=request.query_params.get("topic", ""),
                          inputs=_inputs(kind, None))

    async def create(self, request: Request) -> Response:
        """Ask about creating the entity the form describes."""
        form = await request.form()
        kind = _kind(text_value(form, "kind"))
        name = text_value(form, "name")
        if kind is EntityKind.SUBSCRIPTION:
            name = f"{text_value(form, 'topic')}/Subscriptions/{name}"
        values = _values(form, kind)
        return await self._planned(request, lambda: topology.create_plan(
            self._ns.admin, kind, name, values))

    async def edit_form(self, request: Request) -> Response:
        """An entity's edit tab: its properties, and a subscription's rules."""
        path = text_value(request.query_params, "path")
        try:
            now = await run_in_threadpool(topology.current_entity, self._ns.admin, path)
        except ServiceBusManagementError as error:
            return self._entity_page(request, "entity_edit.html", "edit",
                                     failure=self._ns.redacted(error_text(error)))
        rules = [{"name": rule.name, "text": _rule_text(rule)} for rule in now.rules or ()]
        return self._entity_page(request, "entity_edit.html", "edit",
                                 inputs=_inputs(now.kind, now.properties), rules=rules,
                                 correlation_fields=CORRELATION_FIELDS)

    async def update(self, request: Request) -> Response:
        """Ask about changing the entity's properties as the form gives them."""
        form = await request.form()
        path = text_value(form, "path")
        kind = _kind(text_value(form, "kind"))
        return await self._planned(request, lambda: topology.update_plan(
            self._ns.admin, path, _values(form, kind)))

    async def delete(self, request: Request) -> Response:
        """Ask about deleting the entity (with the messages it holds)."""
        form = await request.form()
        path = text_value(form, "path")
        return await self._planned(request, lambda: topology.delete_plan(self._ns.admin, path))

    async def rule(self, request: Request) -> Response:
        """Ask about adding or changing a subscription's rule."""
        form = await request.form()
        path, rule = text_value(form, "path"), _rule_from(form)
        return await self._planned(request, lambda: topology.rule_plan(
            self._ns.admin, path, rule.name, rule))

    async def delete_rule(self, request: Request) -> Response:
        """Ask about deleting a subscription's rule."""
        form = await request.form()
        path, name = text_value(form, "path"), text_value(form, "name")
        return await self._planned(request, lambda: topology.rule_plan(
            self._ns.admin, path, name, None))


def _rule_text(rule: topology.RuleSpec) -> str:
    """A rule's filter and action in a line."""
    properties = rule.properties
    if properties["FilterType"] == "Sql":
        text = properties["SqlFilter"]["SqlExpression"]
    else:
        text = ", ".join(f"{key} = {value}"
                         for key, value in properties["CorrelationFilter"].items())
    action = properties.get("Action")
    return text if action is None else f"{text}; action: {action['SqlExpression']}"


def entity_form_routes(namespace: Namespace, page: Render, entity_page: Render) -> list[Route]:
    """The entity management's routes, rendered by the explorer's own page functions.

    Args:
        namespace: What is changed (its administration client).
        page: Renders a template as a page (the explorer's ``_page``).
        entity_page: Renders an entity's tab (the explorer's ``_entity_page``).

    Returns:
        The routes to mount.
    """
    views = _EntityForms(namespace, page, entity_page)
    return [
        Route("/entities/new", views.new_form),
        Route("/entities/new", views.create, methods=["POST"]),
        Route("/entities/apply", views.apply, methods=["POST"]),
        Route("/entity/edit", views.edit_form),
        Route("/entity/edit", views.update, methods=["POST"]),
        Route("/entity/delete", views.delete, methods=["POST"]),
        Route("/entity/rule", views.rule, methods=["POST"]),
        Route("/entity/rule/delete", views.delete_rule, methods=["POST"]),
    ]
