"""The explorer's purge by number (:mod:`sbmgmt.actions.purge_found`): the messages ticked
in a search's list, removed exactly. The first POST plans (a peek: nothing changes) and
says what will be removed and how (the active ones are received in order, those ahead of
them locked while it runs); the confirmation carries out that plan, as a job."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._wording import counted
from ..actions.contract import CancelToken, OnProgress
from ..actions.purge_found import FoundPurgePlan, plan_purge_found, purge_found
from ..errors import ServiceBusManagementError
from ._form_values import BadInput, choice_value, selected_numbers, text_value
from ._held import Held
from ._pages import SubQueue, queue_path
from ._site import Site

__all__ = ["routes"]


def _question(plan: FoundPurgePlan) -> str:
    said = plan.describe()
    how = (" The active ones are received in order and completed; the other messages "
           f"ahead of them in {plan.entity} are locked while it runs and given back "
           "unchanged." if plan.active else "")
    return f"{said[0].upper()}{said[1:]}.{how} This cannot be undone."


def routes(site: Site) -> list[Route]:
    """``POST /search/remove``."""
    plans: Held[FoundPurgePlan] = Held()

    async def ask(request: Request, form: FormData) -> Response:
        source = queue_path(text_value(form, "path"),
                            choice_value(form, "queue", SubQueue, SubQueue.MAIN))
        numbers = selected_numbers(form)
        if numbers is None:
            raise BadInput("tick the messages to remove")
        try:
            plan = await run_in_threadpool(plan_purge_found, site.ns.client, source, numbers)
        except ServiceBusManagementError as error:
            return site.failed(request, error)
        if not plan.count:
            return site.notice(request, f"nothing to remove: {plan.describe()}", error=True)
        return site.ask(request, "/search/remove", _question(plan), plans, plan)

    def run(request: Request, plan: FoundPurgePlan, _form: FormData) -> Response:
        def work(on_progress: OnProgress, cancel: CancelToken) -> str:
            report = purge_found(site.ns.client, plan, on_progress=on_progress, cancel=cancel)
            left = ", ".join(f"{count} {name.replace('_', ' ')}"
                             for name, count in report.counts().items()
                             if count and name != "removed")
            return (f"removed {counted(len(report.removed), 'message')} from {plan.entity}"
                    + (f" ({left})" if left else ""))

        return site.start(request, f"remove {counted(plan.count, 'message')} of "
                          f"{plan.entity}", plan.count, work)

    async def remove(request: Request) -> Response:
        """Remove the ticked messages of a search: plan and ask, then remove them."""
        return await site.confirmed(request, plans, lambda form: ask(request, form),
                                    lambda held, form: run(request, held, form))

    return [Route("/search/remove", remove, methods=["POST"])]
