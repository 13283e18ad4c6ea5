"""One fact once (issue 21, item 2): paraphrases refused by WordLlama similarity, measured against the lexical
check on a labelled table whose threshold was chosen on its dev split (QUALITY.md has the figures)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from guardian_app.models import WriteGuardianAudit
from guardian_app.write import similarity

pytestmark = pytest.mark.django_db
Status = WriteGuardianAudit.Status
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "memory_eval"

spec = importlib.util.spec_from_file_location("evaluate_paraphrase", FIXTURES / "evaluate_paraphrase.py")
evaluate_paraphrase = importlib.util.module_from_spec(spec)
sys.modules["evaluate_paraphrase"] = evaluate_paraphrase
spec.loader.exec_module(evaluate_paraphrase)


def test_the_threshold_in_settings_is_the_one_the_dev_split_chooses(settings):
    rows = [r for r in evaluate_paraphrase.load() if r["split"] == "dev"]
    chosen = evaluate_paraphrase.choose(evaluate_paraphrase.scores(rows, similarity.semantic))
    assert settings.GUARDIAN_PARAPHRASE_THRESHOLD == pytest.approx(chosen, abs=0.002)


def test_on_held_out_pairs_the_semantic_check_finds_more_paraphrases_without_refusing_new_facts(settings):
    rows = [r for r in evaluate_paraphrase.load() if r["split"] == "heldout"]
    assert len(rows) >= 40
    semantic = evaluate_paraphrase.figures(
        [(float(similarity.is_paraphrase(r["fact"], r["stored"])), r["same"]) for r in rows], 1.0
    )
    lexical = evaluate_paraphrase.figures(
        evaluate_paraphrase.scores(rows, similarity.lexical), settings.GUARDIAN_NEAR_DUPLICATE_THRESHOLD
    )
    assert semantic["recall"] > lexical["recall"]
    assert semantic["false_refusals"] <= 2


def test_a_paraphrase_is_refused_and_a_different_fact_with_a_new_name_is_written(write, user_md):
    user_md.write_text("## Profile\n\n- Is a hospital nurse.\n")
    assert similarity.semantic("Works as a nurse in a hospital.", "Is a hospital nurse.") >= 0.886
    refused = write("Works as a nurse in a hospital.")
    assert refused.status == Status.REFUSED and "paraphrase" in refused.reason
    written = write("Her colleague Marta is a hospital nurse.")
    assert written.status == Status.WRITTEN


def test_the_semantic_check_can_be_switched_off(write, user_md, settings):
    settings.GUARDIAN_PARAPHRASE_THRESHOLD = 1.5
    user_md.write_text("## Profile\n\n- Is a hospital nurse.\n")
    assert write("Works as a nurse in a hospital.").status == Status.WRITTEN


@pytest.mark.parametrize(
    ("fact", "stored", "same"),
    [
        ("Keep it brief.", "Prefers short answers.", True),
        ("The agent should not pad its replies, terse is fine.", "用户希望回答简洁一些。", True),
        ("Prefers detailed answers.", "Prefers short answers.", False),
        ("Prefers detailed answers for maths.", "Prefers short answers.", False),
        ("Likes short walks.", "Prefers short answers.", False),
        ("Avoid emoji in replies.", "Never use emojis in answers.", True),
    ],
)
def test_the_attribute_rule_reads_answer_length_tone_and_emoji_as_one_attribute(fact, stored, same):
    assert (similarity.style_attribute(fact) == similarity.style_attribute(stored) is not None) is same


def test_on_held_out_pairs_the_attribute_rule_adds_recall_without_false_refusals():
    rows = [r for r in evaluate_paraphrase.load() if r["split"] == "heldout"]
    dev = [r for r in evaluate_paraphrase.load() if r["split"] == "dev"]
    methods = evaluate_paraphrase.methods()
    shipped, before = (
        methods["attribute rule, lexical or guarded WordLlama (shipped)"],
        methods["lexical or guarded WordLlama"],
    )
    figures = {}
    for name, score in (("shipped", shipped), ("before", before)):
        threshold = evaluate_paraphrase.choose(evaluate_paraphrase.scores(dev, score))
        figures[name] = evaluate_paraphrase.figures(evaluate_paraphrase.scores(rows, score), threshold)
    negatives = sum(not r["same"] for r in rows)
    assert figures["shipped"]["recall"] > figures["before"]["recall"]
    assert figures["shipped"]["false_refusals"] <= max(figures["before"]["false_refusals"], 0.05 * negatives)
