"""Messages to and from their wire bytes, under :mod:`sbmgmt.message`.

Owns the fields as the sections carry them (:mod:`.fields`), the one-pass decoder of the
common encoding (:mod:`.common_decoder`), the generic decoder by sections
(:mod:`.section_decoder`), the lazy decoder of received messages (:mod:`.lazy_decoder`) and a
data body read from its wire bytes alone (:mod:`.wire_body`),
AMQP numbers as decimal text (:mod:`.number_text`), and the encoder: a message's sections
from its fields (:mod:`.encoder`), its head with what a broker changes left open
(:mod:`.broker_head`), the fields it reads (:mod:`.field_views`).

May import: :mod:`sbmgmt.amqp`, :mod:`sbmgmt.errors`, proton's value types, pydantic.
Not :mod:`sbmgmt.message` (which imports these).
"""
