"""Hybrid merge, the bounded recency and use boost, hit counts, the local embedder, and embeddings through the
official openai SDK (fake endpoint)."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.db import connection

from guardian_app.models import EmbeddingCache, MemoryChunk
from guardian_app.recall import vectors as vectors_module
from guardian_app.recall.embeddings import EmbeddingConfig, batches, embed_texts, from_blob, load_local_embedder
from guardian_app.recall.index import index_workspace
from guardian_app.recall.ranking import boost_factor, merge_scores
from guardian_app.recall.recall import recall, record_hits
from guardian_app.recall.rows import Filters
from guardian_app.recall.vectors import vector_search

pytestmark = pytest.mark.django_db

NOW = dt.datetime(2026, 3, 1, 12, 0, tzinfo=dt.UTC)


def embedding_requests(fake: Any) -> list[dict]:
    return [body for path, body in zip(fake.paths, fake.requests, strict=True) if path.endswith("/embeddings")]


@pytest.fixture
def embeddings(fake_llm: Any, settings: Any) -> Any:
    """The fake endpoint serves /v1/embeddings (hashed bag-of-words vectors, 384 dims)."""
    settings.EMBEDDING_BASE_URL = fake_llm.base_url
    settings.EMBEDDING_API_KEY = "test-key"
    settings.EMBEDDING_MODEL = "fake-embed"
    settings.EMBEDDING_MAX_RETRIES = 2
    settings.EMBEDDING_TIMEOUT_S = 5
    return fake_llm


@pytest.fixture
def notes(write_md: Callable[[str, str], Path]) -> Callable[[str, str], Path]:
    write_md("USER.md", "# User\n\n- Prefers summaries on Fridays.\n- Parked the car in the garage on level 2.\n")
    write_md("TOOLS.md", "# Tools\n\n- The staging server is db-2.internal.\n- Deploy with make deploy.\n")
    return write_md


# --- Recency and use: a bounded boost -------------------------------------------------------------------------
@pytest.mark.parametrize(("age_days", "expected"), [(0, 1.1), (30, 1.05), (60, 1.025), (None, 1.1), (-5, 1.1)])
def test_recency_boost_is_bounded_and_durable_facts_count_as_current(age_days, expected):
    factor = boost_factor(age_days, 0, half_life_days=30, recency_weight=0.1, active_weight=0.1)
    assert factor == pytest.approx(expected)


def test_hits_boost_by_one_plus_a_tenth_of_ln_one_plus_hits():
    factor = boost_factor(None, 10, half_life_days=30, recency_weight=0.1, active_weight=0.1)
    assert factor == pytest.approx(1.1 * (1 + 0.1 * math.log(11)))


def test_the_same_fact_older_ranks_lower_but_never_below_a_tenth_less(write_md, settings):
    settings.RECALL_DECAY_HALF_LIFE_DAYS = 30
    write_md("memory/2026-03-01.md", "# Log\n\n- Renewed the TLS certificate for the wiki.\n")
    write_md("memory/2026-01-30.md", "# Log\n\n- Renewed the TLS certificate for the wiki.\n")
    write_md("memory/2024-12-31.md", "# Log\n\n- Renewed the TLS certificate for the wiki.\n")
    index_workspace()
    midnight = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)  # Daily logs are dated at midnight (TIME_ZONE is UTC here).
    answer = recall("TLS certificate", mode="keyword", now=midnight)
    by_path = {r.path: r for r in answer.results}
    fresh, month, old = (by_path[f"memory/{d}.md"] for d in ("2026-03-01", "2026-01-30", "2024-12-31"))
    assert [r.path for r in answer.results] == [fresh.path, month.path, old.path]
    assert fresh.decay == pytest.approx(1.1, abs=1e-6)
    assert month.score == pytest.approx(fresh.score * 1.05 / 1.1, rel=1e-3)
    assert old.score > fresh.score / 1.1 - 1e-9  # A year older loses at most the 10 % boost.


def test_an_exact_match_a_year_old_beats_a_vague_one_from_today(write_md):
    write_md("memory/2025-03-01.md", "# Log\n\n- The garage door code is 4711, changed after the break-in.\n")
    write_md("memory/2026-03-01.md", "# Log\n\n- Cleaned the garage.\n")
    index_workspace()
    top = recall("garage door code", mode="keyword", now=NOW).results[0]
    assert top.path == "memory/2025-03-01.md"


def test_durable_files_do_not_age(write_md):
    write_md("USER.md", "# User\n\n- Allergic to penicillin.\n")
    index_workspace()
    MemoryChunk.objects.update(timestamp=dt.datetime(2020, 1, 1, tzinfo=dt.UTC))
    assert recall("penicillin", mode="keyword", now=NOW).results[0].decay == pytest.approx(1.1)


def test_a_result_the_agent_uses_often_ranks_above_an_unused_one(write_md):
    write_md("memory/2026-02-20.md", "# Log\n\n- Backup of the wiki runs nightly.\n")
    write_md("memory/2026-02-21.md", "# Log\n\n- Backup of the wiki runs nightly.\n")
    index_workspace()
    first = recall("wiki backup", mode="keyword", now=NOW)
    newer, older = first.results
    assert newer.path == "memory/2026-02-21.md"
    for _ in range(10):
        assert record_hits([older.id]) == 1
    again = recall("wiki backup", mode="keyword", now=NOW)
    assert again.results[0].id == older.id
    assert again.results[0].hits == 10
    age = (NOW - older.timestamp).total_seconds() / 86400
    assert again.results[0].decay == pytest.approx((1 + 0.1 * 2 ** (-age / 30)) * (1 + 0.1 * math.log(11)))


def test_decay_can_be_turned_off(write_md, settings):
    settings.RECALL_DECAY_ENABLED = False
    write_md("memory/2020-01-01.md", "# Log\n\n- An ancient fact about gardening.\n")
    index_workspace()
    assert recall("gardening", mode="keyword", now=NOW).results[0].decay == 1.0


def test_record_hits_ignores_unknown_ids(notes):
    index_workspace()
    chunk_id = MemoryChunk.objects.values_list("id", flat=True).first()
    assert record_hits([chunk_id, chunk_id, 999_999]) == 1
    assert MemoryChunk.objects.get(id=chunk_id).hits == 1
    assert record_hits([]) == 0


# --- Hybrid merge -------------------------------------------------------------------------------------------------
def test_merge_normalises_keyword_scores_and_weights_the_parts():
    merged = merge_scores({1: 8.0, 2: 2.0}, {2: 0.9, 3: -0.2}, vector_weight=0.7, keyword_weight=0.3, hybrid=True)
    assert merged[1] == pytest.approx((0.3 * 1.0, 0.0, 1.0))
    assert merged[2] == pytest.approx((0.7 * 0.9 + 0.3 * 0.25, 0.9, 0.25))
    assert merged[3] == pytest.approx((0.0, 0.0, 0.0))  # A negative cosine counts as no similarity.
    keyword_only = merge_scores({1: 8.0, 2: 2.0}, {}, vector_weight=0.7, keyword_weight=0.3, hybrid=False)
    assert keyword_only[2] == pytest.approx((0.25, 0.0, 0.25))


def test_hybrid_recall_merges_vector_and_keyword_scores(notes, embeddings):
    index_workspace()
    answer = recall("staging server", now=NOW)
    assert answer.mode == "hybrid" and answer.note is None
    top = answer.results[0]
    assert top.source == "TOOLS.md#L3"
    assert top.vector is not None and 0 < top.vector <= 1
    assert top.score == pytest.approx((0.5 * top.vector + 0.5 * top.keyword) * top.decay)


def test_weights_are_settings(notes, embeddings, settings):
    settings.RECALL_VECTOR_WEIGHT, settings.RECALL_KEYWORD_WEIGHT = 0.0, 1.0
    index_workspace()
    top = recall("staging server", now=NOW).results[0]
    assert top.score == pytest.approx(top.keyword * top.decay)


def test_vectors_find_what_the_words_do_not(notes, embeddings, monkeypatch):
    """A semantic model knows "automobile" is a "car"; the fake learns that one synonym here."""
    import tests.fake_llm as fake_module

    plain = fake_module.embed_text
    monkeypatch.setattr(
        fake_module, "embed_text", lambda text, dims=384: plain(text.replace("automobile", "car"), dims)
    )
    index_workspace()
    assert recall("automobile", mode="keyword", now=NOW).results == []
    answer = recall("automobile", now=NOW)
    assert answer.results[0].source == "USER.md#L4"
    assert answer.results[0].keyword == 0.0 and answer.results[0].vector > 0.2


def test_filters_apply_to_vector_candidates_too(notes, embeddings):
    index_workspace()
    answer = recall("staging server", file="USER.md", now=NOW)
    assert answer.results and {r.path for r in answer.results} == {"USER.md"}


def test_with_embeddings_off_recall_is_keyword_only_and_says_so(notes, settings):
    settings.EMBEDDING_BASE_URL = ""
    settings.EMBEDDING_PROVIDER = "none"
    index_workspace()
    answer = recall("staging server", mode="hybrid", now=NOW)
    assert answer.mode == "keyword"
    assert "EMBEDDING_PROVIDER" in answer.note
    assert answer.results[0].vector is None
    assert MemoryChunk.objects.filter(embedding__isnull=False).count() == 0


def test_without_an_endpoint_the_local_model_embeds_and_recall_is_hybrid(notes, settings):
    settings.EMBEDDING_BASE_URL = ""
    report = index_workspace()
    assert report.embedded == MemoryChunk.objects.count() > 0 and report.embedding_error is None
    labels = set(MemoryChunk.objects.values_list("model", flat=True))
    assert labels == {"local/wordllama/l2_supercat-256"}
    blob = MemoryChunk.objects.values_list("embedding", flat=True).first()
    assert from_blob(blob).size == 256
    answer = recall("Where do we deploy?", now=NOW)  # No word in common with "Deploy with make deploy"? "deploy".
    assert answer.mode == "hybrid" and answer.note is None
    assert answer.results[0].source == "TOOLS.md#L4" and answer.results[0].vector > 0.3
    # A paraphrase with no word in common is still found through the vectors.
    paraphrase = recall("which machine hosts the pre-production database", now=NOW)
    assert "TOOLS.md#L3" in [r.source for r in paraphrase.results[:2]]


def test_load_local_embedder_gives_unit_vectors_that_put_paraphrases_close():
    embedder = load_local_embedder()
    assert embedder is load_local_embedder()  # Loaded once per process.
    vectors = embedder.embed(
        ["The cat sleeps on the sofa.", "A kitten naps on the couch.", "Quarterly tax filing.", ""]
    )
    assert vectors.shape == (4, 256) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors[:3], axis=1) == pytest.approx([1, 1, 1], abs=1e-5)
    assert not vectors[3].any()  # Nothing to embed: a zero vector, never NaN.
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2
    reference = embedder.model.embed(["The cat sleeps on the sofa."], norm=True)[0]  # WordLlama's own pooling.
    assert vectors[0] == pytest.approx(reference, abs=1e-5)


def test_a_failing_endpoint_at_query_time_falls_back_to_keywords(notes, embeddings, settings):
    index_workspace()
    settings.EMBEDDING_BASE_URL = "http://127.0.0.1:9/v1"  # Nothing listens on the discard port.
    settings.EMBEDDING_MAX_RETRIES = 0
    answer = recall("staging server", now=NOW)
    assert answer.mode == "keyword" and "embedding endpoint failed" in answer.note
    assert answer.results[0].source == "TOOLS.md#L3"


# --- Embeddings through the SDK: batching, dims, cache, retries ----------------------------------------------------
def test_index_embeds_every_chunk_and_stores_float32_blobs(notes, embeddings):
    report = index_workspace()
    assert report.embedded == 4 and report.embedding_error is None
    rows = list(MemoryChunk.objects.values_list("model", "embedding"))
    assert {model for model, _ in rows} == {"openai-compatible/fake-embed"}
    assert {len(bytes(blob)) for _, blob in rows} == {384 * 4}
    assert EmbeddingCache.objects.count() == 4
    body = embedding_requests(embeddings)[0]
    assert body["model"] == "fake-embed" and body["encoding_format"] == "float" and len(body["input"]) == 4


def test_the_cache_means_a_second_index_makes_no_call(notes, embeddings):
    index_workspace()
    calls = len(embedding_requests(embeddings))
    report = index_workspace(rebuild=True)
    assert report.chunks_added == 4
    assert report.embedded == 0 and report.embedding_cache_hits == 4
    assert len(embedding_requests(embeddings)) == calls
    assert MemoryChunk.objects.filter(embedding__isnull=True).count() == 0


def test_an_edit_embeds_only_the_new_text(notes, embeddings):
    index_workspace()
    notes(
        "USER.md",
        "# User\n\n- Prefers summaries on Fridays.\n- Parked the car in the garage on level 2.\n- New fact.\n",
    )
    before = len(embedding_requests(embeddings))
    report = index_workspace()
    assert report.embedded == 1
    assert embedding_requests(embeddings)[before:][0]["input"] == ["USER › User\n- New fact."]


def test_inputs_are_batched_by_count_and_tokens(notes, embeddings, settings):
    settings.EMBEDDING_BATCH_SIZE = 3
    index_workspace()
    assert [len(body["input"]) for body in embedding_requests(embeddings)] == [3, 1]
    assert list(batches(["a" * 40, "b" * 40, "c" * 40], size=10, max_tokens=20)) == [[0, 1], [2]]


def test_dimensions_are_asked_for_when_set(notes, embeddings, settings):
    settings.EMBEDDING_DIMENSIONS = 64
    index_workspace()
    assert embedding_requests(embeddings)[0]["dimensions"] == 64
    assert {len(bytes(b)) for b in MemoryChunk.objects.values_list("embedding", flat=True)} == {64 * 4}
    assert recall("staging server", now=NOW).mode == "hybrid"


def test_a_new_model_re_embeds_every_chunk(notes, embeddings, settings):
    index_workspace()
    settings.EMBEDDING_MODEL = "fake-embed-2"
    report = index_workspace()
    assert report.embedded == 4
    assert set(MemoryChunk.objects.values_list("model", flat=True)) == {"openai-compatible/fake-embed-2"}


def test_an_endpoint_outage_leaves_keyword_recall_and_the_next_run_catches_up(notes, embeddings, settings):
    good = settings.EMBEDDING_BASE_URL
    settings.EMBEDDING_BASE_URL = "http://127.0.0.1:9/v1"
    settings.EMBEDDING_MAX_RETRIES = 0
    report = index_workspace()
    assert report.chunks_added == 4 and report.embedding_error
    assert MemoryChunk.objects.filter(model="").count() == 4
    assert recall("staging", mode="keyword", now=NOW).results
    settings.EMBEDDING_BASE_URL = good
    report = index_workspace()
    assert report.embedded == 4 and not MemoryChunk.objects.filter(model="").exists()


def test_transient_errors_are_retried_by_the_sdk(embeddings, monkeypatch):
    import tests.fake_llm as fake_module

    real = fake_module._embedding_response
    failures = {"left": 1}

    def flaky(body: dict) -> dict:
        if failures["left"]:
            failures["left"] -= 1
            raise RuntimeError("dropped connection")  # The handler dies: the client sees a broken response.
        return real(body)

    monkeypatch.setattr(fake_module, "_embedding_response", flaky)
    config = EmbeddingConfig(base_url=embeddings.base_url, api_key="k", model="fake-embed", max_retries=2, timeout_s=5)
    vectors = embed_texts(["hello world"], config=config)
    assert vectors[0].shape == (384,) and failures["left"] == 0
    assert len(embedding_requests(embeddings)) == 2


# sqlite-vec's vec0 table: tests/guardian_app/test_vec_table.py


def test_after_a_query_embedding_failure_recall_stops_waiting_for_the_endpoint(
    notes, embeddings, settings, monkeypatch
):
    from guardian_app.recall import embeddings as embeddings_module

    index_workspace()
    monkeypatch.setattr(embeddings_module, "_query_endpoint_down_until", {})  # This test's failures stay here.
    settings.EMBEDDING_BASE_URL = "http://127.0.0.1:9/v1"
    calls: list[int] = []
    real = embeddings_module.embed_texts
    monkeypatch.setattr(
        embeddings_module, "embed_texts", lambda texts, *, config: calls.append(1) or real(texts, config=config)
    )
    first = recall("staging server", now=NOW)
    second = recall("deploy", now=NOW)
    assert first.mode == second.mode == "keyword"
    assert len(calls) == 1  # The second recall did not wait for the dead endpoint.
    assert "failed moments ago" in second.note and second.results


# --- The vector matrix --------------------------------------------------------------------------------------------
def test_a_full_index_run_saves_the_matrix_and_recall_maps_it(notes, settings):
    from guardian_app.recall.embeddings import current_config
    from guardian_app.recall.storage import index_generation

    index_workspace()
    label = current_config().label
    folder = vectors_module.matrix_dir(label, index_generation())
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"{n}.npy" for n in vectors_module._MATRIX_FILES)
    vectors_module._matrices.clear()
    answer = recall("staging server", now=NOW)
    assert answer.mode == "hybrid" and answer.results[0].source == "TOOLS.md#L3"
    matrix = vectors_module._matrices[connection.alias]
    assert isinstance(matrix.vectors, np.memmap) and matrix.ids.size == MemoryChunk.objects.count()
    notes("USER.md", "# User\n\n- Prefers summaries on Mondays.\n")
    index_workspace()
    newer = vectors_module.matrix_dir(label, index_generation())
    assert newer != folder and newer.is_dir() and not folder.exists()  # The old generation's files are gone.


def test_the_prefix_shortlist_returns_the_exact_top_k(notes, monkeypatch):
    index_workspace()
    query = load_local_embedder().embed(["Which server runs staging?"])[0]
    label = "local/wordllama/l2_supercat-256"
    exact = vector_search(query, label, Filters(), 3)
    monkeypatch.setattr(vectors_module, "PREFIX_MIN_ROWS", 0)
    monkeypatch.setattr(vectors_module, "PREFIX_SHORTLIST", 2)  # 6 of the 4 chunks: the shortlist keeps them all.
    assert vector_search(query, label, Filters(), 3) == pytest.approx(exact)
    filtered = vector_search(query, label, Filters(file="TOOLS.md"), 3)
    assert filtered and set(filtered) <= set(MemoryChunk.objects.filter(path="TOOLS.md").values_list("id", flat=True))


# --- Embedding cache pruning and recallMinScore -------------------------------------------------------------------
def test_the_cache_keeps_the_most_recently_used_vectors(notes, embeddings, settings):
    from guardian_app.recall.embeddings import prune_embedding_cache
    from guardian_app.tasks import run_embedding_cache_prune

    index_workspace()
    assert EmbeddingCache.objects.count() == 4
    old = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)
    EmbeddingCache.objects.update(updated_at=old)
    used = EmbeddingCache.objects.order_by("id").first()
    MemoryChunk.objects.update(model="", embedding=None)  # Embed again: every vector comes from the cache ...
    index_workspace(rebuild=True)
    assert EmbeddingCache.objects.filter(updated_at__gt=old).count() == 4  # ... and a hit counts as a use.
    EmbeddingCache.objects.exclude(id=used.id).update(updated_at=old)
    settings.EMBEDDING_CACHE_MAX_ENTRIES = 1
    assert run_embedding_cache_prune() == 3
    assert list(EmbeddingCache.objects.values_list("id", flat=True)) == [used.id]
    assert prune_embedding_cache() == 0
    assert prune_embedding_cache(max_entries=0) == 0  # 0: no limit.


def test_the_prune_is_a_beat_schedule():
    from guardian_app.schedules import SCHEDULES

    assert SCHEDULES["embedding-cache-prune"] == ("guardian_app.tasks.run_embedding_cache_prune", "30 3 * * *")


def test_recall_min_score_leaves_out_weak_results(notes, settings):
    index_workspace()
    everything = recall("staging server deploy", now=NOW)
    assert len(everything.results) == 4  # Vector neighbours of the question, however weak.
    settings.RECALL_MIN_SCORE = everything.results[1].score
    strong = recall("staging server deploy", now=NOW)
    assert [r.id for r in strong.results] == [r.id for r in everything.results[:2]]
