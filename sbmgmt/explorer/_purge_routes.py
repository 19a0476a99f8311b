"""The explorer's purge (:mod:`sbmgmt.actions.purge`): a (sub-)queue's messages deleted with
batch deletes. The first POST counts what it would delete (the plan: the messages
enqueued before that moment) and asks; the confirmation deletes what was counted, as a
job."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._wording import counted, utc_time
from ..actions import purge as purge_action
from ..actions.contract import CancelToken, OnProgress
from ..actions.purge import PurgePlan
from ..errors import ServiceBusManagementError
from ._form_values import choice_value, text_value
from ._held import Held
from ._outcomes import purge_outcome
from ._pages import SubQueue, queue_path
from ._site import Site

__all__ = ["routes"]


def routes(site: Site) -> list[Route]:
    """``POST /purge``."""
    plans: Held[PurgePlan] = Held()

    async def ask(request: Request, form: FormData) -> Response:
        target = queue_path(text_value(form, "path"),
                            choice_value(form, "queue", SubQueue, SubQueue.MAIN))
        entity = site.ns.entity(target)
        try:
            job = await run_in_threadpool(lambda: purge_action.plan(entity))
        except ServiceBusManagementError as error:
            return site.failed(request, error)
        return site.ask(
            request, "/purge",
            f"Delete the {counted(job.eligible, 'message')} of {target} enqueued before "
            f"{utc_time(job.before)} UTC. Messages that arrive from now on stay; a locked "
            "message stays. This cannot be undone.", plans, job)

    def run(request: Request, planned: PurgePlan) -> Response:
        entity = site.ns.entity(planned.entity)

        def work(on_progress: OnProgress, cancel: CancelToken) -> str:
            # the action speaks the contract: its Progress and CancelToken pass straight on
            return purge_outcome(purge_action.purge(entity, planned, on_progress=on_progress,
                                                    cancel=cancel))

        return site.start(request, f"purge {planned.entity}: "
                          f"{counted(planned.eligible, 'message')}", planned.eligible, work)

    async def purge(request: Request) -> Response:
        """Purge a (sub-)queue: count and ask, then delete what was counted, as a job."""
        return await site.confirmed(request, plans, lambda form: ask(request, form),
                                    lambda planned, _form: run(request, planned))

    return [Route("/purge", purge, methods=["POST"])]
