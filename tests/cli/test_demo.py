"""The demo tour runs end to end on the embedded fake namespace."""

from __future__ import annotations

import io

from rich.console import Console

from sbmgmt.cli._demo import EXPLORER_HINT, run_demo


def test_demo_tour_runs_every_step() -> None:
    out = io.StringIO()
    run_demo(None, Console(file=out, width=120, force_terminal=False))
    text = out.getvalue()
    for step in ("schedule 2 messages", "renew all 4 locks in ONE request",
                 "receive the deferred messages", "dead-letter one message",
                 "cancel the scheduled messages", "set/get its state", "list the sessions",
                 "add, list, remove", "the administrator's loop", "tour complete"):
        assert step in text
    assert "state of 'alice': {\"step\": 2}" in text
    assert "state after clearing: (none)" in text
    assert "big-orders" in text and "amount > 100" in text
    assert "MessageLockLostError" in text
    # the administrator's loop: the dead letter found, exported and resubmitted
    assert "found 1 dead letter: order-3 (demo) (sbmgmt peek orders --dead-letter)" in text
    assert "exported 1 JSON line, " in text
    assert "resubmitted 1 of 1 to orders (sbmgmt resubmit orders --yes)" in text
    assert "dead letters left: none" in text
    assert "cancelled 2; 4 messages left to peek, none of them scheduled" in text
    assert text.rstrip().endswith(EXPLORER_HINT)  # what the README promises after the demo
    counts = text[text.index("message counts of every entity"):text.index("errors are typed")]
    orders = next(line for line in counts.splitlines() if " orders " in line)
    # 6 sent, 2 deferred and completed, 1 dead-lettered and resubmitted (active again), 1
    # still locked (active), 2 cancelled
    assert [cell.strip() for cell in orders.split("│")[3:6]] == ["4", "0", "0"]
