"""The engine: what a driver runs on one connection (a handler of the transport's loop).

Owns the connection and its reconnects (:mod:`.connection`), the link pairs of the
management nodes and ``$cbs`` (:mod:`.link_pairs`, :mod:`.open_links`), the session
receivers (:mod:`.session_links`), the transaction coordinator (:mod:`.coordinator_link`),
the per-request path on the wire (:mod:`.deliveries`), the errors it gives requests
by cause (:mod:`.failures`) and the engine itself (:mod:`.engine`).

May import: :mod:`sbmgmt._protocol`, :mod:`sbmgmt.transport`, :mod:`sbmgmt.amqp`,
:mod:`sbmgmt.errors`, proton. Not the drivers or the client above it.
"""
