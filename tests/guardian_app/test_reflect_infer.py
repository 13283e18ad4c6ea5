"""Reflect's infer stage: untyped daily-log lines become ``## Retain`` bullets (W/B/O/S with @entities, relative
days made absolute) by one audited write per log; a second run adds nothing, a rollback is not redone; and the
offline rules measured on a labelled table (dev rows tune them, held-out rows only measure) beat "everything is W"."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from pathlib import Path

import pytest

from guardian_app.models import WriteGuardianAudit
from guardian_app.recall.retain import PREFIX_FOR_KIND, infer_kind
from guardian_app.reflect.page_writes import source_ref
from guardian_app.reflect.pages import compose_retain
from guardian_app.reflect.reflect import reflect
from guardian_app.write.rollback import rollback_write

TABLE = Path(__file__).parent / "data" / "reflect_infer_labels.tsv"
DAY = dt.date(2026, 11, 20)
LOG = f"memory/{DAY.isoformat()}.md"
BODY = f"""# {DAY.isoformat()}

Peter moved to Lisbon today and works at Revolut.
I fixed the reminder scheduler after Peter reported the timezone bug.
Peter prefers voice calls over long chats.
Busy day: mostly the Lisbon move and one bug.
ok

```
deploy --force
```
"""


def rows(split: str) -> list[tuple[str, str]]:
    out = []
    for line in TABLE.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or not line.strip():
            continue
        part, label, text = line.split("\t")
        if part == split:
            out.append((label, text))
    return out


def precision(split: str, predict) -> tuple[float, dict[str, float | None]]:
    data = rows(split)
    hits, made = Counter(), Counter()
    correct = 0
    for label, text in data:
        got = predict(text)
        made[got] += 1
        hits[got] += got == label
        correct += got == label
    per_type = {t: (hits[t] / made[t] if made[t] else None) for t in "WBOS"}
    return correct / len(data), per_type


def rules(text: str) -> str:
    return PREFIX_FOR_KIND[infer_kind(text)[0]]


def test_the_rules_beat_everything_is_w_on_the_held_out_rows():
    assert len(rows("dev")) >= 30 and len(rows("held")) >= 30
    accuracy, per_type = precision("held", rules)
    baseline, base_types = precision("held", lambda _text: "W")
    print(f"held-out accuracy {accuracy:.3f} (baseline {baseline:.3f}); precision {per_type}; baseline {base_types}")
    assert accuracy >= 0.8 and accuracy >= baseline + 0.4
    assert all(p is not None and p >= 0.7 for p in per_type.values()), per_type


@pytest.mark.django_db
def test_untyped_lines_become_retain_bullets_by_an_audited_write(write_md, workspace):
    write_md(LOG, BODY)

    run = reflect(since=DAY.isoformat(), until=DAY.isoformat())

    text = (workspace / LOG).read_text(encoding="utf-8")
    assert text.startswith(BODY) and "\n## Retain\n" in text
    retain = text.split("## Retain\n", 1)[1]
    assert f"- W @Lisbon @Peter: Peter moved to Lisbon on {DAY.isoformat()} and works at Revolut." in retain
    assert "- B @Peter: I fixed the reminder scheduler" in retain
    assert "- O(c=0.75) @Peter: Peter prefers voice calls" in retain
    assert "- S @Lisbon: Busy day: mostly the Lisbon move and one bug." in retain
    assert "deploy --force" not in retain and "- W ok" not in retain
    audit = WriteGuardianAudit.objects.get(source_ref=source_ref(run.id, LOG))
    assert audit.status == "written" and audit.target_file == LOG and audit.source == "reflect"
    assert audit.diff.count("\n+- ") == 4
    # The inferred bullets are this run's typed facts: Peter's page and bank/world.md have them.
    assert "Revolut" in (workspace / "bank/world.md").read_text(encoding="utf-8")
    assert "prefers voice calls" in (workspace / "bank/opinions.md").read_text(encoding="utf-8")
    assert {r["page"] for r in run.stats["retain"]} == {LOG}

    again = reflect(since=DAY.isoformat(), until=DAY.isoformat())

    assert (workspace / LOG).read_text(encoding="utf-8") == text
    assert not WriteGuardianAudit.objects.filter(source_ref=source_ref(again.id, LOG)).exists()


@pytest.mark.django_db
def test_a_rolled_back_inference_is_restored_and_not_redone(write_md, workspace):
    write_md(LOG, BODY)
    run = reflect(since=DAY.isoformat(), until=DAY.isoformat())
    audit = WriteGuardianAudit.objects.get(source_ref=source_ref(run.id, LOG))

    rollback_write(audit, reason="wrong types", requested_by="operator")

    assert (workspace / LOG).read_text(encoding="utf-8") == BODY
    reflect(since=DAY.isoformat(), until=DAY.isoformat())
    assert (workspace / LOG).read_text(encoding="utf-8") == BODY


@pytest.mark.django_db
def test_a_written_retain_section_is_extended_and_not_repeated(write_md, workspace):
    body = (
        f"# {DAY.isoformat()}\n\nPeter prefers voice calls over long chats.\nDeployed the gateway to the Castle.\n\n"
        "## Retain\n- O(c=0.9) @Peter: Peter prefers voice calls over long chats.\n\n## Later\nnotes\n"
    )
    write_md(LOG, body)

    reflect(since=DAY.isoformat(), until=DAY.isoformat())

    text = (workspace / LOG).read_text(encoding="utf-8")
    assert text.count("prefers voice calls") == 2  # the line and the bullet written by hand, nothing inferred
    assert "long chats.\n- B Deployed the gateway to the Castle.\n\n## Later\nnotes\n" in text


def test_compose_retain_adds_a_section_at_the_end():
    assert compose_retain("# Day\nline", ["- W a"]) == "# Day\nline\n\n## Retain\n- W a\n"
    assert compose_retain("# Day\n", []) == "# Day\n"


@pytest.mark.django_db
def test_a_dry_run_lists_the_bullets_and_writes_nothing(write_md, workspace):
    write_md(LOG, BODY)

    run = reflect(since=DAY.isoformat(), until=DAY.isoformat(), dry_run=True)

    (record,) = run.stats["retain"]
    assert record["page"] == LOG and record["status"] == "would_write" and len(record["bullets"]) == 4
    assert (workspace / LOG).read_text(encoding="utf-8") == BODY
    assert not WriteGuardianAudit.objects.filter(target_file=LOG).exists()


@pytest.mark.django_db
def test_lines_appended_below_the_retain_section_are_inferred_on_the_next_run(write_md, workspace):
    write_md(LOG, BODY)
    reflect(since=DAY.isoformat(), until=DAY.isoformat())
    first = (workspace / LOG).read_text(encoding="utf-8")
    (workspace / LOG).write_text(first + "Booked the train to Porto for Peter.\n", encoding="utf-8")

    reflect(since=DAY.isoformat(), until=DAY.isoformat())

    text = (workspace / LOG).read_text(encoding="utf-8")
    assert text.startswith(first) and text.endswith(
        "Booked the train to Porto for Peter.\n- B @Peter: Booked the train to Porto for Peter.\n"
    )
    assert text.count("## Retain") == 1
