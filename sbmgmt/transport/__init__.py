"""The transport: bytes between a connection's socket and proton's protocol engine.

Owns the event loops that drive proton (:mod:`.proton_loop`, what every loop shares; the
selector loop on a thread of its own, :mod:`.selector_loop`; the asyncio loop,
:mod:`.asyncio_loop`), the sockets and in-memory streams (:mod:`.sockets`), the server
side the fake namespace runs on (:mod:`.server_loop`) and the buffer deliveries are read
into (:mod:`.receive_buffer`). Public so that ``fakes`` can run on it.

May import: proton, the standard library's sockets, selectors and asyncio,
:mod:`sbmgmt.errors`. Nothing else of sbmgmt (it knows no requests, links or tokens).
"""
