"""Long actions (purge, resubmit, move...) run on a thread of their own, watched by the page.

Theory of operation. A POST that starts a long action answers at once with the job's
fragment; the action runs on a daemon thread (:meth:`Jobs.start`), telling its
:class:`~sbmgmt.actions.contract.Progress` records to :meth:`Job.told` (the one adapter
from an action's progress to the page: done, total, counts by outcome) and checking the
job's :class:`~sbmgmt.actions.contract.CancelToken`. The fragment polls ``GET /job?id=``
every half second while the job runs (htmx), showing the count and a Cancel button
(``POST /job/cancel``: cancels the token; the action stops at its next step and reports
what it did). Once the job ends, its fragment holds the action's own words for what was
done and stops polling.

A job is kept until :data:`KEPT` newer ones have started (a finished one only says what
was done); nothing of the messages is kept, only counts and the outcome's text.
"""

from __future__ import annotations

import dataclasses
import itertools
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping

from .._wording import tally
from ..actions.contract import CancelToken, OnProgress, Progress

__all__ = ["KEPT", "Job", "Jobs", "Work"]

#: The most jobs remembered (running ones are never forgotten).
KEPT = 50

#: A long action: given the ``on_progress`` and ``cancel`` to pass on, it does its work and
#: returns what it did, in words.
Work = Callable[[OnProgress, CancelToken], str]


@dataclasses.dataclass
class Job:
    """One long action: what it is, how far it got, and how it ended.

    Attributes:
        id: Its id in the page's requests.
        title: What it does (``purge 1,204 messages of orders``).
        total: How many it expects to handle, if known.
        done: How many the action has done (its last progress record).
        counts: Those by outcome, in the action's words (its last progress record).
        outcome: What it did, once it ended (None while it runs).
        failed: Whether it ended with an error.
        cancel: Cancelled to ask it to stop.
    """

    id: str
    title: str
    total: int | None
    done: int = 0
    counts: Mapping[str, int] = dataclasses.field(default_factory=dict)
    outcome: str | None = None
    failed: bool = False
    cancel: CancelToken = dataclasses.field(default_factory=CancelToken)

    @property
    def running(self) -> bool:
        """Whether it has not ended yet."""
        return self.outcome is None

    @property
    def stopping(self) -> bool:
        """Whether Cancel was pressed while it still runs."""
        return self.running and self.cancel.cancelled

    @property
    def tally(self) -> str:
        """The counts by outcome as the page shows them: ``moved 90 · failed 2``."""
        return tally(self.counts)

    def told(self, progress: Progress) -> None:
        """The action's ``on_progress``: the page shows the last record."""
        self.done, self.counts = progress.done, progress.counts
        if progress.total is not None:
            self.total = progress.total


class Jobs:
    """The explorer's long actions, by id."""

    def __init__(self) -> None:
        self._jobs: OrderedDict[str, Job] = OrderedDict()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, title: str, total: int | None, work: Work,
              describe_error: Callable[[Exception], str]) -> Job:
        """Start ``work`` on a thread of its own.

        Args:
            title: What it does.
            total: How many it expects to handle, if known.
            work: The action (see :data:`Work`).
            describe_error: The text of an error it raises (redacted).

        Returns:
            The job, running.
        """
        with self._lock:
            job = Job(id=str(next(self._ids)), title=title, total=total)
            self._jobs[job.id] = job
            for old in [j for j in self._jobs.values() if not j.running][:-KEPT]:
                del self._jobs[old.id]

        def run() -> None:
            try:
                job.outcome = work(job.told, job.cancel)
            except Exception as error:  # the job's page says what stopped it
                job.failed = True
                job.outcome = describe_error(error)

        threading.Thread(target=run, name=f"sbmgmt-explorer-job-{job.id}", daemon=True).start()
        return job

    def get(self, job_id: str) -> Job | None:
        """The job with this id, if it is remembered."""
        with self._lock:
            return self._jobs.get(job_id)
