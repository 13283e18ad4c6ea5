"""Issue 9: the quality distribution (API, CLI and the samples' admin dashboard) is aggregated by the database in
a bounded number of queries, with the figures the former Python pass over every sample's factors gave."""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.conf import settings
from django.db.models import Avg, Count, FloatField, IntegerField, Max, Min
from django.db.models.functions import Cast, Floor, Least

from dataset_app import queries
from dataset_app.models import DatasetSample, SampleType
from dataset_app.scoring import FACTORS
from tests.dataset_app.factories import SampleFactory

pytestmark = pytest.mark.django_db


def python_distribution() -> dict[str, Any]:
    """``queries.quality_distribution`` as it was before issue 9 (every sample's factors decoded in Python):
    the reference the database's figures must equal."""
    scored = DatasetSample.objects.order_by().filter(quality_score__isnull=False)
    bucket = Least(Cast(Floor(Cast("quality_score", FloatField()) * 10), IntegerField()), 9)
    found = dict(scored.annotate(bucket=bucket).values_list("bucket").annotate(n=Count("id")))
    buckets = [{"from": round(i / 10, 2), "to": round((i + 1) / 10, 2), "count": found.get(i, 0)} for i in range(10)]
    summary = scored.aggregate(mean=Avg("quality_score"), low=Min("quality_score"), high=Max("quality_score"))
    count = sum(b["count"] for b in buckets)
    median = None
    if count:
        ordered = scored.order_by("quality_score").values_list("quality_score", flat=True)
        middle = list(ordered[(count - 1) // 2 : count // 2 + 1])
        median = round(sum(middle) / len(middle), 4)
    by_type = {
        key: round(mean, 4)
        for key, mean in scored.values_list("sample_type").annotate(m=Avg("quality_score")).order_by("sample_type")
    }
    factor_sums = dict.fromkeys(FACTORS, 0.0)
    factor_n = 0
    for factors in scored.exclude(quality_factors__isnull=True).values_list("quality_factors", flat=True):
        if isinstance(factors, dict):
            factor_n += 1
            for name in FACTORS:
                factor_sums[name] += float(factors.get(name) or 0.0)
    return {
        "count": count,
        "unscored": DatasetSample.objects.filter(quality_score__isnull=True).count(),
        "mean": round(summary["mean"], 4) if summary["mean"] is not None else None,
        "median": median,
        "min": summary["low"],
        "max": summary["high"],
        "below_min_quality": scored.filter(quality_score__lt=settings.DATASET_MIN_QUALITY_SCORE).count(),
        "min_quality": settings.DATASET_MIN_QUALITY_SCORE,
        "buckets": buckets,
        "factors": {name: round(total / factor_n, 4) if factor_n else None for name, total in factor_sums.items()},
        "by_type": by_type,
    }


def make_samples(n: int, *, seed: int = 9) -> None:
    """``n`` samples of every type with scores on and between bucket edges, factors as the scorer writes them,
    and the odd ones: unscored, scored without factors."""
    rng = random.Random(seed)
    types = list(SampleType.values)
    for i in range(n):
        score: float | None = rng.choice([round(rng.random(), 4), 0.0, 0.1, 0.5, 0.9999, 1.0])
        factors: dict[str, Any] | None = {name: round(rng.random(), 4) for name in FACTORS}
        if i % 11 == 0:
            score = None
        if i % 13 == 0:
            factors = None
        SampleFactory(
            sample_type=types[i % len(types)], quality_score=score, quality_factors=factors, source_key=f"q:{i}"
        )


def test_the_figures_are_those_of_the_python_pass() -> None:
    make_samples(120)

    assert queries.quality_distribution() == python_distribution()


@pytest.mark.parametrize("n", [0, 1, 2])
def test_few_samples_give_the_same_figures(n: int) -> None:
    make_samples(n, seed=n)

    assert queries.quality_distribution() == python_distribution()


def test_a_factor_mean_is_read_from_the_samples_factors() -> None:
    for clarity in (0.2, 0.4, 0.9):
        SampleFactory(
            quality_score=0.5,
            quality_factors={"conversationClarity": clarity, "decisionConfidence": 1, "factVerifiability": 0.0},
        )
    SampleFactory(quality_score=None, quality_factors={"conversationClarity": 0.0})  # unscored: not counted

    factors = queries.quality_distribution()["factors"]

    assert factors == {"conversationClarity": 0.5, "decisionConfidence": 1.0, "factVerifiability": 0.0}


def test_a_factor_mean_leaves_out_the_samples_without_that_factor() -> None:
    SampleFactory(quality_score=0.5, quality_factors={"conversationClarity": 0.2, "decisionConfidence": None})
    SampleFactory(quality_score=0.5, quality_factors={"conversationClarity": 0.6, "decisionConfidence": 0.8})
    SampleFactory(quality_score=0.5, quality_factors=None)

    factors = queries.quality_distribution()["factors"]

    assert factors == {"conversationClarity": 0.4, "decisionConfidence": 0.8, "factVerifiability": None}


def test_the_factor_columns_follow_the_factors() -> None:
    sample = SampleFactory(
        quality_factors={"conversationClarity": 0.25, "decisionConfidence": 1, "factVerifiability": 0}
    )
    DatasetSample.objects.filter(id=sample.id).update(quality_factors={"conversationClarity": 0.75})

    row = DatasetSample.objects.values("conversation_clarity", "decision_confidence", "fact_verifiability").get()

    assert row == {"conversation_clarity": 0.75, "decision_confidence": None, "fact_verifiability": None}


def test_the_distribution_takes_two_queries_whatever_the_number_of_samples(django_assert_num_queries: Any) -> None:
    make_samples(60)

    with django_assert_num_queries(2):
        queries.quality_distribution()
