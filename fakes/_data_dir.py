"""A data directory: the namespace kept in SQLite, so the fake keeps what it was told.

Theory of operation
-------------------
``FakeNamespace(data_dir=...)`` (``python -m fakes --data-dir``) opens :class:`DataDir`:
it takes the directory's lock file (``fcntl.flock``, the holder's pid written in it: a
second fake on the directory is refused with that pid), opens ``namespace.sqlite3`` (WAL;
16 KB pages; :data:`SYNC_MODES`: ``synchronous=NORMAL`` by default, a commit written to
the WAL file, so it survives the fake's crash or kill, ``FULL`` on request, a sync a
commit, so it survives a power cut too), refuses a file of another format version or one
it cannot read (its path in the error, and nothing of it loaded), and reads the namespace
back into the store: every entity with its settings, rules and properties, every message
in the state it was written in with its exact bytes, each entity's next sequence number,
its sessions' states and its duplicate-detection history.

A message's row holds what the entity reads of every message in columns (state, delivery
count, deferred, expiry, session id, enqueued time), its bytes, and their CRC-32; its key
is its entity's row id and its sequence number in one integer, so the table is in the
order a restart reads it. Reading back checks each row's CRC (a damaged row refuses the
whole directory) but keeps no bytes and decodes nothing: a message read back
(:meth:`StoredMessage.kept`) reads its row again (:meth:`DataDir.message_bytes`, the CRC
checked again) and decodes it at its first delivery, peek or change; until then a change
of its state updates its row's columns only. The entity takes the rows in sequence order
(:meth:`~fakes._entity.Entity.restore`), and no garbage collection runs meanwhile
(:func:`_collector_paused`). A restart with a million 1 KB messages took 42 s, decoding
each one as it was read; bench/data_dir.py has the figures now. A message read back is
read from the file, so after :meth:`close` (the namespace stopped) one not yet decoded can
no longer be read (DataDirError); starting the namespace again reads the directory anew.

Then every entity's :class:`~fakes._journal.Journal` is this object: each change of a
message adds it to a set of dirty messages, each other change marks its entity. Nothing
is written then. :meth:`DataDir.commit` writes them all in one transaction for every
change since the last: the server calls it after each run of the events it
dispatched, before its loop writes to any socket (so a disposition, a management reply
or a message sent presettled leaves only once what it acknowledges is on disk), the
administration API after each change and before its reply, :meth:`FakeNamespace.stop`
last. A message is written as it is at the commit (sent and completed in one run: not
written at all); one in a terminal state is deleted. Entities (created, updated, deleted,
their rules) are few: at each commit a signature of them all (each one's identity, its
``updated_at`` and its properties' count; a topic's scheduled messages) is compared with
the last one written, and when it differs the entity rows are written again.

Locks do not survive a restart: a message locked when the fake stopped comes back as
its lock's expiry gives it back (:meth:`~fakes._entity.Entity.restore`). Everything runs
under the namespace lock; the SQLite connection is used from the server's thread and
the HTTP port's workers alike, always under that lock.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import os
import pickle
import sqlite3
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sbmgmt.message import Message

from ._addresses import DEAD_LETTER_SUFFIX
from ._duplicates import DuplicateDetector
from ._entity import Entity
from ._entity_rules import StoredRule
from ._entity_state import EntitySettings, SessionRecord, State, StoredMessage
from ._journal import NO_JOURNAL, Journal
from ._store import Store, Topic

__all__ = ["FORMAT_VERSION", "DataDir", "DataDirError"]

#: The format this fake writes and reads; a directory of another is refused.
FORMAT_VERSION = 2
DATABASE = "namespace.sqlite3"
LOCK_FILE = "lock"
#: What a commit waits for: SQLite's ``PRAGMA synchronous`` in WAL mode. "normal": the
#: WAL file written, synced at checkpoints only; "full": synced at each commit too.
#: sqlite.org/pragma.html#pragma_synchronous: "A transaction committed in WAL mode with
#: synchronous=NORMAL might roll back following a power loss or system crash.
#: Transactions are durable across application crashes regardless of the synchronous
#: setting or journal mode." So both outlive a kill of the fake; only "full" a power cut.
SYNC_MODES = ("normal", "full")
#: The database's page size, set when it is made.
PAGE_SIZE = 16384
#: A message's row key: its entity's row id above these bits, its sequence number in them
#: (the fake's sequence numbers count up from 1 a message: they never reach 2**40).
_SEQUENCE_BITS = 40
_SEQUENCE_MASK = (1 << _SEQUENCE_BITS) - 1

_TERMINAL = frozenset({State.DEAD_LETTERED, State.COMPLETED, State.EXPIRED, State.CANCELLED,
                       State.DELETED, State.DUPLICATE})
_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entities (
    eid INTEGER PRIMARY KEY, path TEXT NOT NULL, kind TEXT NOT NULL, record BLOB NOT NULL,
    next_sequence INTEGER NOT NULL, sessions BLOB);
CREATE TABLE IF NOT EXISTS messages (
    key INTEGER PRIMARY KEY, state TEXT NOT NULL, delivery_count INTEGER NOT NULL,
    deferred INTEGER NOT NULL, expires_at REAL, session_id TEXT, enqueued INTEGER,
    checksum INTEGER NOT NULL, content BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS duplicates (
    eid INTEGER NOT NULL, message_id TEXT NOT NULL, at REAL NOT NULL, sequence INTEGER NOT NULL,
    PRIMARY KEY (eid, message_id)) WITHOUT ROWID;
"""


class DataDirError(ValueError):
    """A data directory the fake cannot use (in use, another version, unreadable)."""


@dataclass
class _Record:
    """An entity as written (pickled in ``entities.record``): what the store needs to make
    it again and the properties it reports."""

    settings: EntitySettings | None = None
    rules: list[StoredRule] | None = None
    described: dict[str, str] = field(default_factory=dict)
    times: tuple[float, float, float] = (0.0, 0.0, 0.0)
    #: A topic's.
    duplicate_window: float | None = None
    default_ttl: float | None = None
    scheduled: list[tuple[float, int, bytes]] = field(default_factory=list)
    last_sequence: int = 0


_Owner = Entity | Topic


class DataDir(Journal):
    """The namespace's data directory: the lock, the database, what changed since the last
    commit (see the theory of operation)."""

    __slots__ = ("_db", "_dirty", "_eids", "_lock_file", "_meta", "_next_eid", "_path",
                 "_signature", "_store")

    def __init__(self, path: str | os.PathLike[str], store: Store, now: float,
                 sync: str = "normal") -> None:
        if sync not in SYNC_MODES:
            raise DataDirError(f"the data directory's sync must be one of "
                               f"{', '.join(SYNC_MODES)}, not {sync!r}")
        self._path = Path(path)
        self._store = store
        self._dirty: dict[tuple[int, int], tuple[Entity, StoredMessage]] = {}
        self._meta: dict[int, Entity] = {}
        #: Each entity or topic written, by identity: (the object, its row id).
        self._eids: dict[int, tuple[_Owner, int]] = {}
        self._next_eid = 1
        self._signature: tuple[object, ...] = ()
        self._lock_file = self._take_lock()
        try:
            self._db = self._connect(sync)
            with _collector_paused():
                self._load(now)
        except BaseException:
            self._release_lock()
            raise
        self._attach_all()
        # The first commit writes every entity (Config.json's made before the directory
        # opened are new to it).
        self._signature = ()

    # --- opening --------------------------------------------------------------------------

    def _take_lock(self) -> IO[str]:
        try:
            self._path.mkdir(parents=True, exist_ok=True)
            handle = open(self._path / LOCK_FILE, "a+", encoding="ascii")  # noqa: SIM115
        except OSError as exc:
            raise DataDirError(f"cannot use {self._path} as a data directory: "
                               f"{exc.strerror or exc}") from None
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "unknown"
            handle.close()
            raise DataDirError(f"the data directory {self._path} is in use by another fake "
                               f"(pid {holder})") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"{os.getpid()}\n")
        handle.flush()
        return handle

    def _release_lock(self) -> None:
        with contextlib.suppress(OSError):
            self._lock_file.seek(0)
            self._lock_file.truncate()
        self._lock_file.close()

    def _connect(self, sync: str) -> sqlite3.Connection:
        file = self._path / DATABASE
        new = not file.exists()
        try:
            db = sqlite3.connect(file, check_same_thread=False, isolation_level=None)
            if new:
                # 1 KB messages fill 16 KB pages to 96% (4 KB pages: 82%), and a restart
                # reads a third fewer pages' worth of work (bench/data_dir.py).
                db.execute(f"PRAGMA page_size={PAGE_SIZE}")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(f"PRAGMA synchronous={sync.upper()}")
            if new:
                db.executescript(f"BEGIN; {_SCHEMA} INSERT INTO meta VALUES "
                                 f"('format', '{FORMAT_VERSION}'); COMMIT;")
            found = db.execute("SELECT value FROM meta WHERE key = 'format'").fetchone()
        except sqlite3.Error as exc:
            raise DataDirError(f"{file} is not a data directory the fake can read: "
                               f"{exc}") from None
        if found is None or found[0] != str(FORMAT_VERSION):
            db.close()
            version = "no format version" if found is None else f"format version {found[0]}"
            raise DataDirError(f"{file} has {version}; this fake reads format version "
                               f"{FORMAT_VERSION} only (use a new directory, or the fake "
                               f"that wrote it)")
        return db

    # --- reading back ----------------------------------------------------------------------

    def _load(self, now: float) -> None:
        """Read the whole namespace back into the store, or raise and change nothing."""
        file = self._path / DATABASE
        try:
            rows = self._db.execute(
                "SELECT eid, path, kind, record, next_sequence, sessions FROM entities "
                "ORDER BY eid").fetchall()
            records = {eid: (path, kind, _unpickled(record), sequence,
                             None if sessions is None else _unpickled(sessions))
                       for eid, path, kind, record, sequence, sessions in rows}
            messages = self._read_messages()
            duplicates = self._db.execute(
                "SELECT eid, message_id, at, sequence FROM duplicates ORDER BY at").fetchall()
        except (sqlite3.Error, pickle.UnpicklingError, ValueError, TypeError, KeyError,
                AttributeError, EOFError, ImportError) as exc:
            raise DataDirError(f"{file} is damaged and was not read: {exc}") from None
        if records:
            self._rebuild(records, messages, duplicates, now)

    def _read_messages(self) -> dict[int, list[StoredMessage]]:
        """Every message, by its entity's row id, in sequence order, its bytes checked and
        left in the file (read again and decoded at its first use: :meth:`_Rows.read`);
        ValueError for a row whose bytes are not those written (their checksum differs)."""
        messages: dict[int, list[StoredMessage]] = {}
        held: list[StoredMessage] = []
        rows = _Rows(self, 0)
        states = {state.value: state for state in State}
        kept = StoredMessage.kept
        for key, state, count, deferred, expires, session_id, enqueued, checksum, raw in (
                self._db.execute("SELECT * FROM messages ORDER BY key")):
            if zlib.crc32(raw) != checksum:
                raise ValueError(f"the message row {key} is not what was written")
            eid = key >> _SEQUENCE_BITS
            if eid != rows.eid:
                held = messages.setdefault(eid, [])
                rows = _Rows(self, eid)
            held.append(kept(rows, len(raw), key & _SEQUENCE_MASK, session_id, enqueued,
                             states[state], count, deferred == 1, expires))
        return messages

    def message_bytes(self, eid: int, sequence: int) -> bytes:
        """The bytes of a message read back (its entity's row id, its sequence number),
        checked again; DataDirError if the directory is closed or the row is not there or
        not what was written."""
        key = eid << _SEQUENCE_BITS | sequence
        try:
            row = self._db.execute("SELECT checksum, content FROM messages WHERE key = ?",
                                   (key,)).fetchone()
        except sqlite3.ProgrammingError:
            raise DataDirError(f"message {sequence} was not read: the data directory "
                               f"{self._path} is closed (the namespace stopped)") from None
        if row is None or zlib.crc32(row[1]) != row[0]:
            state = "gone" if row is None else "not what was written"
            raise DataDirError(f"{self._path / DATABASE} is damaged: the row of message "
                               f"{sequence} (row {key}) is {state}")
        content: bytes = row[1]
        return content

    def _rebuild(self, records: dict[int, tuple[str, str, Any, int, Any]],
                 messages: dict[int, list[StoredMessage]],
                 duplicates: list[tuple[int, str, float, int]], now: float) -> None:
        owners: dict[int, _Owner] = {}
        order = {"topic": 0, "queue": 1, "subscription": 2, "dead-letter": 3}
        for eid in sorted(records, key=lambda eid: (order[records[eid][1]], eid)):
            path, kind, record, _, _ = records[eid]
            owners[eid] = self._make(kind, path, record)
            self._next_eid = max(self._next_eid, eid + 1)
        for eid, owner in owners.items():
            _, _, record, next_sequence, sessions = records[eid]
            if isinstance(owner, Topic):
                owner.last_sequence = record.last_sequence
                for due, sequence, content in record.scheduled:
                    owner.scheduled[sequence] = Message.from_bytes(content)
                    owner.scheduled_due.append((due, sequence))
                owner.scheduled_due.sort()
            else:
                owner.restore(messages.get(eid, []), next_sequence, now)
                for session_id, state in (sessions or {}).items():
                    owner.sessions.setdefault(session_id, SessionRecord(session_id)).state = state
            owner.created_at, owner.updated_at, owner.accessed_at = record.times
            owner.described = dict(record.described)
            self._eids[id(owner)] = (owner, eid)
        for eid, message_id, at, sequence in duplicates:
            found = owners.get(eid)
            detector = found.duplicates if found is not None else None
            if detector is not None and at + detector.window > now:
                detector.note(message_id, at, sequence)

    def _make(self, kind: str, path: str, record: _Record) -> _Owner:
        """The entity ``path`` as the store makes it (one Config.json made already is
        replaced: the directory's is the namespace as it was)."""
        store = self._store
        if kind == "dead-letter":
            return store.entity(path)
        if kind == "subscription":
            topic, _, name = path.partition("/Subscriptions/")
            if store.exists(path):
                store.remove_subscription(topic, name)
            assert record.settings is not None
            return store.add_subscription(topic, name, record.settings, record.rules)
        if store.exists(path):
            store.remove(path)
        if kind == "topic":
            return store.add_topic(path, record.duplicate_window, record.default_ttl)
        assert record.settings is not None
        return store.add_queue(path, record.settings)

    # --- the journal -------------------------------------------------------------------

    def message(self, owner: object, stored: StoredMessage) -> None:
        assert isinstance(owner, Entity)
        self._dirty[(id(owner), stored.sequence_number)] = (owner, stored)

    def changed(self, owner: object) -> None:
        assert isinstance(owner, Entity)
        self._meta[id(owner)] = owner

    def _attach_all(self) -> None:
        """Every entity's journal is this one, and its duplicate detector keeps what it notes
        for the next commit."""
        for entity in self._store.entities():
            entity.journal = self
        for detector in self._detectors():
            if detector.fresh is None:
                detector.fresh = []

    def _detectors(self) -> list[DuplicateDetector]:
        owners: list[_Owner] = [*self._store.entities(), *self._store.topics()]
        return [d for d in (o.duplicates for o in owners) if d is not None]

    # --- writing ------------------------------------------------------------------------

    def commit(self) -> None:
        """Write every change since the last commit, in one transaction (one sync)."""
        signature = self._entity_signature()
        fresh = self._owners_with_notes()
        if not self._dirty and not self._meta and signature == self._signature and not fresh:
            return
        db = self._db
        db.execute("BEGIN")
        try:
            if signature != self._signature:
                self._write_entities()
            self._write_messages()
            for entity in self._meta.values():
                if id(entity) in self._eids:
                    db.execute("UPDATE entities SET next_sequence = ?, sessions = ? "
                               "WHERE eid = ?", (entity.next_sequence, _sessions(entity),
                                                 self._eids[id(entity)][1]))
            for owner, detector in fresh:
                notes, detector.fresh = detector.fresh or [], []
                eid = self._eids.get(id(owner))
                if eid is not None:
                    db.executemany("INSERT OR REPLACE INTO duplicates VALUES (?, ?, ?, ?)",
                                   [(eid[1], *note) for note in notes])
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        self._dirty.clear()
        self._meta.clear()
        self._signature = signature

    def _owners_with_notes(self) -> list[tuple[_Owner, DuplicateDetector]]:
        owners: list[_Owner] = [*self._store.entities(), *self._store.topics()]
        return [(o, d) for o in owners
                if (d := o.duplicates) is not None and d.fresh]

    def _write_messages(self) -> None:
        upserts: list[tuple[object, ...]] = []
        updates: list[tuple[object, ...]] = []
        deletes: list[tuple[int]] = []
        eids = self._eids
        for (owner_id, sequence), (entity, stored) in self._dirty.items():
            known = eids.get(owner_id)
            if known is None:
                continue  # a new entity's: written whole with it
            key = known[1] << _SEQUENCE_BITS | sequence
            if stored.state in _TERMINAL:
                deletes.append((key,))
            elif stored.undecoded:  # its bytes are the row's: the columns change
                updates.append((stored.state.value, stored.delivery_count,
                                int(stored.deferred), stored.expires_at, key))
            else:
                upserts.append(_row(known[1], stored))
            self._meta.setdefault(owner_id, entity)
        if deletes:
            self._db.executemany("DELETE FROM messages WHERE key = ?", deletes)
        if updates:
            self._db.executemany("UPDATE messages SET state = ?, delivery_count = ?, "
                                 "deferred = ?, expires_at = ? WHERE key = ?", updates)
        if upserts:
            self._db.executemany(_UPSERT, upserts)

    def _entity_signature(self) -> tuple[object, ...]:
        store = self._store
        return (tuple((id(e), e.updated_at, len(e.described)) for e in store.entities()),
                tuple((id(t), t.updated_at, len(t.described), t.last_sequence,
                       len(t.scheduled)) for t in store.topics()))

    def _write_entities(self) -> None:
        """Write every entity's row again; drop the rows (and messages) of deleted ones;
        a new entity is written whole, its messages and duplicate history included."""
        db = self._db
        store = self._store
        owners: list[_Owner] = [*store.topics(), *store.entities()]
        current = {id(owner): owner for owner in owners}
        for owner_id, (_owner, eid) in list(self._eids.items()):
            if owner_id not in current:
                del self._eids[owner_id]
                for table in ("entities", "duplicates"):
                    db.execute(f"DELETE FROM {table} WHERE eid = ?", (eid,))
                db.execute("DELETE FROM messages WHERE key BETWEEN ? AND ?",
                           (eid << _SEQUENCE_BITS, eid << _SEQUENCE_BITS | _SEQUENCE_MASK))
        queues = {id(q) for q in store.queues()}
        for owner_id, owner in current.items():
            known = self._eids.get(owner_id)
            new = known is None
            eid = self._next_eid if known is None else known[1]
            if new:
                self._next_eid += 1
                self._eids[owner_id] = (owner, eid)
            kind, record = _describe(owner, owner_id in queues)
            sessions = None if isinstance(owner, Topic) else _sessions(owner)
            sequence = 0 if isinstance(owner, Topic) else owner.next_sequence
            db.execute("INSERT OR REPLACE INTO entities VALUES (?, ?, ?, ?, ?, ?)",
                       (eid, owner.name if isinstance(owner, Topic) else owner.path, kind,
                        pickle.dumps(record), sequence, sessions))
            if new:
                self._write_new(owner, eid)

    def _write_new(self, owner: _Owner, eid: int) -> None:
        """An entity first written: all it holds (its messages may predate this commit)."""
        detector = owner.duplicates
        if detector is not None:
            detector.fresh = []
            self._db.executemany("INSERT OR REPLACE INTO duplicates VALUES (?, ?, ?, ?)",
                                 [(eid, *seen) for seen in detector.seen()])
        if isinstance(owner, Topic):
            return
        owner.journal = self
        held = owner.peek(0, 1 << 62)
        self._db.executemany(_UPSERT, [_row(eid, stored) for stored in held])

    def close(self) -> None:
        """The last commit; then the database is closed and the directory let go."""
        try:
            self.commit()
        finally:
            for entity in self._store.entities():
                entity.journal = NO_JOURNAL
            for detector in self._detectors():
                detector.fresh = None
            self._db.close()
            self._release_lock()

    @property
    def path(self) -> Path:
        """The directory."""
        return self._path


def _describe(owner: _Owner, is_queue: bool) -> tuple[str, _Record]:
    times = (owner.created_at, owner.updated_at, owner.accessed_at)
    described = dict(owner.described)
    if isinstance(owner, Topic):
        detector = owner.duplicates
        due = dict((sequence, at) for at, sequence in owner.scheduled_due)
        return "topic", _Record(
            described=described, times=times,
            duplicate_window=None if detector is None else detector.window,
            default_ttl=owner.default_ttl, last_sequence=owner.last_sequence,
            scheduled=[(due[sequence], sequence, message.to_bytes())
                       for sequence, message in owner.scheduled.items() if sequence in due])
    if owner.path.endswith(DEAD_LETTER_SUFFIX):
        return "dead-letter", _Record(described=described, times=times)
    kind = "queue" if is_queue else "subscription"
    return kind, _Record(settings=owner.settings,
                         rules=None if is_queue else owner.stored_rules(),
                         described=described, times=times)


_UPSERT = "INSERT OR REPLACE INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"


class _Rows:
    """An entity's message rows: where its messages read back have their bytes."""

    __slots__ = ("_data_dir", "eid")

    def __init__(self, data_dir: DataDir, eid: int) -> None:
        self._data_dir = data_dir
        self.eid = eid

    def read(self, sequence_number: int) -> bytes:
        return self._data_dir.message_bytes(self.eid, sequence_number)


def _row(eid: int, stored: StoredMessage) -> tuple[object, ...]:
    """A message's row in ``messages``: what the entity reads of it at a restart in
    columns, and its bytes with their checksum."""
    raw = stored.content.to_bytes()
    return (eid << _SEQUENCE_BITS | stored.sequence_number, stored.state.value,
            stored.delivery_count, int(stored.deferred), stored.expires_at, stored.session_id,
            stored.enqueued_ms, zlib.crc32(raw), raw)


def _sessions(entity: Entity) -> bytes | None:
    """The states of an entity's sessions that have one (pickled)."""
    states = {sid: r.state for sid, r in entity.sessions.items() if r.state is not None}
    return pickle.dumps(states) if states else None


@contextlib.contextmanager
def _collector_paused() -> Iterator[None]:
    """No garbage collection while a namespace is read back: it makes an object or more a
    message, none of them garbage, and each collection of the oldest generation would
    walk them all again (a third of a restart's time without this)."""
    paused = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if paused:
            gc.enable()


def _unpickled(data: bytes) -> Any:
    return pickle.loads(data)  # a file this fake wrote
