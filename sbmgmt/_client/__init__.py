"""The client core: what :mod:`sbmgmt.client` and :mod:`sbmgmt.aio` share.

Owns the settings and how a request becomes a future and a call its result
(:mod:`.client_core`), each method's arguments made a request and its response a result
(:mod:`.method_calls`), the argument checks the models cannot make
(:mod:`.argument_checks`) and the session locks (:mod:`.session_lock`). The client picks
its driver; the core never imports one.

May import: the drivers (the waiter a blocking call parks on) and everything below;
:mod:`sbmgmt.ops`, :mod:`sbmgmt.message`, :mod:`sbmgmt.rules`, :mod:`sbmgmt.auth`.
"""
