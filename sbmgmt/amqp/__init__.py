"""The wire layer: AMQP 1.0 bytes in and out, for the client and the fake alike.

- :mod:`~sbmgmt.amqp.values`: the exact AMQP types the service wants on the way out
  (``int32``, ``uint``, typed arrays, timestamps) and checked Python values on the way in.
- :mod:`~sbmgmt.amqp.encode` / :mod:`~sbmgmt.amqp.decode`: the pure-Python codec (proton's
  bytes and values exactly, several times faster than proton's cffi ``Data``).
- :mod:`~sbmgmt.amqp.sections`: the message sections (part 3 §3.2): the one table of
  section codes and the one walker over a message's sections.
- :mod:`~sbmgmt.amqp.envelope`: the management request and reply envelopes, both
  directions (the client encodes requests and parses replies, the fake parses requests
  and encodes replies), the ``$cbs`` put-token and its reply included.

Nothing here does I/O or holds state; nothing here imports proton's ``Message``.
"""
