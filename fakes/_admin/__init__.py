"""The administration API of the fake namespace: what ``ServiceBusAdministrationClient``
sends (HTTP with ATOM XML bodies), served on the fake's HTTP port as the service and the
emulator do.

The modules, one job each: :mod:`._app` (the WSGI application: authorization, parsing,
errors), :mod:`._routes` (which resource a path names), :mod:`._operations` (the handlers on
the store), :mod:`._descriptions` and :mod:`._rule_xml` (the descriptions to and from XML),
:mod:`._atom` (entries, feeds, error bodies), :mod:`._xml` and :mod:`._durations` (the XML
primitives), :mod:`._context` (what the API needs of the namespace).
"""

from ._app import AdminApi
from ._atom import ERROR_CONTENT_TYPE
from ._atom import error as error_body
from ._authorization import KEY as AUTHORIZATION_RULES
from ._authorization import named_rules_xml
from ._context import AdminNamespace
from ._descriptions import QUEUE_DESCRIBED, SUBSCRIPTION_DESCRIBED, TOPIC_DESCRIBED, described

__all__ = ["AUTHORIZATION_RULES", "ERROR_CONTENT_TYPE", "QUEUE_DESCRIBED", "SUBSCRIPTION_DESCRIBED",
           "TOPIC_DESCRIBED", "AdminApi", "AdminNamespace", "described", "error_body",
           "named_rules_xml"]
