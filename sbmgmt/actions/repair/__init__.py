"""Resubmit and move: take messages out of an entity (a dead-letter queue, usually) and
send them to where they came from, or to another entity, losing none and doubling none.

Theory of operation
-------------------
A repair is planned, then carried out.

*Planning* (``plan_resubmit``, ``plan_move``) peeks the source from end to end
(nothing is locked or changed) and keeps the messages the ``Selection`` picks: by
sequence number, dead-letter reason, a predicate on the message (the CLI compiles a SQL
filter expression into one), enqueued before / after a time, at most N. The plan lists
each message's sequence number, MessageId and target: the dry run prints it.

*Carrying out* (``repair``, or ``repair_async`` over the asyncio client: the same
decisions, written once in ``core.py``) opens one peek-lock receiver on the source and, for each
target, a sender. The receiver takes messages in order; a message of the plan joins a
batch, any other one is held (locked, so it is not taken again) and released when the
receiver detaches at the end (its credit drained first, so nothing released comes back).
The receiver asks for no more messages than the plan still needs (its prefetch lowered as
the plan runs out), so when the last planned one came it has no credit left to drain.
Each batch is moved in one **transaction** on the client's connection: the copies are sent
to their target (directly when it is in the source's top-level entity: ``q`` for
``q/$DeadLetterQueue``; otherwise *via* that top-level entity, send-via, which the service
forwards only on commit) and the originals are completed on the receiver, then the
transaction commits: the service applies both or neither. ``in_flight`` batches run at
once (one thread each, all pipelined on the one connection). Transactions are declared
ahead of the batches that take them (up to 8, never more than the batches still to come):
the first while the receiver and the senders attach, the next while earlier batches move;
a batch given one whose connection was lost since declares its own on the new connection,
and any that no batch took (fewer messages came than planned) is rolled back at the end.
While held, every received message's lock is kept alive by a
[LockRenewer][sbmgmt.renewer.LockRenewer].

What can go wrong, and what each leaves:

- the connection drops before the commit: the service rolls the transaction back (nothing
  sent, nothing completed); the originals stay locked by the dead link until their lock
  expires, then are available again: the next receive (or the next run) moves them;
- the commit's outcome is lost (``TransactionOutcomeUnknownError``): either both or
  neither happened; at the end the source is peeked for those sequence numbers to say which;
- without a transaction (``transactional=False``, or a namespace that refuses to declare
  one: the basic tier) a batch is sent, then completed: a drop between the two leaves the
  original in the source *and* the copy in the target. The copy keeps the original's
  ``MessageId`` (a target with duplicate detection drops the second copy), and every message
  sent again in the run after such a drop is reported as a possible duplicate.

The action returns a ``RepairReport`` (an
``sbmgmt.actions.contract.ActionReport``): moved, failed (and why), not found,
possible duplicates, its outcome (CANCELLED when ``cancel.cancel()`` stopped it: the batches
in flight finish, nothing new starts) and whether transactions were used.

The modules
-----------
``selection.py`` (what to take: ``Selection``, ``Planned``, ``RepairPlan``),
``planning.py`` (``plan_resubmit``, ``plan_move``, ``refuse_duplicates``), ``copies.py``
(``outgoing``), ``report.py`` (``RepairReport``, ``Failure``), ``run.py`` (the settings
and the state a run's batches share), ``core.py`` (every decision, as sans-I/O cores),
``links.py`` (what both drivers keep of a run, and its rules that are not waits),
``blocking.py`` and ``aio.py`` (the drivers: threads over the sync client, tasks over
the asyncio one) and ``carry_out.py`` (``repair``, ``repair_async``). Retries of an attach
go through the project's one retry policy (``sbmgmt.RetryPolicy``).
"""

from __future__ import annotations

from ..targets import DEAD_LETTER_SUFFIX
from .carry_out import repair, repair_async
from .copies import outgoing
from .planning import plan_move, plan_resubmit, refuse_duplicates
from .report import Failure, RepairReport
from .run import DEFAULT_IN_FLIGHT, TRANSACTION_MESSAGES
from .selection import Planned, RepairPlan, Selection

__all__ = [
    "DEAD_LETTER_SUFFIX",
    "DEFAULT_IN_FLIGHT",
    "TRANSACTION_MESSAGES",
    "Failure",
    "Planned",
    "RepairPlan",
    "RepairReport",
    "Selection",
    "outgoing",
    "plan_move",
    "plan_resubmit",
    "refuse_duplicates",
    "repair",
    "repair_async",
]
