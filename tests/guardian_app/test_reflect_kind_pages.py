"""Reflect writes seed 001's bank/world.md (W bullets) and bank/experience.md (B bullets) as audited guardian
writes: each fact once with its entities and source, a second run changes nothing, a rollback restores the page
and its facts are not added again, and the openclaw profile keeps them under memory/bank/."""

from __future__ import annotations

import pytest

from guardian_app.models import FileVersion, WriteGuardianAudit
from guardian_app.reflect.page_writes import source_ref
from guardian_app.reflect.reflect import reflect
from guardian_app.write.rollback import rollback_write

pytestmark = pytest.mark.django_db

WORLD, EXPERIENCE = "bank/world.md", "bank/experience.md"
BULLETS = (
    "- W @Peter: Currently in Marrakech (Nov 27 - Dec 1) for Andy's birthday.",
    "- B @warelay: I fixed the Baileys WS crash by wrapping connection.update in try/catch.",
    "- O(c=0.95) @Peter: Prefers short replies on WhatsApp (<1500 chars); long content goes into a file.",
    "- S Busy week; the migration dominated.",
)


def test_w_and_b_bullets_make_the_world_and_experience_pages(reflect_log, workspace):
    log = reflect_log(*BULLETS)
    day = log.name.removesuffix(".md")

    run = reflect(since="7d")

    world = (workspace / WORLD).read_text(encoding="utf-8")
    experience = (workspace / EXPERIENCE).read_text(encoding="utf-8")
    assert world.startswith("# World\n")
    assert (
        f"- {day} · world · @Peter: Currently in Marrakech (Nov 27 - Dec 1) for Andy's birthday. — `memory/{day}.md#L6`"
        in world
    )
    assert f"- {day} · experience · @warelay: I fixed the Baileys WS crash" in experience
    # Each page holds its own kind only: no opinion, no summary, no experience on the world page.
    assert "Prefers short replies" not in world + experience and "Busy week" not in world + experience
    assert "Baileys" not in world and "Marrakech" not in experience
    audits = {a.target_file: a for a in WriteGuardianAudit.objects.filter(source="reflect")}
    for name in (WORLD, EXPERIENCE):
        audit = audits[name]
        assert audit.status == "written" and audit.source_ref == source_ref(run.id, name)
        assert audit.diff.startswith(f"--- a/{name}\n+++ b/{name}\n")
        assert list(FileVersion.objects.filter(file_name=name).values_list("kind", "audit_id")) == [("write", audit.id)]


def test_a_second_run_adds_nothing_and_new_facts_merge(reflect_log, workspace):
    reflect_log(*BULLETS)
    reflect(since="7d")
    before = (workspace / WORLD).read_text(encoding="utf-8")

    again = reflect(since="7d")

    assert (workspace / WORLD).read_text(encoding="utf-8") == before
    assert not WriteGuardianAudit.objects.filter(source_ref=source_ref(again.id, WORLD)).exists()

    reflect_log(*BULLETS, "- W @Acme: Acme moved its office to Porto.")
    reflect(since="7d")
    after = (workspace / WORLD).read_text(encoding="utf-8")
    assert after.count("Currently in Marrakech") == 1 and "@Acme: Acme moved its office to Porto." in after
    assert "2 facts" in after


def test_a_rolled_back_world_write_is_restored_and_not_redone(reflect_log, workspace):
    reflect_log(BULLETS[0])
    reflect(since="7d")
    first = (workspace / WORLD).read_text(encoding="utf-8")
    reflect_log(BULLETS[0], "- W @Peter: Moved to Lisbon in 2026.")
    run = reflect(since="7d")
    audit = WriteGuardianAudit.objects.get(source_ref=source_ref(run.id, WORLD))
    assert "Moved to Lisbon" in (workspace / WORLD).read_text(encoding="utf-8")

    rollback_write(audit, reason="not true", requested_by="operator")

    assert (workspace / WORLD).read_text(encoding="utf-8") == first
    reflect(since="7d")
    assert "Moved to Lisbon" not in (workspace / WORLD).read_text(encoding="utf-8")


def test_a_dry_run_previews_the_pages_and_writes_nothing(reflect_log, workspace):
    reflect_log(*BULLETS)

    run = reflect(since="7d", dry_run=True)

    previews = {p["page"]: p for p in run.stats["pages"]}
    assert previews[WORLD]["status"] == "would_write" and "Marrakech" in previews[WORLD]["diff"]
    assert previews[EXPERIENCE]["status"] == "would_write" and "Baileys" in previews[EXPERIENCE]["diff"]
    assert not (workspace / "bank").exists()


def test_the_openclaw_profile_keeps_them_under_memory_bank(reflect_log, workspace, settings):
    settings.WORKSPACE_PROFILE = "openclaw"
    reflect_log(*BULLETS)

    reflect(since="7d")

    assert "Marrakech" in (workspace / "memory/bank/world.md").read_text(encoding="utf-8")
    assert "Baileys" in (workspace / "memory/bank/experience.md").read_text(encoding="utf-8")
    assert not (workspace / "bank").exists()
    assert WriteGuardianAudit.objects.filter(target_file=WORLD, status="written").count() == 1
