"""sbmgmt.actions.watch without a namespace: the history's rings, the rates, the movers and
the sampler's pace, on made-up listings and clocks handed in (no wall clock)."""

from __future__ import annotations

import threading

import pytest

from sbmgmt.actions.entities import EntityCounts, EntityKind
from sbmgmt.actions.watch import NAMESPACE, History, Sample, Sampler, rates


def queue(name: str, active: int, dead: int = 0) -> EntityCounts:
    return EntityCounts(EntityKind.QUEUE, name, active=active, dead_letter=dead, scheduled=0,
                        transfer=0, transfer_dead_letter=0, total=active + dead)


def topic(name: str) -> EntityCounts:
    return EntityCounts(EntityKind.TOPIC, name, scheduled=0)


def sample(at: float, *entities: EntityCounts) -> Sample:
    return Sample(at, 0.01, entities)


def test_the_history_keeps_its_last_samples_and_its_memory_stays_fixed() -> None:
    history = History(5)
    history.add(sample(0.0, queue("q", 0)))
    held = history.memory()
    for second in range(1, 50):
        history.add(sample(float(second), queue("q", second)))
    assert [p.active for p in history.points("q")] == [45, 46, 47, 48, 49]
    assert [p.at for p in history.points("q")] == [45.0, 46.0, 47.0, 48.0, 49.0]
    assert history.series("q", "active", 3) == [47, 48, 49]
    assert history.memory() == held  # 50 samples in the space of 5


def test_an_entity_created_later_has_points_from_its_first_listing_and_a_deleted_one_none(
        ) -> None:
    history = History(10)
    history.add(sample(0.0, queue("old", 1)))
    history.add(sample(1.0, queue("old", 2), queue("new", 7)))
    history.add(sample(2.0, queue("new", 8)))
    assert [p.active for p in history.points("new")] == [7, 8]
    assert history.points("old") == []
    assert history.entities() == [("new", EntityKind.QUEUE)]


def test_a_topic_has_no_active_count_and_the_namespace_totals_leave_topics_out() -> None:
    history = History(4)
    history.add(sample(0.0, queue("a", 2, 1), topic("t"),
                       EntityCounts(EntityKind.SUBSCRIPTION, "t/Subscriptions/s", active=3,
                                    dead_letter=0, scheduled=4, transfer=0,
                                    transfer_dead_letter=0, total=7)))
    (point,) = history.points("t")
    assert point.active is None and point.scheduled == 0
    (total,) = history.points(NAMESPACE)
    assert (total.active, total.dead_letter, total.scheduled, total.total) == (5, 1, 4, 10)


def test_rates_are_the_total_s_rise_and_fall_per_second() -> None:
    history = History(10)
    for at, active, dead in ((0.0, 0, 0), (2.0, 10, 0), (4.0, 4, 2), (5.0, 4, 2)):
        history.add(sample(at, queue("q", active, dead)))
    found = rates(history.points("q"))
    assert [(r.incoming, r.outgoing, r.dead_lettered) for r in found] == [
        (5.0, 0.0, 0.0), (0.0, 2.0, 1.0), (0.0, 0.0, 0.0)]
    history.add(sample(6.0, topic("q")))  # now a topic: no total, no rate
    (gone,) = rates(history.points("q")[-2:]) if len(history.points("q")) > 1 else (None,)
    assert gone is None


def test_the_dead_letter_queue_that_grew_most_in_the_window_moves_first() -> None:
    history = History(100)
    for minute in range(10):
        history.add(sample(minute * 60.0, queue("steady", 0, 50), queue("slow", 0, minute),
                           queue("fast", 0, 0 if minute < 7 else 10 * (minute - 6)),
                           queue("drained", 0, 100 - minute)))
    movers = history.movers(3 * 60.0)  # minutes 6 to 9
    assert [(m.name, m.before, m.now, m.change) for m in movers] == [
        ("fast", 0, 30, 30), ("slow", 6, 9, 3)]
    assert [m.name for m in history.movers(3600.0, most=1)] == ["fast"]


def test_a_history_of_fewer_than_two_samples_is_refused() -> None:
    with pytest.raises(ValueError, match="2 samples or more, not 1"):
        History(1)


def test_the_sampler_s_times_advance_by_the_monotonic_clock_from_the_wall_clock() -> None:
    ticks = iter([100.0, 100.0, 100.25, 102.0, 102.5])  # origin, then (start, end) a sample
    listings = iter([[queue("q", 1)], [queue("q", 3)]])
    sampler = Sampler(lambda: next(listings), interval=2.0, clock=lambda: 1_000_000.0,
                      monotonic=lambda: next(ticks))
    first, second = sampler.sample(), sampler.sample()
    assert (first.at, first.took, second.at, second.took) == (1_000_000.0, 0.25,
                                                             1_000_002.0, 0.5)
    assert [r.incoming for r in rates(sampler.history.points("q"))] == [1.0]


def test_a_failed_listing_is_kept_as_the_sampler_s_failure_and_the_next_one_clears_it(
        ) -> None:
    failures = iter([RuntimeError("the administration API did not answer")])

    def read() -> list[EntityCounts]:
        failure = next(failures, None)
        if failure is not None:
            raise failure
        return [queue("q", 1)]

    sampler = Sampler(read, interval=0.01)
    with pytest.raises(RuntimeError):
        sampler.sample()
    assert sampler.failure == "the administration API did not answer"
    sampler.sample()
    assert sampler.failure is None


def test_the_sampler_s_thread_keeps_sampling_after_a_failure_and_stops_when_told() -> None:
    calls = 0
    third = threading.Event()

    def read() -> list[EntityCounts]:
        nonlocal calls
        calls += 1
        if calls == 3:
            third.set()
        if calls == 1:
            raise RuntimeError("refused")
        return [queue("q", calls)]

    with Sampler(read, interval=0.01) as sampler:
        assert third.wait(10)
    stopped_at = calls
    assert sampler.failure is None and stopped_at >= 3
    assert [p.active for p in sampler.history.points("q")][:2] == [2, 3]
    assert calls == stopped_at  # nothing after stop()


def test_samples_ends_after_its_count_and_an_interval_must_be_positive() -> None:
    sampler = Sampler(lambda: [queue("q", 0)], interval=0.01)
    assert len(list(sampler.samples(3))) == 3
    with pytest.raises(ValueError, match="above 0 s, not 0"):
        Sampler(list, interval=0)
