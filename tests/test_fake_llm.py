"""The fake OpenAI-compatible server itself: what the other suites rely on."""

from __future__ import annotations

import math

import openai
import pytest

from sessions_app.gate import build_messages
from tests.fake_llm import FakeReply, smart_responder, start_fake_llm


@pytest.fixture
def server():
    fake = start_fake_llm()
    yield fake
    fake.stop()


def _client(fake) -> openai.OpenAI:
    return openai.OpenAI(base_url=fake.base_url, api_key="k", max_retries=0)


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True)) / (math.hypot(*a) * math.hypot(*b))


def test_embeddings_are_deterministic_unit_vectors_where_similar_texts_are_close(server):
    client = _client(server)

    result = client.embeddings.create(
        model="fake-embed",
        input=["the user prefers green tea", "the user prefers green tea in the morning", "deploy with make deploy"],
    )
    again = client.embeddings.create(model="fake-embed", input="the user prefers green tea")

    tea, tea_morning, deploy = (item.embedding for item in result.data)
    assert len(tea) == 384
    assert math.isclose(math.hypot(*tea), 1.0, rel_tol=1e-5)
    assert again.data[0].embedding == pytest.approx(tea, abs=1e-6)
    assert _cosine(tea, tea_morning) > 0.6 > _cosine(tea, deploy)
    assert server.paths == ["/v1/embeddings", "/v1/embeddings"]
    assert server.requests[0]["model"] == "fake-embed"


def test_embeddings_honour_dimensions_and_float_encoding(server):
    result = _client(server).embeddings.create(
        model="m", input=["记住周五交周报"], dimensions=64, encoding_format="float"
    )

    assert len(result.data[0].embedding) == 64
    assert result.usage.prompt_tokens > 0


def test_queued_replies_come_first_then_the_default(server):
    server.queue(FakeReply(status=503), "plain text")
    server.set_default(lambda body: {"default": True})
    client = _client(server)

    with pytest.raises(openai.InternalServerError):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    second = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    third = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])

    assert second.choices[0].message.content == "plain text"
    assert third.choices[0].message.content == '{"default": true}'
    assert len(server.chat_requests) == 3


@pytest.mark.django_db
def test_the_smart_responder_answers_gate_prompts_with_the_heuristic_verdict():
    messages = build_messages([("user", "hi"), ("agent", "hello")], "My name is Ada.", "Nice to meet you, Ada.")

    verdict = smart_responder({"messages": messages})

    assert verdict["decision"] == "UPDATE_USER"
    assert verdict["candidate_fact"] == "The user's name is Ada."


def test_the_smart_responder_answers_other_prompts_with_an_empty_object():
    assert smart_responder({"messages": [{"role": "system", "content": "something else"}]}) == {}
