"""The administrator's actions: purge, resubmit / move, export / import, deferred messages,
search.

Each action is library code, written once, that every front end calls: the CLI
(`sbmgmt/cli/`), the explorer in the browser, a user's script. An action is built on the
public clients ([ManagementClient][sbmgmt.ManagementClient],
[AsyncManagementClient][sbmgmt.AsyncManagementClient]) and the public modules below
them; it knows nothing of a terminal or a page: it takes its choices as arguments,
reports progress through a callback, honours cancellation, and returns a typed report of
exactly what it did (counted, never estimated).

May import: the public modules of sbmgmt (`client`, `aio`, `message`, `message_view`, `ops`,
`errors`, `renewer`, `telemetry`, `rules`, `sql`, `auth`); never the private core
(`_client`, `_drivers`, `_engine`, `_protocol`, `_messages`), the transport, the front ends
or `fakes` (the contracts in `pyproject.toml`).
"""
