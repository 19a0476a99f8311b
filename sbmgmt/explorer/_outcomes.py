"""What a long action did, in words: each report of an action as the job's last line.

Counted, never estimated: every number is the action's own report (the CLI says the same
things in its own words).
"""

from __future__ import annotations

from .._wording import counted
from ..actions.contract import Outcome
from ..actions.deferred import DeferredReport
from ..actions.import_file import ImportReport
from ..actions.purge import PurgeReport
from ..actions.repair import RepairReport

__all__ = ["deferred_outcome", "import_outcome", "purge_outcome", "repair_outcome"]


def _joined(text: str, parts: list[str]) -> str:
    return "; ".join([text, *parts])


def purge_outcome(report: PurgeReport) -> str:
    """What a purge did."""
    text = f"deleted {counted(report.deleted, 'message')} of {report.entity}"
    if report.outcome is Outcome.CANCELLED:
        return f"{text}: cancelled, nothing sent after it"
    if report.outcome is Outcome.FAILED:
        return (f"{text}, then it failed: {report.error} ({report.uncertain_requests} requests "
                "had an unknown outcome)")
    return text


def repair_outcome(verb: str, report: RepairReport) -> str:
    """What a resubmit or a move did (``verb``: ``resubmitted`` or ``moved``)."""
    parts: list[str] = []
    if report.failed:
        parts.append(f"{len(report.failed)} failed, still in {report.source} "
                     f"(first: {report.failed[0].reason})")
    if report.not_found:
        parts.append(f"{len(report.not_found)} not found (removed meanwhile, or locked by "
                     "another receiver)")
    if report.duplicates:
        parts.append(f"{len(report.duplicates)} may have been sent twice (no transaction)")
    if report.left:
        parts.append(f"left {len(report.left)} in {report.source} (the target detects "
                     "duplicates)")
    if report.new_message_ids:
        parts.append(f"{len(report.new_message_ids)} sent with a new MessageId (the old one "
                     "in OriginalMessageId)")
    if report.maybe_dropped:
        parts.append(f"{len(report.maybe_dropped)} sent with a MessageId the target may have "
                     "seen: the service may have dropped them")
    if report.cancelled:
        parts.append("cancelled")
    return _joined(f"{verb} {len(report.moved)} of {counted(report.planned, 'message')} of "
                   f"{report.source}", parts)


def import_outcome(report: ImportReport) -> str:
    """What an import did."""
    parts: list[str] = []
    if report.failed:
        parts.append(f"{len(report.failed)} failed (first: {report.failed[0].reason})")
    if report.left:
        parts.append(f"{len(report.left)} left out (the target detects duplicates)")
    if report.new_message_ids:
        parts.append(f"{len(report.new_message_ids)} with a new MessageId (the old one in "
                     "OriginalMessageId)")
    if report.cancelled:
        parts.append("cancelled, the rest of the file not sent")
    return _joined(f"sent {counted(report.sent, 'message')} to {report.entity}", parts)


def deferred_outcome(report: DeferredReport) -> str:
    """What a settlement of deferred messages did."""
    parts: list[str] = []
    if report.not_found:
        parts.append(f"{len(report.not_found)} no longer deferred")
    if report.failed:
        first = next(iter(report.failed.values()))
        parts.append(f"{len(report.failed)} failed (first: {first})")
    if report.cancelled:
        parts.append(f"cancelled, {len(report.not_attempted)} not attempted")
    return _joined(f"{report.action.past_tense} {len(report.settled)} of {report.total} "
                   f"deferred messages of {report.entity}", parts)
