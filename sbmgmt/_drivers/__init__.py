"""The drivers: who runs the engine for a client.

Owns the sync client's I/O thread (:mod:`.io_thread`), the asyncio client's driver on the
running event loop (:mod:`.event_loop`) and how a blocked caller waits (:mod:`.waiter`).

May import: :mod:`sbmgmt._engine` and everything below it. Not the client core.
"""
