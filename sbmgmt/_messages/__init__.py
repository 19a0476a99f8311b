"""Messages to and from their wire bytes, under :mod:`sbmgmt.message`.

Owns the fields as the sections carry them (:mod:`.fields`), the one-pass decoder of the
common encoding (:mod:`.common_decoder`), the generic decoder by sections
(:mod:`.section_decoder`), the lazy decoder of received messages (:mod:`.lazy_decoder`)
and AMQP numbers as decimal text (:mod:`.number_text`).

May import: :mod:`sbmgmt.amqp`, :mod:`sbmgmt.errors`, proton's value types, pydantic.
Not :mod:`sbmgmt.message` (which imports these).
"""
