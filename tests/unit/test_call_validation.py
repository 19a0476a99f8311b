"""A bad argument to a client method is a ValueError that names the argument (and the
item's position), not a bare conversion error raised before the request model sees it.
tests/papercuts/test_argument_names.py covers every argument of the public API."""

from __future__ import annotations

import uuid

import pytest

from sbmgmt._client.client_core import ClientCore
from sbmgmt._client.method_calls import renew_locks_call, update_disposition_call
from sbmgmt.ops import encode_request, update_disposition


def test_a_bad_lock_token_is_named_by_its_position() -> None:
    good = str(uuid.uuid4())
    with pytest.raises(ValueError, match=r"lock_tokens\[1\]: .*valid UUID"):
        renew_locks_call([good, "not-a-token"])


def test_string_tokens_and_status_still_convert() -> None:
    token = uuid.uuid4()
    call = update_disposition_call([str(token)], "completed", None, None, {"k": 1}, None)
    assert call.request == update_disposition.Request(
        disposition_status=update_disposition.DispositionStatus.COMPLETED,
        lock_tokens=(token,), properties_to_modify={"k": 1})
    assert renew_locks_call([str(token)]).request.lock_tokens == (token,)


def test_a_bad_status_is_named() -> None:
    with pytest.raises(ValueError, match=r"^status: .*'completed'"):
        update_disposition_call([uuid.uuid4()], "done", None, None, None, None)



@pytest.mark.parametrize("not_a_request", [update_disposition.Response(), object()],
                         ids=["a Response", "an object"])
def test_what_is_not_an_operations_request_is_a_type_error(not_a_request: object) -> None:
    # ClientCore.call (sync and async) asks idempotent() before anything is sent;
    # submit's encode_request asks the registry the same way
    with pytest.raises(TypeError, match="is not a request of any sbmgmt operation"):
        ClientCore.idempotent(not_a_request)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="is not a request of any sbmgmt operation"):
        encode_request(not_a_request, message_id=uuid.uuid4(),  # type: ignore[arg-type]
                       reply_to="q/$management/r")
