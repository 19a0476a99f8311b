"""The explorer's entity forms in Chromium (the fixtures of tests/explorer/conftest.py: the
embedded fake and ``python -m fakes``, each serving tests/explorer/config.json): create, edit
and delete queues, subscriptions and rules, each confirmed, checked through the official
administration client."""

from __future__ import annotations

from typing import Any

from sbmgmt.message import Message
from tests.explorer.conftest import Served

BILLING = "events/Subscriptions/billing"


def confirm(page: Any, form: str, said: str) -> None:
    """Submit ``form``, check the question, answer yes, wait for what was done."""
    page.locator(f"{form} button[type=submit]").click()
    question = page.locator(".confirm")
    question.wait_for()
    assert said in question.inner_text(), question.inner_text()
    question.locator("button[type=submit]").click()
    question.wait_for(state="detached")


def test_a_queue_is_created_edited_and_deleted_with_its_messages(page: Any,
                                                                  served: Served) -> None:
    page.goto(f"{served.base_url}/")
    page.locator("[data-testid=new-entity-link]").click()
    page.wait_for_url("**/entities/new")
    form = page.locator("[data-testid=new-entity]")
    form.locator("input[name=name]").fill("made-here")
    form.locator("input[name=LockDuration]").fill("PT30S")
    form.locator("input[name=MaxDeliveryCount]").fill("25")
    confirm(page, "[data-testid=new-entity]", "Create queue made-here?")
    page.locator(".notice", has_text="created queue made-here").wait_for()
    made = served.admin.get_queue("made-here")
    assert (made.lock_duration.total_seconds(), made.max_delivery_count) == (30, 25)

    page.goto(f"{served.base_url}/entity/edit?path=made-here&kind=queue")
    form = page.locator("[data-testid=edit-entity]")
    assert form.locator("input[name=MaxDeliveryCount]").input_value() == "25"
    assert form.locator("select[name=RequiresSession]").is_disabled()
    form.locator("input[name=LockDuration]").fill("soon")
    form.locator("button[type=submit]").click()
    refused = page.locator(".error", has_text="not changed: LockDuration")
    refused.wait_for()
    assert "'soon' is not an ISO 8601 duration" in refused.inner_text()
    form.locator("input[name=LockDuration]").fill("PT30S")
    form.locator("input[name=MaxDeliveryCount]").fill("30")
    form.locator("select[name=Status]").select_option("Disabled")
    confirm(page, "[data-testid=edit-entity]",
            "Update queue made-here: MaxDeliveryCount 25 -> 30; Status Active -> Disabled?")
    page.locator(".notice", has_text="updated queue made-here").wait_for()
    made = served.admin.get_queue("made-here")
    assert (made.max_delivery_count, made.status) == (30, "Disabled")

    model = served.admin.get_queue("made-here")
    model.status = "Active"
    served.admin.update_queue(model)
    with served.client.entity("made-here").sender() as sender:
        sender.send_messages([Message(body=b"one"), Message(body=b"two")])
    page.goto(f"{served.base_url}/entity/edit?path=made-here&kind=queue")
    page.locator("[data-testid=delete-entity] button[type=submit]").click()
    question = page.locator(".confirm")
    assert "Delete queue made-here (holds 2 messages)?" in question.inner_text()
    question.locator("button[type=button]").click()  # Cancel
    question.wait_for(state="detached")
    assert served.admin.get_queue("made-here").name == "made-here"
    confirm(page, "[data-testid=delete-entity]", "(holds 2 messages)")
    page.locator(".notice", has_text="deleted queue made-here (it held 2 messages)").wait_for()
    assert "made-here" not in {q.name for q in served.admin.list_queues()}


def test_a_subscription_is_created_and_its_rules_added_and_deleted(page: Any,
                                                                   served: Served) -> None:
    page.goto(f"{served.base_url}/entities/new?kind=subscription&topic=events")
    form = page.locator("[data-testid=new-entity]")
    form.locator("input[name=name]").fill("made-sub")
    form.locator("select[name=RequiresSession]").select_option("true")
    confirm(page, "[data-testid=new-entity]", "Create subscription events/Subscriptions/made-sub")
    page.locator(".notice", has_text="created subscription events/Subscriptions/made-sub")\
        .wait_for()
    assert served.admin.get_subscription("events", "made-sub").requires_session is True

    page.goto(f"{served.base_url}/entity/edit?path={BILLING}&kind=subscription")
    rules = page.locator("[data-testid=rule-form]")
    rules.locator("input[name=name]").fill("eu")
    rules.locator("select[name=filter_type]").select_option("correlation")
    rules.locator("input[name=Label]").fill("invoice")
    rules.locator("textarea[name=properties]").fill("region=eu")
    rules.locator("input[name=action]").fill("SET tier = 'A'")
    confirm(page, "[data-testid=rule-form]", "Create rule events/Subscriptions/billing/Rules/eu")
    page.locator(".notice", has_text="created rule").wait_for()
    made = {rule.name: rule for rule in served.admin.list_rules("events", "billing")}
    assert made["eu"].filter.label == "invoice"
    assert made["eu"].filter.properties == {"region": "eu"}
    assert made["eu"].action.sql_expression == "SET tier = 'A'"

    page.goto(f"{served.base_url}/entity/edit?path={BILLING}&kind=subscription")
    row = page.locator("tr[data-rule='eu']")
    assert "Label = invoice" in row.inner_text()
    confirm(page, "tr[data-rule='eu'] form", "Delete rule events/Subscriptions/billing/Rules/eu?")
    page.locator(".notice", has_text="deleted rule").wait_for()
    assert "eu" not in {rule.name for rule in served.admin.list_rules("events", "billing")}
