"""Option parsing: defaults, clear errors, and no secret in any message or repr."""

from __future__ import annotations

import pytest

from sbmgmt.spark import SparkOptionError
from sbmgmt.spark._options import (
    DEFAULT_PAGE_SIZE,
    MAX_SEQUENCE_NUMBER,
    check_read_options,
    read_options,
    stream_options,
    write_options,
)

SECRET = "c2VjcmV0LWtleS1zZW50aW5lbA=="
CONN = (f"Endpoint=sb://127.0.0.1:5672;SharedAccessKeyName=Root;SharedAccessKey={SECRET};"
        "UseDevelopmentEmulator=true")


def test_read_defaults_and_case_insensitive_names() -> None:
    options = read_options({"connectionstring": CONN, "ENTITY": "/q/$DeadLetterQueue/"})
    assert options.entity == "q/$DeadLetterQueue"
    assert (options.partitions, options.from_sequence_number, options.to_sequence_number,
            options.page_size, options.session_id) == (1, 0, MAX_SEQUENCE_NUMBER,
                                                       DEFAULT_PAGE_SIZE, None)


def test_read_values() -> None:
    options = read_options({"connectionString": CONN, "entity": "q", "partitions": "4",
                            "fromSequenceNumber": "10", "toSequenceNumber": "20",
                            "sessionId": "s1", "pageSize": "50", "pagesInFlight": "2"})
    assert (options.partitions, options.from_sequence_number, options.to_sequence_number,
            options.session_id, options.page_size, options.pages_in_flight) == (
        4, 10, 20, "s1", 50, 2)


@pytest.mark.parametrize(("extra", "message"), [
    ({"partitions": "0"}, "option partitions must be an integer from 1 to 10000, got '0'"),
    ({"partitions": "four"}, "option partitions must be an integer"),
    ({"pageSize": "-1"}, "option pageSize must be a positive integer"),
    ({"pagesInFlight": "65"}, "option pagesInFlight must be an integer from 1 to 64"),
    ({"fromSequenceNumber": "9", "toSequenceNumber": "3"},
     "fromSequenceNumber (9) is greater than toSequenceNumber (3)"),
    ({"sessionId": "x" * 129}, "sessionId is longer than 128"),
    ({"entity": "  "}, "option entity is empty"),
    ({"patitions": "2"}, "unknown servicebus option(s) patitions"),
    ({"timeout": "0"}, "option timeout must be a positive number of seconds"),
])
def test_read_errors(extra: dict[str, str], message: str) -> None:
    with pytest.raises(SparkOptionError) as caught:
        read_options({"connectionString": CONN, "entity": "q", **extra})
    assert message in str(caught.value)
    assert SECRET not in str(caught.value)


def test_missing_entity_and_connection() -> None:
    with pytest.raises(SparkOptionError, match="option entity is required"):
        read_options({"connectionString": CONN})
    with pytest.raises(SparkOptionError, match=r"connectionString .* is required"):
        read_options({"entity": "q"})


def test_invalid_connection_string_is_not_echoed() -> None:
    bad = f"Endpoint=http://host;SharedAccessKeyName=Root;SharedAccessKey={SECRET}"
    with pytest.raises(SparkOptionError) as caught:
        read_options({"connectionString": bad, "entity": "q"})
    assert "option connectionString is invalid" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_namespace_credentials() -> None:
    keyed = read_options({"namespace": "ns.servicebus.windows.net", "entity": "q",
                          "sharedAccessKeyName": "Root", "sharedAccessKey": SECRET})
    assert keyed.connection.key_name == "Root"
    assert SECRET not in repr(keyed) and SECRET not in repr(keyed.connection)
    default = read_options({"namespace": "ns", "entity": "q", "credential": "Default"})
    assert default.connection.credential == "default"
    with pytest.raises(SparkOptionError, match="exactly one of"):
        read_options({"namespace": "ns", "entity": "q"})
    with pytest.raises(SparkOptionError, match="exactly one of"):
        read_options({"namespace": "ns", "entity": "q", "credential": "default",
                      "sharedAccessSignature": "SharedAccessSignature sr=x&sig=y&se=1&skn=k"})
    with pytest.raises(SparkOptionError, match="go together"):
        read_options({"namespace": "ns", "entity": "q", "sharedAccessKey": SECRET})
    with pytest.raises(SparkOptionError, match="must be 'default'"):
        read_options({"namespace": "ns", "entity": "q", "credential": "managed"})
    with pytest.raises(SparkOptionError, match="not both"):
        read_options({"connectionString": CONN, "namespace": "ns", "entity": "q"})


def test_connection_repr_masks_the_connection_string() -> None:
    options = read_options({"connectionString": CONN, "entity": "q"})
    assert SECRET not in repr(options)
    assert "secret='***'" in repr(options.connection)


def test_write_options() -> None:
    options = write_options({"connectionString": CONN, "entity": "q", "batchSize": "7",
                             "duplicateDetection": "TRUE"})
    assert (options.batch_size, options.duplicate_detection) == (7, True)
    assert write_options({"connectionString": CONN, "entity": "q"}).batch_size == 100
    with pytest.raises(SparkOptionError, match="duplicateDetection must be true or false"):
        write_options({"connectionString": CONN, "entity": "q", "duplicateDetection": "yes"})
    with pytest.raises(SparkOptionError, match=r"unknown servicebus option.*partitions"):
        write_options({"connectionString": CONN, "entity": "q", "partitions": "2"})


def test_stream_options() -> None:
    options = stream_options({"connectionString": CONN, "entity": "q", "partitions": "3",
                              "startingSequenceNumber": "Earliest",
                              "maxMessagesPerTrigger": "500"})
    assert (options.starting, options.max_messages_per_trigger, options.read.partitions) == (
        "earliest", 500, 3)
    default = stream_options({"connectionString": CONN, "entity": "q"})
    assert (default.starting, default.max_messages_per_trigger) == ("latest", None)
    assert stream_options({"connectionString": CONN, "entity": "q",
                           "startingSequenceNumber": "42"}).starting == 42


@pytest.mark.parametrize(("extra", "message"), [
    ({"startingSequenceNumber": "first"},
     "option startingSequenceNumber must be earliest, latest or a sequence number"),
    ({"maxMessagesPerTrigger": "0"}, "option maxMessagesPerTrigger must be a positive integer"),
    ({"fromSequenceNumber": "5"},
     "option fromSequenceNumber applies to batch reads only; a stream starts at "
     "startingSequenceNumber"),
])
def test_stream_errors(extra: dict[str, str], message: str) -> None:
    with pytest.raises(SparkOptionError) as caught:
        stream_options({"connectionString": CONN, "entity": "q", **extra})
    assert message in str(caught.value)


def test_read_options_checked_at_load_for_either_mode() -> None:
    check_read_options({"connectionString": CONN, "entity": "q", "fromSequenceNumber": "3"})
    check_read_options({"connectionString": CONN, "entity": "q", "maxMessagesPerTrigger": "3"})
    with pytest.raises(SparkOptionError, match="option partitions must be an integer"):
        check_read_options({"connectionString": CONN, "entity": "q", "partitions": "x",
                            "maxMessagesPerTrigger": "3"})
    with pytest.raises(SparkOptionError, match="do not go together"):
        check_read_options({"connectionString": CONN, "entity": "q", "toSequenceNumber": "3",
                            "startingSequenceNumber": "earliest"})
    with pytest.raises(SparkOptionError, match=r"maxMessagesPerTrigger applies to "
                                               r"spark\.readStream only"):
        read_options({"connectionString": CONN, "entity": "q", "maxMessagesPerTrigger": "3"})


def test_stream_write_options_ignore_the_checkpoint_location() -> None:
    options = write_options({"connectionString": CONN, "entity": "q",
                             "checkpointLocation": "/tmp/cp"}, streaming=True)
    assert options.entity == "q"
    with pytest.raises(SparkOptionError, match="unknown servicebus option"):
        write_options({"connectionString": CONN, "entity": "q", "checkpointLocation": "/x"})
