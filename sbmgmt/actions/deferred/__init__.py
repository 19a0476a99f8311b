"""Deferred messages: find them, list them a page at a time, and settle a selection.

A deferred message is received only by its sequence number; a consumer that lost the number
leaves it in the entity for good. This action finds them with a whole-entity peek
(``peek_all``: pages in flight) that keeps the messages whose ``x-opt-message-state`` is
deferred, and settles a selection of them: each batch of sequence numbers is locked with
receive-by-sequence-number, then completed, abandoned (back to deferred) or dead-lettered
with update-disposition, several batches in flight. What it finds can be written in the
export format ([export_deferred][sbmgmt.actions.deferred.export_deferred], through the one
export loop, ``sbmgmt.actions.export.Exporter``); numbers a person chose become the messages
to settle one way ([select_deferred][sbmgmt.actions.deferred.select_deferred], for the CLI
and the explorer alike).

Theory of operation
-------------------
*Finding* reads the entity once, in sequence-number order; what ``peek_all`` promises
holds here: every message that is deferred for the whole read is found once, one
deferred (or settled) while the read runs may or may not be. Nothing is changed by it.

*Settling* groups the selection by session, cuts each group into batches of ``batch_size``
numbers and runs a batch as a small sans-I/O coroutine: it yields the requests to make
(receive these numbers, settle these lock tokens) and is sent back each reply or error, so
that the blocking driver ([settle_deferred][sbmgmt.actions.deferred.settle_deferred],
batches on a thread pool of ``in_flight`` threads over the sync client, which pipelines them
on its one connection) and the asyncio driver
([settle_deferred_async][sbmgmt.actions.deferred.settle_deferred_async], ``in_flight``
tasks) share every decision. The settlement's order of work is another such generator (the
probe below, the batches on the entity, each session's lock taken, its batches, its lock
released); both generators run under the contract's ``drive`` or ``drive_async``
(``sbmgmt.actions.contract``), which only make the calls each step asks for. What they
decide:

- receive-by-sequence-number fails as a whole when one of its numbers is not a
  deferred message any more (settled, expired, or locked by another receiver: the
  service's ``com.microsoft:message-not-found``); the batch is then halved and each
  half asked again, down to single numbers, so every number ends in exactly one of
  ``settled``, ``not_found`` or ``failed``, counted by sequence number;
- any other refusal or a lost reply fails the batch's numbers with the error's text
  (a receive whose reply was lost may have locked them: the locks expire and the
  messages are deferred again; a settlement whose reply was lost may or may not have
  been applied: ``failed`` says so);
- cancellation (``cancel``, a ``CancelToken``) is checked
  before each batch starts: batches in flight finish, the others are counted in
  ``not_attempted`` and the report's outcome is CANCELLED; progress
  (``Progress``) is told after each batch.

A batch's message locks are held for one round trip (received, then settled at once),
far inside any lock duration; what is held long is a session's lock (below), which a
lock renewer keeps alive.

On a session entity a session's deferred messages are locked only by the holder of the
session's lock (the service answers session-lock-lost otherwise). The selection's
messages carry their session id; when the entity is not known to require sessions the
first batch of a session's messages is tried without the lock, and a session-lock-lost
answer switches the whole run to sessions. Each session is then locked with the
client's own session lock (``q.session(id)``) for the time its batches take, kept alive
by a lock renewer, and released before the next session.

The package's private modules: finding (pages, the choice by number, the export), the
settlement's sans-I/O core and its report, and its blocking and asyncio drivers.
"""

from ._core import DEFAULT_BATCH_SIZE, DEFAULT_IN_FLIGHT, DeferredAction, DeferredReport, Selection
from ._finding import (
    DeferredPage,
    DeferredSelection,
    deferred_page,
    deferred_page_async,
    export_deferred,
    export_deferred_async,
    find_deferred,
    find_deferred_async,
    select_deferred,
)
from ._settle import settle_deferred, settle_deferred_async

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "DEFAULT_IN_FLIGHT",
    "DeferredAction",
    "DeferredPage",
    "DeferredReport",
    "DeferredSelection",
    "Selection",
    "deferred_page",
    "deferred_page_async",
    "export_deferred",
    "export_deferred_async",
    "find_deferred",
    "find_deferred_async",
    "select_deferred",
    "settle_deferred",
    "settle_deferred_async",
]
