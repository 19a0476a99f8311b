"""The administration API on the wire: the service's XML (element order of the SDKs' models,
prefixes the JavaScript SDK reads), error bodies, authorization, paging links and paths."""

from __future__ import annotations

import http.client
import time
import xml.etree.ElementTree as ET

import pytest

from fakes import FakeNamespace
from sbmgmt.auth import generate_sas_token

ATOM = "{http://www.w3.org/2005/Atom}"
SB = "{http://schemas.microsoft.com/netservices/2010/10/servicebus/connect}"
KEY = "SAS_KEY_VALUE"


def _token(fake: FakeNamespace, audience: str | None = None, *, ttl: int = 300) -> str:
    assert fake.http_port is not None
    return generate_sas_token(audience or f"https://{fake.host}:{fake.http_port}",
                              fake.key_name, KEY, int(time.time()) + ttl)


def _request(fake: FakeNamespace, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, str, bytes]:
    assert fake.http_port is not None
    connection = http.client.HTTPConnection(fake.host, fake.http_port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type", ""), response.read()
    finally:
        connection.close()


def _authorized(fake: FakeNamespace, method: str, path: str,
                body: bytes | None = None) -> tuple[int, str, bytes]:
    return _request(fake, method, path, body, {"Authorization": _token(fake)})


#: The XML element order of each description, pinned as azure-servicebus 7.15 declares it
#: (azure/servicebus/management/_generated/models/_models.py: each model's
#: ``_attribute_map``, the ``xml`` name or else the key; ``messageCountDetails`` is written
#: ``CountDetails``): the order of the service's schema, which the SDK follows. Pinned
#: here rather than read from the SDK's private source, which an upgrade may reshape.
ELEMENT_ORDER = {
    "QueueDescription": [
        "LockDuration", "MaxSizeInMegabytes", "RequiresDuplicateDetection", "RequiresSession",
        "DefaultMessageTimeToLive", "DeadLetteringOnMessageExpiration",
        "DuplicateDetectionHistoryTimeWindow", "MaxDeliveryCount", "EnableBatchedOperations",
        "SizeInBytes", "MessageCount", "IsAnonymousAccessible", "AuthorizationRules", "Status",
        "ForwardTo", "UserMetadata", "CreatedAt", "UpdatedAt", "AccessedAt", "SupportOrdering",
        "CountDetails", "AutoDeleteOnIdle", "EnablePartitioning", "EntityAvailabilityStatus",
        "ForwardDeadLetteredMessagesTo", "EnableExpress", "MaxMessageSizeInKilobytes"],
    "TopicDescription": [
        "DefaultMessageTimeToLive", "MaxSizeInMegabytes", "RequiresDuplicateDetection",
        "DuplicateDetectionHistoryTimeWindow", "EnableBatchedOperations", "SizeInBytes",
        "FilteringMessagesBeforePublishing", "IsAnonymousAccessible", "AuthorizationRules",
        "Status", "CreatedAt", "UpdatedAt", "AccessedAt", "SupportOrdering", "CountDetails",
        "SubscriptionCount", "SqlFilterCount", "CorrelationFilterCount", "AutoDeleteOnIdle",
        "EnablePartitioning", "EntityAvailabilityStatus", "EnableSubscriptionPartitioning",
        "EnableExpress", "UserMetadata", "MaxMessageSizeInKilobytes"],
    "SubscriptionDescription": [
        "LockDuration", "RequiresSession", "DefaultMessageTimeToLive",
        "DeadLetteringOnMessageExpiration", "DeadLetteringOnFilterEvaluationExceptions",
        "defaultRuleDescription", "MessageCount", "MaxDeliveryCount", "EnableBatchedOperations",
        "Status", "ForwardTo", "CreatedAt", "UpdatedAt", "AccessedAt", "CountDetails",
        "UserMetadata", "ForwardDeadLetteredMessagesTo", "AutoDeleteOnIdle",
        "EntityAvailabilityStatus"],
    "NamespaceProperties": [
        "Alias", "CreatedTime", "MessagingSKU", "MessagingUnits", "ModifiedTime", "Name",
        "NamespaceType"],
}


#: The namespace of every test here (the suite's ``fake``, tests/conftest.py).
pytestmark = pytest.mark.fake_namespace(http_port=0, key=KEY, queues=["q"], topics={"t": ["s"]})


@pytest.mark.parametrize(("path", "model"), [
    ("/q?api-version=2021-05", "QueueDescription"),
    ("/t?api-version=2021-05", "TopicDescription"),
    ("/t/Subscriptions/s?api-version=2021-05", "SubscriptionDescription"),
    ("/$namespaceinfo?api-version=2021-05", "NamespaceProperties"),
])
def test_descriptions_follow_the_models_element_order(fake: FakeNamespace, path: str,
                                                      model: str) -> None:
    status, content_type, body = _authorized(fake, "GET", path)
    assert status == 200 and content_type.startswith("application/atom+xml;type=entry")
    entry = ET.fromstring(body)
    tags = [child.tag.removeprefix(ATOM) for child in entry]
    atom_order = ["id", "title", "published", "updated", "author", "link", "content"]
    assert tags == [tag for tag in atom_order if tag in tags]
    assert {"id", "title", "updated", "link", "content"} <= set(tags)
    description = entry.find(f"{ATOM}content")[0]  # type: ignore[index]
    written = [child.tag.removeprefix(SB) for child in description]
    declared = [name for name in ELEMENT_ORDER[model] if name in written]
    assert written == declared
    # optional elements only (ForwardTo, UserMetadata, Alias...) may be left out
    missing = set(ELEMENT_ORDER[model]) - set(written)
    assert missing <= {"ForwardTo", "UserMetadata", "ForwardDeadLetteredMessagesTo", "Alias",
                       "MessagingUnits", "defaultRuleDescription", "RuleDescription"}


def test_count_details_and_key_values_use_the_services_prefixes(fake: FakeNamespace) -> None:
    status, _, body = _authorized(fake, "GET", "/q?api-version=2021-05")
    assert status == 200
    assert (b'<CountDetails xmlns:d2p1="http://schemas.microsoft.com/netservices/2011/06/'
            b'servicebus"><d2p1:ActiveMessageCount>0</d2p1:ActiveMessageCount>') in body
    rule = (b'<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">'
            b'<RuleDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/'
            b'servicebus/connect" xmlns:i="http://www.w3.org/2001/XMLSchema-instance">'
            b'<Filter i:type="CorrelationFilter"><Properties><KeyValueOfstringanyType>'
            b'<Key>n</Key><Value i:type="d6p1:int" xmlns:d6p1="http://www.w3.org/2001/XMLSchema"'
            b'>7</Value></KeyValueOfstringanyType></Properties></Filter>'
            b'<Action i:type="EmptyRuleAction"/><Name>r</Name></RuleDescription></content></entry>')
    status, _, created = _authorized(fake, "PUT", "/t/Subscriptions/s/Rules/r?api-version=2021-05",
                                     rule)
    assert status == 201, created
    assert (b'<Value i:type="d6p1:int" xmlns:d6p1="http://www.w3.org/2001/XMLSchema">7</Value>'
            in created)


def test_errors_are_the_services_bodies(fake: FakeNamespace) -> None:
    status, content_type, body = _authorized(fake, "DELETE", "/nothing?api-version=2021-05")
    assert (status, content_type) == (404, "application/xml; charset=utf-8")
    error = ET.fromstring(body)
    assert error.tag == "Error" and error.findtext("Code") == "404"
    assert "nothing" in (error.findtext("Detail") or "")
    status, _, body = _authorized(fake, "PUT", "/q?api-version=2021-05", b"<entry")
    assert status == 400 and ET.fromstring(body).findtext("Code") == "400"
    status, _, body = _authorized(
        fake, "PUT", "/x?api-version=2021-05",
        b'<!DOCTYPE e [<!ENTITY a "a">]><entry xmlns="http://www.w3.org/2005/Atom"/>')
    assert status == 400 and b"DTD" in body
    status, _, _ = _authorized(fake, "POST", "/q?api-version=2021-05", b"")
    assert status == 405


def test_a_missing_queue_or_topic_is_an_empty_feed_as_on_the_service(
        fake: FakeNamespace) -> None:
    status, content_type, body = _authorized(fake, "GET", "/nothing?api-version=2021-05")
    assert status == 200 and content_type.startswith("application/atom+xml;type=feed")
    assert ET.fromstring(body).find(f"{ATOM}entry") is None


@pytest.mark.parametrize(("headers", "detail"), [
    ({}, "MissingToken"),
    ({"Authorization": "Bearer abc"}, "InvalidSignature"),
    ({"Authorization": "SharedAccessSignature sr=x&sig=y&se=1&skn=z"}, "InvalidSignature"),
])
def test_requests_without_a_valid_token_are_unauthorized(
        fake: FakeNamespace, headers: dict[str, str], detail: str) -> None:
    status, _, body = _request(fake, "GET", "/q?api-version=2021-05", headers=headers)
    assert status == 401
    assert ET.fromstring(body).findtext("Code") == "401"
    assert detail in (ET.fromstring(body).findtext("Detail") or "")


def test_tokens_for_the_entity_or_an_expired_one(fake: FakeNamespace) -> None:
    assert fake.http_port is not None
    base = f"https://{fake.host}:{fake.http_port}"
    for audience, expected in ((f"{base}/q", 200), (f"{base}/other", 401),
                               (f"sb://{fake.host}/q", 200), (f"{base}/t", 401)):
        status, _, _ = _request(fake, "GET", "/q?api-version=2021-05",
                                headers={"Authorization": _token(fake, audience)})
        assert status == expected, audience
    expired = _token(fake, ttl=-10)
    status, _, body = _request(fake, "GET", "/q?api-version=2021-05",
                               headers={"Authorization": expired})
    assert status == 401 and b"expired" in body


def test_a_forwarding_target_needs_a_token_that_covers_it(fake: FakeNamespace) -> None:
    assert fake.http_port is not None
    base = f"https://{fake.host}:{fake.http_port}"
    body = (b'<entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">'
            b'<QueueDescription xmlns="http://schemas.microsoft.com/netservices/2010/10/'
            b'servicebus/connect"><ForwardTo>q</ForwardTo></QueueDescription></content></entry>')
    only_source = {"Authorization": _token(fake, f"{base}/source")}
    status, _, _ = _request(fake, "PUT", "/source?api-version=2021-05", body, only_source)
    assert status == 401
    with_target = {**only_source, "ServiceBusSupplementaryAuthorization":
                   _token(fake, f"sb://{fake.host}/q")}
    status, _, created = _request(fake, "PUT", "/source?api-version=2021-05", body, with_target)
    assert status == 201
    assert b"<ForwardTo>sb://127.0.0.1:" in created


def test_feeds_link_the_next_page(fake: FakeNamespace) -> None:
    for name in ("q2", "q3"):
        fake.add_queue(name)
    status, content_type, body = _authorized(fake, "GET",
                                             "/$Resources/queues?api-version=2021-05&$top=2")
    assert status == 200 and content_type.startswith("application/atom+xml;type=feed")
    feed = ET.fromstring(body)
    links = {link.get("rel"): link.get("href") for link in feed.findall(f"{ATOM}link")}
    assert list(links) == ["self", "next"]
    assert links["next"] is not None and links["next"].endswith("&$skip=2&$top=2")
    assert [e.findtext(f"{ATOM}title") for e in feed.findall(f"{ATOM}entry")] == ["q", "q2"]
    status, _, body = _authorized(fake, "GET",
                                  "/$Resources/queues?api-version=2021-05&$skip=2&$top=2")
    last = ET.fromstring(body)
    assert [link.get("rel") for link in last.findall(f"{ATOM}link")] == ["self"]
    assert [e.findtext(f"{ATOM}title") for e in last.findall(f"{ATOM}entry")] == ["q3"]


def test_names_with_slashes_encoded_or_not(fake: FakeNamespace) -> None:
    fake.add_queue("a/b")
    for path in ("/a%2Fb?api-version=2021-05", "/a/b?api-version=2021-05"):
        status, _, body = _authorized(fake, "GET", path)
        assert status == 200
        entry = ET.fromstring(body)
        assert entry.findtext(f"{ATOM}title") == "a/b"


def test_paths_without_an_api_version_are_not_the_apis(fake: FakeNamespace) -> None:
    status, _, _ = _request(fake, "GET", "/q")
    assert status == 404


def test_a_body_beyond_the_limit_is_refused(fake: FakeNamespace) -> None:
    status, _, body = _authorized(fake, "PUT", "/big?api-version=2021-05",
                                  b"<entry>" + b" " * (1024 * 1024 + 1) + b"</entry>")
    assert status == 413 and ET.fromstring(body).findtext("Code") == "413"


def test_accept_any_token_skips_the_check() -> None:
    with FakeNamespace(http_port=0, accept_any_token=True) as fake:
        fake.add_queue("q")
        status, _, _ = _request(fake, "GET", "/q?api-version=2021-05")
    assert status == 200


def test_tokens_as_dotnet_and_javascript_sign_them(fake: FakeNamespace) -> None:
    """.NET signs the request URL without its query, in its own case; JavaScript the whole
    URL lower-cased."""
    assert fake.http_port is not None
    path = "/t/Subscriptions/s"
    url = f"http://{fake.host}:{fake.http_port}{path}?api-version=2021-05"
    for audience in (url.split("?")[0], url.lower()):
        status, _, _ = _request(fake, "GET", path + "?api-version=2021-05",
                                headers={"Authorization": _token(fake, audience)})
        assert status == 200, audience
