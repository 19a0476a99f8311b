"""A batch that fails (its sends refused, so its transaction rolled back) leaves its
messages where they were and free: the report says to run again, and a run at once moves
them (their locks are given back when the run ends, not left to expire)."""

from __future__ import annotations

from fakes import FakeNamespace
from sbmgmt import ManagementClient, Message
from sbmgmt.actions.repair import plan_resubmit, repair

DEAD = 30


def test_a_failed_batchs_messages_can_be_moved_again_at_once() -> None:
    with FakeNamespace() as fake:
        fake.add_queue("q")
        fake.send("q", *(Message(body=b"x", message_id=f"m{i}") for i in range(DEAD)))
        locked = fake.receive_and_lock("q", DEAD)
        with ManagementClient.from_connection_string(fake.connection_string,
                                                     timeout=5) as client:
            client.entity("q").update_disposition([m.lock_token for m in locked], "suspended",
                                                  dead_letter_reason="test")
            # every copy too large for the link: each batch's sends are refused
            failed = repair(client, plan_resubmit(client, "q/$DeadLetterQueue"),
                            set_properties={"pad": "p" * 300_000})
            assert (len(failed.moved), len(failed.failed)) == (0, DEAD)
            assert "message-size-exceeded" in failed.failed[0].reason
            dead = fake.accounting("q/$DeadLetterQueue")
            assert (dead["active"], dead["locked"]) == (DEAD, 0)
            again = repair(client, plan_resubmit(client, "q/$DeadLetterQueue"), idle_wait=1.0)
        assert (len(again.moved), again.not_found) == (DEAD, [])
        assert fake.accounting("q")["active"] == DEAD
