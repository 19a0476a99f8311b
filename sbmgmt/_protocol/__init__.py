"""The sans-I/O protocol state: what the engine decides, without touching a socket.

Owns the correlation dispatcher of a link pair (:mod:`.dispatcher`), the CBS tokens
(:mod:`.tokens`), retries and backoff (:mod:`.retry`), an entity's link pair as a state
machine (:mod:`.link_state`) and a transaction's state on both sides (:mod:`.transaction`,
:mod:`.transaction_state`). Time comes from clocks and timers passed in; tests drive it
by hand.

May import: :mod:`sbmgmt.amqp`, :mod:`sbmgmt.errors`, ``concurrent.futures`` (result
holders). Never the transport, the engine, the drivers, proton's C engine, sockets,
selectors or threads (the ``import-linter`` contracts in ``pyproject.toml``).
"""
