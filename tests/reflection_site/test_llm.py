"""The LLM client against a fake OpenAI-compatible server, through the real openai SDK."""

from __future__ import annotations

import pytest

from reflection_site import llm
from tests.fake_llm import FakeReply


def test_success_returns_the_object_model_usage_and_raw_reply(fake_llm):
    fake_llm.queue(
        FakeReply(content={"decision": "NO_WRITE", "reason": "hi"}, model="provider/model-7", usage=(120, 30))
    )

    reply = llm.complete_json([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])

    assert reply.data == {"decision": "NO_WRITE", "reason": "hi"}
    assert reply.model == "provider/model-7"  # As the server reports it, not as we asked.
    assert (reply.prompt_tokens, reply.completion_tokens) == (120, 30)
    assert reply.content == '{"decision": "NO_WRITE", "reason": "hi"}'
    assert '"usage"' in reply.raw and "provider/model-7" in reply.raw
    assert reply.attempts == 1
    assert reply.latency_ms >= 0
    sent = fake_llm.chat_requests[0]
    assert sent["model"] == "fake-model-1"
    assert sent["response_format"] == {"type": "json_object"}
    assert sent["messages"][1] == {"role": "user", "content": "u"}


def test_missing_usage_gives_no_token_counts(fake_llm):
    fake_llm.queue(FakeReply(content={"a": 1}, usage=None))

    reply = llm.complete_json([{"role": "user", "content": "u"}])

    assert (reply.prompt_tokens, reply.completion_tokens) == (None, None)


def test_a_500_is_retried_then_succeeds(fake_llm):
    fake_llm.queue(FakeReply(status=500, content="overloaded"), {"ok": True})

    reply = llm.complete_json([{"role": "user", "content": "u"}])

    assert reply.data == {"ok": True}
    assert reply.attempts == 2
    assert len(fake_llm.chat_requests) == 2


def test_a_429_is_retried(fake_llm):
    fake_llm.queue(FakeReply(status=429, content="slow down"), {"ok": 1})

    assert llm.complete_json([{"role": "user", "content": "u"}]).attempts == 2


def test_an_unparseable_reply_is_retried_then_succeeds(fake_llm):
    fake_llm.queue("I think it is fine.", 'Sure! ```json\n{"ok": 2}\n``` hope that helps')

    reply = llm.complete_json([{"role": "user", "content": "u"}])

    assert reply.data == {"ok": 2}
    assert reply.attempts == 2


@pytest.mark.parametrize(
    "body",
    ["<html>502 Bad Gateway</html>", "[1, 2]", '{"choices": "none"}', '{"choices": [{"message": {"content": 7}}]}'],
)
def test_a_body_that_is_no_chat_completion_is_retried_then_succeeds(fake_llm, body):
    fake_llm.queue(FakeReply(body=body), FakeReply(content={"ok": 3}, model="m-2", usage=(5, 6)))

    reply = llm.complete_json([{"role": "user", "content": "u"}])

    assert reply.data == {"ok": 3}
    assert (reply.model, reply.prompt_tokens, reply.completion_tokens, reply.attempts) == ("m-2", 5, 6, 2)


def test_a_body_that_is_no_chat_completion_keeps_it_as_the_last_raw_reply(fake_llm, settings):
    settings.LLM_MAX_RETRIES = 0
    fake_llm.queue(FakeReply(body="<html>502 Bad Gateway</html>"))

    with pytest.raises(llm.LLMUnparseable) as caught:
        llm.complete_json([{"role": "user", "content": "u"}])

    assert caught.value.raw == "<html>502 Bad Gateway</html>"


def test_a_reply_the_validator_rejects_counts_as_unparseable(fake_llm):
    fake_llm.queue({"decision": "MAYBE"}, {"decision": "NO_WRITE"})

    def validate(data):
        if data.get("decision") != "NO_WRITE":
            raise ValueError("bad decision")

    reply = llm.complete_json([{"role": "user", "content": "u"}], validate=validate)

    assert reply.data == {"decision": "NO_WRITE"}
    assert reply.attempts == 2


def test_a_timeout_is_retried_and_then_raised_as_transient(fake_llm, settings):
    settings.LLM_TIMEOUT_S = 0.3
    settings.LLM_MAX_RETRIES = 1
    fake_llm.queue(FakeReply(delay=1.5), FakeReply(delay=1.5))

    with pytest.raises(llm.LLMTransientError) as caught:
        llm.complete_json([{"role": "user", "content": "u"}])

    assert caught.value.attempts == 2
    assert "timed out" in str(caught.value)
    assert isinstance(caught.value, llm.TRANSIENT_ERRORS)


def test_every_retry_failing_raises_the_last_error_with_its_raw_text(fake_llm, settings):
    settings.LLM_MAX_RETRIES = 2
    fake_llm.queue(FakeReply(status=503), FakeReply(status=502), "no json here, sorry")

    with pytest.raises(llm.LLMUnparseable) as caught:
        llm.complete_json([{"role": "user", "content": "u"}])

    assert caught.value.attempts == 3
    assert caught.value.raw == "no json here, sorry"
    assert len(fake_llm.chat_requests) == 3


def test_every_retry_failing_with_5xx_raises_transient(fake_llm, settings):
    settings.LLM_MAX_RETRIES = 1
    fake_llm.queue(FakeReply(status=500), FakeReply(status=500, content="still down"))

    with pytest.raises(llm.LLMTransientError) as caught:
        llm.complete_json([{"role": "user", "content": "u"}])

    assert "500" in str(caught.value)
    assert "still down" in caught.value.raw


def test_a_client_error_is_not_retried(fake_llm):
    fake_llm.queue(FakeReply(status=401, content="bad key"))

    with pytest.raises(llm.LLMError) as caught:
        llm.complete_json([{"role": "user", "content": "u"}])

    assert not isinstance(caught.value, llm.TRANSIENT_ERRORS)
    assert len(fake_llm.chat_requests) == 1


def test_a_server_without_json_mode_is_asked_again_without_it(fake_llm):
    fake_llm.queue(FakeReply(status=400, content="unknown field response_format"), {"ok": 3})

    reply = llm.complete_json([{"role": "user", "content": "u"}])

    assert reply.data == {"ok": 3}
    assert "response_format" not in fake_llm.chat_requests[1]


def test_a_connection_error_is_transient(settings):
    settings.LLM_BASE_URL = "http://127.0.0.1:9/v1"  # Nothing listens on the discard port.
    settings.LLM_MAX_RETRIES = 0

    with pytest.raises(llm.LLMTransientError):
        llm.complete_json([{"role": "user", "content": "u"}])


def test_unset_base_url_is_not_configured(settings):
    settings.LLM_BASE_URL = ""

    assert not llm.is_configured()
    with pytest.raises(llm.LLMNotConfigured):
        llm.complete_json([{"role": "user", "content": "u"}])


def test_model_argument_overrides_the_setting(fake_llm):
    llm.complete_json([{"role": "user", "content": "u"}], model="other/model")

    assert fake_llm.chat_requests[0]["model"] == "other/model"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('```json\n{"a": 2}\n```', {"a": 2}),
        ('```\n{"a": 3}\n```', {"a": 3}),
        ('Here you go: {"a": {"b": [1, 2]}} -- done', {"a": {"b": [1, 2]}}),
        ('noise {not json} then {"a": 5}', {"a": 5}),
        ('  \n{"text": "braces } inside { strings"}\n', {"text": "braces } inside { strings"}),
    ],
)
def test_parse_json_object_is_tolerant(text, expected):
    assert llm.parse_json_object(text) == expected


@pytest.mark.parametrize("text", ["", "plain prose", "[1, 2, 3]", "{broken"])
def test_parse_json_object_refuses_text_without_an_object(text):
    with pytest.raises(ValueError):
        llm.parse_json_object(text)
