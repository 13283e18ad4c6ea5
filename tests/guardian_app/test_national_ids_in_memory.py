"""National id numbers never reach a memory file: the heuristic guardian and the LLM guardian both refuse a fact
that holds one, and an LLM reply that would add one is refused too (issue 18)."""

from __future__ import annotations

import pytest

from guardian_app.models import WriteGuardianAudit
from guardian_app.write.edits import check_result

pytestmark = pytest.mark.django_db
Status = WriteGuardianAudit.Status

CN_ID = "110105198001010016"
FACTS = [
    f"The user's resident identity number is {CN_ID}.",
    f"用户的身份证号是{CN_ID}。",
    "Alice's identity card: 440308 19900307 2377.",
    "The user's SSN is 536-22-1048.",
    "Bob's national insurance number is AB 12 34 56 C.",
]


@pytest.mark.parametrize("fact", FACTS)
def test_the_heuristic_guardian_refuses_a_national_id(write, workspace, fact):
    (workspace / "MEMORY.md").write_text("## Facts\n\n- The launch is on Friday.\n")

    audit = write(fact, file="MEMORY.md")

    assert audit.status == Status.REFUSED, audit.reason
    assert (workspace / "MEMORY.md").read_text() == "## Facts\n\n- The launch is on Friday.\n"


@pytest.mark.parametrize("fact", FACTS)
def test_the_llm_guardian_refuses_a_national_id_before_asking_the_model(fake_llm, settings, write, workspace, fact):
    settings.LLM_MAX_RETRIES = 1
    audit = write(fact, file="MEMORY.md")

    assert audit.status == Status.REFUSED and "secret" in audit.reason
    assert not (workspace / "MEMORY.md").exists()
    assert not [body for body in fake_llm.requests if "messages" in body], "the fact reached the model"


def test_an_llm_reply_that_would_add_a_national_id_is_refused(fake_llm, settings, write, workspace):
    settings.LLM_MAX_RETRIES = 1
    fake_llm.queue(
        {
            "action": "write",
            "reason": "a fact",
            "edits": [{"op": "append", "section": "Facts", "text": f"- ID {CN_ID}"}],
        }
    )

    audit = write("The user keeps a copy of the identity card at home.", file="MEMORY.md")

    assert audit.status == Status.REFUSED and "secret" in audit.reason
    assert not (workspace / "MEMORY.md").exists() or CN_ID not in (workspace / "MEMORY.md").read_text()


@pytest.mark.parametrize("line", [f"- ID {CN_ID}", "- SSN 536-22-1048", "- NI number AB123456C"])
def test_the_final_check_refuses_an_added_national_id(line):
    assert "secret" in (check_result("## Facts\n\n- a\n", f"## Facts\n\n- a\n{line}\n") or "")


@pytest.mark.parametrize(
    "line",
    ["- Order 202401150001234567 shipped", "- Ticket 123-45-6789 reopened", "- Part AB123456E is out of stock"],
)
def test_numbers_that_only_look_like_ids_are_written(line):
    assert check_result("## Facts\n\n- a\n", f"## Facts\n\n- a\n{line}\n") is None
