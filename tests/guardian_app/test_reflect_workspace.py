"""Bank pages in the workspace: names made only by ``bank_page``, checked against one exact pattern (in code
and in the database), written through the write guardian with locks, history, drift checks and rollback."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from guardian_app.errors import UnknownFile
from guardian_app.models import FileSnapshot, FileVersion, WorkspaceFile, WriteGuardianAudit
from guardian_app.write import history, paths
from guardian_app.write.guardian import guard_write
from guardian_app.write.rollback import rollback_write

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("entity", "page"),
    [
        ("Peter", "bank/entities/Peter.md"),
        ("@Peter", "bank/entities/Peter.md"),
        ("The Castle", "bank/entities/The-Castle.md"),
        ("The-Castle", "bank/entities/The-Castle.md"),
        ("warelay", "bank/entities/warelay.md"),
        ("node.js", "bank/entities/node-js.md"),
        ("snake_case", "bank/entities/snake_case.md"),
        ("Café", "bank/entities/Cafe.md"),
        ("../../etc/passwd", "bank/entities/etc-passwd.md"),
        ("..", None),
        ("", None),
    ],
)
def test_bank_page_makes_a_safe_name_from_an_entity(entity, page):
    if page is None:
        with pytest.raises(UnknownFile):
            paths.bank_page(entity)
    else:
        assert paths.bank_page(entity) == page


def test_names_that_lose_letters_get_a_hash_and_never_collide():
    first, second = paths.bank_page("小明"), paths.bank_page("小红")
    assert first != second
    assert first.startswith("bank/entities/") and first.endswith(".md")
    assert paths.bank_page("Peter小明").startswith("bank/entities/Peter-")
    long = paths.bank_page("x" * 300)
    assert len(long) == len("bank/entities/") + 64 + len(".md")


@pytest.mark.parametrize(
    "name",
    [
        "bank/opinions.md",
        "bank/world.md",
        "bank/experience.md",
        "bank/entities/Peter.md",
        "USER.md",
        "memory/2025-11-27.md",  # a daily log: reflect adds the Retain bullets it infers
    ],
)
def test_canonical_names(name):
    assert paths.canonical_name(name) == name


@pytest.mark.parametrize(
    "name",
    [
        "bank/../USER.md",
        "bank/entities/../../secret.md",
        "bank/entities/a/b.md",
        "bank/entities/.hidden.md",
        "bank/entities/-dash.md",
        "bank/other.md",
        "bank/entities/Peter.txt",
        "bank/entities/Peter.md\n",
        "/etc/passwd",
        "memory/2025-11-27-topic.md",
        "memory/bank/world.md",
        "bank/entities/" + "x" * 65 + ".md",
        None,
    ],
)
def test_every_other_name_is_unknown(name):
    with pytest.raises(UnknownFile):
        paths.path_for(name)


def test_a_bank_path_stays_in_the_workspace(settings):
    expected = settings.WORKSPACE_DIR / "bank" / "entities" / "Peter.md"
    assert paths.path_for("bank/entities/Peter.md") == expected


def test_a_symlinked_bank_folder_is_refused(settings, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (settings.WORKSPACE_DIR / "bank").symlink_to(outside)
    with pytest.raises(UnknownFile):
        paths.path_for("bank/opinions.md")


@pytest.mark.parametrize("name", ["bank/entities/../x.md", "bank/notes.md", "SECRETS.md", "bank/entities/a b.md"])
def test_the_database_refuses_other_file_names(name):
    with pytest.raises(IntegrityError), transaction.atomic():
        WriteGuardianAudit.objects.create(target_file=name, candidate_fact="x", status="refused", source="reflect")
    with pytest.raises(IntegrityError), transaction.atomic():
        FileSnapshot.objects.create(file_name=name, content="x", content_hash="h")


def test_the_database_accepts_bank_pages():
    WorkspaceFile.objects.create(file_name="bank/entities/The-Castle.md")
    FileSnapshot.objects.create(file_name="bank/opinions.md", content="x", content_hash="h")


def compose_page(text: str):
    def compose(content):
        edits = [{"op": "replace", "find": content, "text": text}] if content else [{"op": "append", "text": text}]
        return {"action": "write", "reason": "test", "edits": edits, "max_removed_lines": 50, "model": "test"}

    return compose


def test_a_composed_page_write_is_an_audit_with_history_and_rolls_back(workspace):
    name = "bank/entities/Peter.md"
    first = guard_write(
        target_file=name,
        candidate_fact="page v1",
        source="reflect",
        source_ref="r1:Peter",
        compose=compose_page("v1\n"),
    )
    second = guard_write(
        target_file=name,
        candidate_fact="page v2",
        source="reflect",
        source_ref="r2:Peter",
        compose=compose_page("v2\n"),
    )
    again = guard_write(
        target_file=name,
        candidate_fact="page v2",
        source="reflect",
        source_ref="r2:Peter",
        compose=compose_page("v3\n"),
    )

    assert (first.status, second.status, again.id) == ("written", "written", second.id)
    assert (workspace / name).read_text() == "v2\n"
    assert second.diff == f"--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-v1\n+v2\n"
    rollback_write(second, reason="wrong", requested_by="test")
    assert (workspace / name).read_text() == "v1\n"
    kinds = list(FileVersion.objects.filter(file_name=name).order_by("seq").values_list("kind", flat=True))
    assert kinds == ["write", "write", "rollback"]


def test_a_composed_write_still_refuses_secrets_and_too_many_removed_lines(workspace):
    name = "bank/opinions.md"
    (workspace / "bank").mkdir()
    (workspace / name).write_text("".join(f"line {i}\n" for i in range(20)))

    secret = guard_write(
        target_file=name,
        candidate_fact="opinions",
        source="reflect",
        source_ref="r1:opinions",
        compose=lambda c: {
            "action": "write",
            "reason": "x",
            "edits": [{"op": "append", "text": "token sk-live-0123456789abcdefghijklmnopqrstuvwx"}],
        },
    )
    wipe = guard_write(
        target_file=name,
        candidate_fact="opinions",
        source="reflect",
        source_ref="r2:opinions",
        compose=lambda c: {"action": "write", "reason": "x", "edits": [{"op": "replace", "find": c, "text": "one\n"}]},
    )

    assert secret.status == "refused" and "secret" in secret.reason
    assert wipe.status == "refused" and "GUARDIAN_MAX_REMOVED_LINES" in wipe.reason
    assert (workspace / name).read_text().startswith("line 0\n")


def test_the_drift_check_records_a_hand_edit_of_a_bank_page(workspace):
    name = "bank/world.md"
    guard_write(
        target_file=name, candidate_fact="world", source="reflect", source_ref="r1:w", compose=compose_page("a\n")
    )
    (workspace / name).write_text("a\nb by hand\n")

    added = history.check_drift()

    assert [(v.file_name, v.kind) for v in added] == [(name, "hand_edit")]


def test_a_bank_page_audit_cannot_be_retried_with_the_guardian(workspace):
    from guardian_app.errors import NotRetryable
    from guardian_app.write.guardian import retry_write

    audit = guard_write(
        target_file="bank/world.md",
        candidate_fact="world",
        source="reflect",
        source_ref="r1:w",
        compose=compose_page("a\n"),
    )
    with pytest.raises(NotRetryable, match="reflect"):
        retry_write(audit, requested_by="operator")
    assert (workspace / "bank/world.md").read_text() == "a\n"
