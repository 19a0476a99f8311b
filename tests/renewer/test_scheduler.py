"""The sans-I/O renewal scheduler, driven by a manual clock and a fake service."""

from __future__ import annotations

import gc
import logging
import math
import tracemalloc
import uuid
import weakref

import pytest

from sbmgmt.errors import (
    ConnectionLostError,
    ServerBusyError,
    UnauthorizedError,
    error_for_status,
)
from sbmgmt.ops import renew_lock, renew_session_lock
from sbmgmt.renewer import LockKind, LossReason, RenewalScheduler, renewal_lead

from ._sim import Simulation

NO_LIMIT = {"max_renewal_duration": None}


def test_registered_locks_never_expire_over_many_lock_periods() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    tokens = sim.service.lock_messages(1_000)
    sim.register(tokens)
    sim.advance(60 * 20)
    assert sim.losses == []
    assert sim.live_locks_valid(tokens)
    assert sim.service.expired_renewals == 0
    stats = sim.scheduler.stats()
    assert stats.tracked == 1_000 and stats.message_locks == 1_000
    assert stats.tokens_renewed >= 1_000 * 20
    assert stats.tightest_margin is not None and stats.tightest_margin >= renewal_lead(60) - 1


def test_tokens_of_one_entity_that_fall_due_together_share_requests() -> None:
    sim = Simulation(lock_duration=60, batch_size=500, **NO_LIMIT)
    tokens = sim.service.lock_messages(1_200)
    sim.register(tokens)
    sim.advance(45)  # one renewal round
    requests = sim.service.renew_requests()
    assert [len(s.request.lock_tokens) for s in requests] == [500, 500, 200]  # type: ignore[attr-defined]
    assert {t for s in requests for t in s.request.lock_tokens} == set(tokens)  # type: ignore[attr-defined]


def test_locks_registered_over_a_second_still_coalesce() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    for _ in range(10):  # 100 locks every 0.1 s
        sim.register(sim.service.lock_messages(100))
        sim.advance(0.1)
    sim.advance(120)  # about three rounds
    rounds = sorted({round(s.at) for s in sim.service.sent})
    assert len(rounds) >= 3
    # each round's locks fall in at most two adjacent batch windows
    assert len(sim.service.sent) <= 2 * len(rounds)


def test_entities_are_batched_separately_and_pipelined() -> None:
    sim = Simulation(lock_duration=60, latency=0.5, **NO_LIMIT)
    for entity in ("a", "b", "c"):
        tokens = sim.service.lock_messages(10)
        sim.register(tokens, entity=entity)
    sim.advance(45)
    first_round = sim.service.sent[:3]
    assert sorted(s.entity for s in first_round) == ["a", "b", "c"]
    assert len({s.at for s in first_round}) == 1  # all sent before any reply came back


def test_unregistered_locks_are_not_renewed() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    tokens = sim.service.lock_messages(10)
    sim.register(tokens)
    for token in tokens[:5]:
        assert sim.scheduler.unregister_message("q", token)
    assert not sim.scheduler.unregister_message("q", tokens[0])
    sim.advance(300)
    renewed = {t for s in sim.service.renew_requests() for t in s.request.lock_tokens}  # type: ignore[attr-defined]
    assert renewed == set(tokens[5:])
    assert sim.losses == []
    assert sim.scheduler.stats().tracked == 5


def test_an_unregistered_lock_does_not_keep_its_message_alive() -> None:
    """Its record stays in its slot until the slot falls due or a compaction; what it
    pointed at (a received message and its body) does not stay with it."""
    class Held:  # a weakly referable stand-in for a received message
        pass

    # The heap the worker's earlier tests left is set aside for the test's time: the full
    # collection below walks only what the test made (in a whole-suite run it walked all
    # of it: 10 s).
    gc.freeze()
    try:
        sim = Simulation(lock_duration=60, **NO_LIMIT)
        token = sim.service.lock_messages(1)[0]
        held = Held()
        sim.scheduler.register_message("q", token, sim.service.locks[token], sim.clock.now,
                                       target=held, on_lock_lost=lambda _loss: None)
        watch = weakref.ref(held)
        del held
        assert watch() is not None  # registered: kept
        assert sim.scheduler.unregister_message("q", token)
        gc.collect()
        assert watch() is None
        assert sum(len(slot) for slot in sim.scheduler._slots.values()) == 1  # still in its slot
    finally:
        gc.unfreeze()


def test_many_unregistrations_are_compacted_away() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    tokens = sim.service.lock_messages(30_000)
    sim.register(tokens)
    for token in tokens[:25_000]:
        sim.scheduler.unregister_message("q", token)
    sim.advance(1)  # a run compacts
    slots = sim.scheduler._slots  # the timeline holds live records only
    assert sum(len(slot) for slot in slots.values()) == 5_000


def test_lost_tokens_in_a_batch_are_isolated_and_reported_once() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    tokens = sim.service.lock_messages(64)
    sim.register(tokens)
    lost = {tokens[3], tokens[17], tokens[50]}
    for token in lost:
        del sim.service.locks[token]  # completed elsewhere: the service forgets the lock
    sim.advance(60 * 5)
    assert sorted(loss.lock_token for loss in sim.losses) == sorted(lost)  # type: ignore[type-var]
    assert all(loss.reason is LossReason.LOCK_LOST for loss in sim.losses)
    assert all(loss.kind is LockKind.MESSAGE and loss.entity == "q" for loss in sim.losses)
    assert all(loss.error is not None and loss.error.status_code == 410  # type: ignore[attr-defined]
               for loss in sim.losses)
    survivors = [t for t in tokens if t not in lost]
    assert sim.live_locks_valid(survivors)
    stats = sim.scheduler.stats()
    assert stats.lost[LossReason.LOCK_LOST] == 3 and stats.tracked == 61
    # isolating 3 tokens out of 64 costs O(k log n) requests, not one per token
    assert stats.splits <= 3 * math.ceil(math.log2(64))
    first_round = [s for s in sim.service.sent if s.at < sim.clock.now - 60 * 4]
    assert len(first_round) <= 1 + 2 * 3 * math.ceil(math.log2(64))


def test_transient_errors_are_retried_before_the_lock_expires() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    tokens = sim.service.lock_messages(20)
    sim.register(tokens)
    sim.service.inject.extend([
        error_for_status(renew_lock.OPERATION, 503, "com.microsoft:server-busy"),
        ConnectionLostError("link lost"),
        error_for_status(renew_lock.OPERATION, 500),
    ])
    sim.advance(60 * 3)
    assert sim.losses == []
    assert sim.live_locks_valid(tokens)
    assert sim.scheduler.stats().retries == 3


def test_a_lock_that_cannot_be_renewed_in_time_is_reported_expired_once() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    tokens = sim.service.lock_messages(5)
    sim.register(tokens)
    expiry = sim.service.locks[tokens[0]]
    sim.service.always = ServerBusyError("busy", status_code=503)
    sim.advance(60 * 3)
    assert sorted(loss.lock_token for loss in sim.losses) == sorted(tokens)  # type: ignore[type-var]
    assert all(loss.reason is LossReason.EXPIRED for loss in sim.losses)
    assert all(loss.locked_until.timestamp() == expiry for loss in sim.losses)
    stats = sim.scheduler.stats()
    assert stats.retries > 3 and stats.tracked == 0
    # every attempt went out before the expiry
    assert all(s.at < expiry for s in sim.service.sent)


def test_max_renewal_duration_stops_renewing_and_is_reported() -> None:
    sim = Simulation(lock_duration=60, max_renewal_duration=150)
    start = sim.clock.now
    tokens = sim.service.lock_messages(3)
    sim.register(tokens)
    sim.advance(600)
    assert len(sim.losses) == 3
    assert all(loss.reason is LossReason.MAX_DURATION for loss in sim.losses)
    assert all(s.at < start + 150 for s in sim.service.sent)
    assert max(s.at for s in sim.service.sent) > start + 150 - 60  # renewed until then
    assert sim.scheduler.stats().lost[LossReason.MAX_DURATION] == 3


def test_per_registration_max_duration_overrides_the_default() -> None:
    sim = Simulation(lock_duration=60, max_renewal_duration=1_000)
    short, long = sim.service.lock_messages(2)
    sim.register([short], max_renewal_duration=50)
    sim.register([long])
    sim.advance(300)
    assert [(loss.lock_token, loss.reason) for loss in sim.losses] == [
        (short, LossReason.MAX_DURATION)]
    assert sim.live_locks_valid([long])


def test_session_locks_are_renewed_one_request_each() -> None:
    sim = Simulation(lock_duration=30, latency=0.005, **NO_LIMIT)
    for session_id in ("s1", "s2"):
        until = sim.service.lock_session(session_id)
        sim.scheduler.register_session("sq", session_id, until, sim.clock.now)
    sim.advance(300)
    assert sim.losses == []
    assert all(until > sim.clock.now for until in sim.service.sessions.values())
    requests = [s.request for s in sim.service.sent]
    assert all(isinstance(r, renew_session_lock.Request) for r in requests)
    stats = sim.scheduler.stats()
    assert stats.session_locks == 2 and len(requests) >= 2 * 9
    assert stats.sessions_renewed + stats.requests_in_flight == len(requests)


def test_a_lost_session_lock_is_reported() -> None:
    sim = Simulation(lock_duration=30, **NO_LIMIT)
    until = sim.service.lock_session("s1")
    sim.scheduler.register_session("sq", "s1", until, sim.clock.now, target="mine")
    del sim.service.sessions["s1"]
    sim.advance(60)
    [loss] = sim.losses
    assert loss.kind is LockKind.SESSION and loss.session_id == "s1" and loss.lock_token is None
    assert loss.reason is LossReason.LOCK_LOST and loss.target == "mine"
    assert loss.error is not None and "session-lock-lost" in str(loss.error)


def test_non_retryable_errors_fail_the_batch() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    tokens = sim.service.lock_messages(4)
    sim.register(tokens)
    sim.service.inject.append(UnauthorizedError("no", status_code=401))
    sim.advance(60)
    assert len(sim.losses) == 4
    assert all(loss.reason is LossReason.FAILED for loss in sim.losses)
    assert all(isinstance(loss.error, UnauthorizedError) for loss in sim.losses)
    assert sim.scheduler.stats().renew_requests == 1  # not split: not about one token


def test_a_reply_with_the_wrong_number_of_expirations_fails_the_batch() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    tokens = sim.service.lock_messages(2)
    sim.register(tokens)

    def short_reply(entity: str, request: object, timeout: float) -> object:
        future = sim.service.submit(entity, request, timeout)  # type: ignore[arg-type]
        future._result = renew_lock.Response(expirations=())  # type: ignore[attr-defined]
        return future

    sim.scheduler._submit = short_reply  # type: ignore[assignment]
    sim.advance(60)
    assert [loss.reason for loss in sim.losses] == [LossReason.FAILED] * 2
    assert "2 lock tokens" in str(sim.losses[0].error)


def test_a_submit_that_raises_counts_as_a_failed_request() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    tokens = sim.service.lock_messages(1)
    sim.register(tokens)

    def broken(entity: str, request: object, timeout: float) -> object:
        raise RuntimeError("boom")

    sim.scheduler._submit = broken  # type: ignore[assignment]
    sim.advance(60)
    [loss] = sim.losses
    assert loss.reason is LossReason.FAILED and isinstance(loss.error, RuntimeError)


def test_a_lock_already_expired_at_registration_is_reported_expired() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    token = uuid.uuid4()
    sim.scheduler.register_message("q", token, sim.clock.now - 1, sim.clock.now)
    sim.advance(1)
    assert [(loss.lock_token, loss.reason) for loss in sim.losses] == [
        (token, LossReason.EXPIRED)]
    assert sim.service.sent == []


def test_registering_again_replaces_the_registration() -> None:
    sim = Simulation(lock_duration=60, **NO_LIMIT)
    [token] = sim.service.lock_messages(1)
    sim.register([token])
    sim.register([token])
    sim.advance(45)
    assert len(sim.service.sent) == 1
    assert sim.scheduler.stats().tracked == 1


def test_unregistering_while_a_request_is_in_flight_drops_its_result() -> None:
    sim = Simulation(lock_duration=60, latency=2.0, **NO_LIMIT)
    [token] = sim.service.lock_messages(1)
    sim.register([token])
    sim.advance(40.5)  # sent, reply not back yet
    assert sim.scheduler.stats().requests_in_flight == 1
    sim.scheduler.unregister_message("q", token)
    sim.advance(200)
    assert len(sim.service.sent) == 1 and sim.losses == []
    assert sim.scheduler.stats().requests_in_flight == 0


def test_a_raising_callback_is_logged_and_renewal_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def explode(loss: object) -> None:
        raise ValueError("callback bug")

    sim = Simulation(lock_duration=60, on_lock_lost=explode, **NO_LIMIT)
    tokens = sim.service.lock_messages(3)
    sim.register(tokens)
    del sim.service.locks[tokens[0]]
    with caplog.at_level(logging.ERROR, logger="sbmgmt.renewer"):
        sim.advance(60 * 3)
    assert "on_lock_lost callback raised" in caplog.text
    assert sim.live_locks_valid(tokens[1:])


def test_periodic_stats_line_at_info(caplog: pytest.LogCaptureFixture) -> None:
    sim = Simulation(lock_duration=60, log_interval=30, **NO_LIMIT)
    sim.register(sim.service.lock_messages(7))
    with caplog.at_level(logging.INFO, logger="sbmgmt.renewer"):
        sim.advance(100)
    lines = [r.getMessage() for r in caplog.records if r.name == "sbmgmt.renewer"]
    assert len(lines) == 3
    assert "7 locks tracked" in lines[-1] and "tokens" in lines[-1]


def test_closed_scheduler_refuses_registrations_and_ignores_replies() -> None:
    sim = Simulation(lock_duration=60, latency=1.0, **NO_LIMIT)
    tokens = sim.service.lock_messages(2)
    sim.register(tokens)
    sim.advance(40.5)
    sim.scheduler.close()
    sim.advance(10)
    assert sim.losses == [] and sim.scheduler.closed
    with pytest.raises(RuntimeError, match="stopped"):
        sim.register(tokens)


@pytest.mark.parametrize(
    ("setting", "value"),
    [("batch_size", 0), ("batch_window", 0), ("request_timeout", -1),
     ("max_renewal_duration", 0), ("log_interval", 0)],
)
def test_bad_settings_are_value_errors(setting: str, value: float) -> None:
    with pytest.raises(ValueError, match=setting):
        RenewalScheduler(lambda *a: None, lambda: None, **{setting: value})  # type: ignore[arg-type, return-value]


def test_renewal_lead_is_a_third_bounded_by_a_second_and_half_the_lock() -> None:
    assert renewal_lead(60) == pytest.approx(20)
    assert renewal_lead(5) == pytest.approx(5 / 3)
    assert renewal_lead(2.4) == 1.0
    assert renewal_lead(1) == 0.5


def test_100k_locks_fit_in_100_mb_and_are_all_renewed_with_5ms_latency() -> None:
    sim = Simulation(lock_duration=60, latency=0.005, **NO_LIMIT)
    tokens = sim.service.lock_messages(100_000)
    tracemalloc.start()
    try:
        sim.register(tokens)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 100 * 1024 * 1024
    sim.advance(60 * 2)
    assert sim.losses == [] and sim.service.expired_renewals == 0
    assert sim.live_locks_valid(tokens)
    stats = sim.scheduler.stats()
    assert stats.tokens_renewed >= 2 * 100_000
    assert stats.renew_requests <= 3 * 2 * 100_000 // 500  # ~200 requests a round
