"""``sbmgmt entities --watch``: the namespace's counts sampled again and again, as a table
that redraws in place, or as NDJSON lines for scripts.

Theory of operation. A :class:`~sbmgmt.actions.watch.Sampler` (the library's: the
explorer's charts use the same) lists the namespace every ``--interval`` seconds in this
thread, ``--samples`` times (none given: until Ctrl-C). After each sample the entities the
listing's options choose (``--kind``, ``--match``, ``--dead-lettered``, ``--sort``) are
shown with their change since the first sample and their rates since the one before
(:func:`~sbmgmt.actions.watch.rates`: a count's change per second, the administration API
counting messages, not sends and receives). On a terminal the table redraws in place
(rich's ``Live``, on stdout); elsewhere each sample's table is printed after the last.
With ``-o ndjson`` each sample is one line per entity, written as it is read. Ctrl-C ends
it as it ends every command (exit 130), the terminal left as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from .._wording import utc_time
from ..actions.entities import EntityCounts, list_entities
from ..actions.watch import History, Point, Sample, Sampler, rates
from ._exit import UsageProblem
from ._render import Column, OutputFormat, Record, iso_time, table
from ._state import CliState

__all__ = ["WATCH_COLUMNS", "watch"]

#: The live table's columns: the counts, their change since the start, the rates; at 80
#: columns the name keeps room, and the kind, the scheduled count and the dead-letter
#: change give way first.
WATCH_COLUMNS = (
    Column.of("kind", whole=True, from_width=120),
    Column.of("name"),
    Column.of("active", whole=True),
    Column.of("active_change", "Δ active", whole=True),
    Column.of("dead_letter", "dead-letter", whole=True),
    Column.of("dead_letter_change", "Δ dead-letter", whole=True, from_width=100),
    Column.of("scheduled", whole=True, from_width=110),
    Column.of("in_per_second", "in/s", whole=True),
    Column.of("out_per_second", "out/s", whole=True),
)

Choose = Callable[[list[Record]], list[Record]]


def _rate(value: float | None) -> float | None:
    return None if value is None else round(value, 2)


def _change(first: int | None, now: int | None) -> int | None:
    return None if first is None or now is None else now - first


def _record(sample: Sample, number: int, counts: EntityCounts, first: EntityCounts,
            points: list[Point]) -> Record:
    """One entity at one sample: its counts, the change since it was first listed, the
    rates since the sample before (None on its first)."""
    moved = rates(points[-2:])
    latest = moved[-1] if moved else None
    return {
        "time": iso_time(sample.time), "sample": number, **counts.as_record(),
        "active_change": _change(first.active, counts.active),
        "dead_letter_change": _change(first.dead_letter, counts.dead_letter),
        "in_per_second": _rate(None if latest is None else latest.incoming),
        "out_per_second": _rate(None if latest is None else latest.outgoing),
        "dead_lettered_per_second": _rate(None if latest is None else latest.dead_lettered),
    }


def _records(history: History, sample: Sample, number: int, chosen: Choose,
             first: dict[str, EntityCounts]) -> list[Record]:
    """The sample's entities as records (``first``: each entity as it was first listed,
    added to as new ones appear)."""
    return chosen([_record(sample, number, counts, first.setdefault(counts.name, counts),
                           history.points(counts.name)) for counts in sample.entities])


def _heading(sample: Sample, number: int, sampler: Sampler) -> str:
    return (f"{utc_time(sample.time)} UTC · sample {number} · listed in {sample.took:.2f} s"
            f" · every {sampler.interval:g} s")


def watch(state: CliState, admin: Any, chosen: Choose, *, interval: float,
          samples: int | None) -> None:
    """Sample the namespace through ``admin`` and show each sample (see the module).

    Args:
        state: The command's state (its output format).
        admin: The administration client.
        chosen: Chooses and orders an entity list's records (the listing's options).
        interval: Seconds between two samples.
        samples: How many samples (None: until Ctrl-C).

    Raises:
        UsageProblem: ``-o json`` (one document, which a watch never finishes).
        ServiceBusManagementError: A listing failed.
    """
    if state.output is OutputFormat.JSON:
        raise UsageProblem("--watch writes a live table (-o table) or a line per entity and "
                           "sample (-o ndjson), not -o json (one document that a watch "
                           "never finishes)")
    # The rates need the sample before; the change since the start is kept aside.
    sampler = Sampler(lambda: list_entities(admin), interval=interval, history=History(2))
    shown = _numbered(sampler, samples, chosen)
    if state.output is OutputFormat.NDJSON:
        for _, records in shown:
            state.renderer.records(records, WATCH_COLUMNS)
        return
    console = Console()
    if not console.is_terminal:
        for heading, records in shown:
            console.print(Text(heading))
            console.print(table(records, WATCH_COLUMNS, console.width))
        return
    with Live(console=console, auto_refresh=False, transient=False) as live:
        for heading, records in shown:
            live.update(Group(Text(f"{heading} · Ctrl-C ends", style="dim"),
                              table(records, WATCH_COLUMNS, console.width)), refresh=True)


def _numbered(sampler: Sampler, samples: int | None,
              chosen: Choose) -> Iterator[tuple[str, list[Record]]]:
    first: dict[str, EntityCounts] = {}
    for number, sample in enumerate(sampler.samples(samples), start=1):
        records = _records(sampler.history, sample, number, chosen, first)
        yield _heading(sample, number, sampler), records
