"""The explorer's resubmit and move (:mod:`sbmgmt.actions.repair`): all of a (sub-)queue's
messages or the ticked ones. The first POST plans (a peek, each target checked: a bad one
is an error, nothing asked) and says how many go from where to where, and which copies a
target's duplicate detection may drop (then the choices are what to do with them); the
confirmation carries out that plan, as a job."""

from __future__ import annotations

from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .._wording import counted
from ..actions import repair as repair_action
from ..actions.contract import CancelToken, OnProgress
from ..actions.repair import RepairPlan, Selection
from ..actions.targets import IfDuplicate
from ..errors import ServiceBusManagementError
from ..message import id_text
from ._form_values import BadInput, choice_value, selected_numbers, text_value
from ._held import Held
from ._outcomes import repair_outcome
from ._pages import SubQueue, queue_path
from ._site import Site

__all__ = ["routes"]

#: The repairs, each with what its outcome says it did.
_REPAIRED = {"resubmit": "resubmitted", "move": "moved"}


def _question(mode: str, source: str, plan: RepairPlan, ticked: bool) -> str:
    """What the run will do, in words."""
    which = "ticked " if ticked else ""
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
    return (f"{mode.capitalize()} the {counted(len(plan.items), which + 'message')} of "
            f"{source}{missing}: {where}. Each is sent to its target and removed from "
            f"{source}, a batch at a time in a transaction (both or neither); the copies "
            f"keep their MessageId and lose the dead-letter reason and description.{locked}"
            f"{unread}")


def routes(site: Site) -> list[Route]:
    """``POST /repair``."""
    plans: Held[tuple[str, RepairPlan]] = Held()

    async def ask(request: Request, form: FormData) -> Response:
        source = queue_path(text_value(form, "path"),
                            choice_value(form, "queue", SubQueue, SubQueue.MAIN))
        mode = text_value(form, "mode")
        if mode not in _REPAIRED:
            raise BadInput(f"mode must be one of {', '.join(_REPAIRED)}")
        target = "" if mode == "resubmit" else text_value(form, "target")
        numbers = selected_numbers(form)
        selection = Selection(sequence_numbers=numbers)

        def planned() -> RepairPlan:
            if mode == "resubmit":
                return repair_action.plan_resubmit(site.ns.client, source, selection,
                                                   describe=site.ns.properties)
            return repair_action.plan_move(site.ns.client, source, target, selection,
                                           describe=site.ns.properties)

        try:
            plan = await run_in_threadpool(planned)
        except (ServiceBusManagementError, ValueError) as error:
            return site.failed(request, error)
        if not plan.items:
            return site.notice(request, f"nothing to {mode}: no "
                               f"{'ticked ' if numbers else ''}messages in {source}",
                               error=True)
        what = _question(mode, source, plan, bool(numbers))
        if not plan.at_risk:
            return site.ask(request, "/repair", what, plans, (mode, plan))
        risky = [id_text(item.message_id) for item in plan.items
                 if item.sequence_number in plan.at_risk and item.message_id is not None]
        shown = ", ".join(risky[:10]) + (f" and {len(risky) - 10} more" if len(risky) > 10
                                         else "")
        return site.ask(
            request, "/repair",
            f"{what} The target detects duplicates: it would drop "
            f"{counted(len(risky), 'copy', 'copies')} that keep their MessageId ({shown}), "
            "and the originals would be gone. What should be done with them?",
            plans, (mode, plan),
            ((IfDuplicate.NEW_ID.value, "Send them with a new MessageId"),
             (IfDuplicate.LEAVE.value, "Leave them where they are")))

    def run(request: Request, held: tuple[str, RepairPlan], form: FormData) -> Response:
        mode, plan = held
        choice = choice_value(form, "if_duplicate", IfDuplicate, IfDuplicate.REFUSE)

        def work(on_progress: OnProgress, cancel: CancelToken) -> str:
            report = repair_action.repair(site.ns.client, plan, if_duplicate=choice,
                                          on_progress=on_progress, cancel=cancel)
            stopped = "" if report.error is None else f"; stopped: {report.error}"
            return repair_outcome(_REPAIRED[mode], report) + stopped

        return site.start(request, f"{mode} {counted(len(plan.items), 'message')} of "
                          f"{plan.source} to {', '.join(plan.targets)}", len(plan.items), work)

    async def repair(request: Request) -> Response:
        """Resubmit dead letters to where they came from, or move messages to another
        entity: plan and ask, then carry out the plan as a job."""
        return await site.confirmed(request, plans, lambda form: ask(request, form),
                                    lambda held, form: run(request, held, form))

    return [Route("/repair", repair, methods=["POST"])]
