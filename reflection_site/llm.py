"""The one LLM client: any OpenAI-compatible chat endpoint through the official ``openai`` SDK.

``complete_json(messages)`` asks for a JSON object and returns it with what the server reports about
the call (model, tokens, latency, the raw reply). Timeouts, connection errors, 429s, 5xx answers and
replies that hold no JSON object are retried here with exponential backoff (``LLM_MAX_RETRIES``); once
they are spent the last error is raised as one of ``TRANSIENT_ERRORS`` so that the calling Celery task
can retry later with its own, longer backoff. Anything else (a 400, a 401, a missing model) is an
``LLMError`` that no retry would cure.

The SDK's own retries are off (``max_retries=0``): this module counts the attempts, keeps the last
raw reply, and retries unparseable replies too, which the SDK does not.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import openai
from django.conf import settings

logger = logging.getLogger(__name__)


class LLMError(Exception):
    """An LLM call that did not give a usable reply; ``raw`` is the last reply text, if any."""

    def __init__(self, message: str, *, raw: str | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.raw = raw
        self.attempts = attempts


class LLMNotConfigured(LLMError):
    """``LLM_BASE_URL`` is unset: callers use their offline fallback."""


class LLMTransientError(LLMError):
    """Timeouts, connection errors, 429 and 5xx answers, once this module's retries are spent."""


class LLMUnparseable(LLMError):
    """The reply held no (valid) JSON object, once this module's retries are spent; ``raw`` keeps it."""


# What a Celery task retries (STYLE: autoretry_for=llm.TRANSIENT_ERRORS).
TRANSIENT_ERRORS: tuple[type[Exception], ...] = (LLMTransientError, LLMUnparseable)

# Status codes worth another try: timeouts, conflicts and locks, rate limits, server errors.
_RETRY_STATUSES = {408, 409, 423, 425, 429}


@dataclass(frozen=True)
class LLMReply:
    data: dict[str, Any]
    content: str
    model: str
    latency_ms: int
    prompt_tokens: int | None
    completion_tokens: int | None
    raw: str
    attempts: int


def is_configured() -> bool:
    return bool(settings.LLM_BASE_URL)


@lru_cache(maxsize=8)
def _client(base_url: str, api_key: str, timeout: float) -> openai.OpenAI:
    # Local servers (Ollama, llama.cpp) need no key, but the SDK insists on one.
    return openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout, max_retries=0)


def client() -> openai.OpenAI:
    """The SDK client for the current settings (cached per base URL, key and timeout)."""
    if not is_configured():
        raise LLMNotConfigured("LLM_BASE_URL is not set.")
    return _client(settings.LLM_BASE_URL, settings.LLM_API_KEY, float(settings.LLM_TIMEOUT_S))


_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


def parse_json_object(text: str) -> dict[str, Any]:
    """The JSON object in an LLM reply: the whole text, a fenced block, or the first ``{…}`` inside prose.

    Raises ValueError when there is none.
    """
    if text is None:
        raise ValueError("empty reply")
    stripped = text.strip()
    candidates = [stripped] + [m.group(1).strip() for m in _FENCE.finditer(stripped)]
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    # The first decodable object that starts at any "{" (raw_decode stops where the object ends).
    decoder = json.JSONDecoder()
    for match in re.finditer(r"\{", stripped):
        try:
            value, _ = decoder.raw_decode(stripped, match.start())
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    raise ValueError("no JSON object in the reply")


def _backoff(attempt: int) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1, 2, 4 … times the base, capped)."""
    base = float(settings.LLM_RETRY_BACKOFF_S)
    return min(base * (2 ** (attempt - 1)), 30.0)


def _completion(raw: str) -> dict[str, Any]:
    """The chat completion object of a reply body; ValueError when the body is not one."""
    completion = json.loads(raw)
    if not isinstance(completion, dict):
        raise ValueError("the reply body is not a JSON object")
    return completion


def _content(completion: dict[str, Any]) -> str:
    """The first choice's message text ("" when the reply has none)."""
    choices = completion.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else ""


def _usage(completion: dict[str, Any]) -> tuple[int | None, int | None]:
    usage = completion.get("usage")
    if not isinstance(usage, dict):
        return None, None

    def tokens(name: str) -> int | None:
        value = usage.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    return tokens("prompt_tokens"), tokens("completion_tokens")


class _JsonModeRejected(Exception):
    """The server refused ``response_format``: ask again without it (not counted as an attempt)."""


def _post(sdk: openai.OpenAI, body: dict[str, Any], attempt: int, attempts_allowed: int) -> tuple[str, dict[str, Any]]:
    """One request: ``(raw body, completion)``. Raises LLMTransientError or LLMUnparseable for what another
    attempt may cure, LLMError for what it would not, _JsonModeRejected when JSON mode is refused."""
    raw = ""
    try:
        # The SDK's own HTTP client, errors and headers, but the body goes out as built here and the reply
        # comes back as text: the typed create() deep-copies the messages into TypedDicts and the reply into
        # pydantic models: 2.7 ms of CPU a call instead of 1.0 (BENCHMARKS.md, memory gate).
        raw = sdk.post("/chat/completions", body=body, cast_to=str)
        return raw, _completion(raw)
    except openai.APITimeoutError as exc:
        logger.warning("LLM attempt %d/%d: timeout: %s", attempt, attempts_allowed, exc)
        raise LLMTransientError(f"LLM timed out after {settings.LLM_TIMEOUT_S}s", attempts=attempt) from exc
    except openai.APIConnectionError as exc:
        logger.warning("LLM attempt %d/%d: connection error: %s", attempt, attempts_allowed, exc)
        raise LLMTransientError(f"LLM connection error: {exc}", attempts=attempt) from exc
    except openai.APIStatusError as exc:
        text = _error_text(exc)
        if exc.status_code == 400 and "response_format" in body and "response_format" in text:
            raise _JsonModeRejected from exc  # This server does not know JSON mode: the prompt asks for JSON anyway.
        message = f"LLM answered HTTP {exc.status_code}: {text[:500]}"
        if exc.status_code in _RETRY_STATUSES or exc.status_code >= 500:
            logger.warning("LLM attempt %d/%d: HTTP %d", attempt, attempts_allowed, exc.status_code)
            raise LLMTransientError(message, raw=text or None, attempts=attempt) from exc
        raise LLMError(message, raw=text or None, attempts=attempt) from exc
    except ValueError as exc:  # _completion: the body is no JSON object
        raise LLMUnparseable(f"LLM response could not be read: {exc}", raw=raw or None, attempts=attempt) from exc


def _reply_data(
    content: str, raw: str, validate: Callable[[dict[str, Any]], Any] | None, attempt: int, attempts_allowed: int
) -> dict[str, Any]:
    """The reply's JSON object, validated; LLMUnparseable when there is none or ``validate`` refuses it."""
    try:
        data = parse_json_object(content)
        if validate is not None:
            validate(data)
    except ValueError as exc:
        logger.warning("LLM attempt %d/%d: unparseable reply", attempt, attempts_allowed)
        raise LLMUnparseable(
            f"LLM reply is not a usable JSON object: {exc}", raw=content or raw, attempts=attempt
        ) from exc
    return data


def complete_json(
    messages: list[dict[str, str]],
    *,
    model: str | None = None,
    temperature: float = 0.0,
    validate: Callable[[dict[str, Any]], Any] | None = None,
) -> LLMReply:
    """Ask the chat endpoint for a JSON object.

    1. Send the messages (with ``response_format={"type": "json_object"}`` when ``LLM_JSON_MODE``; a
       server that rejects that option is asked again without it).
    2. Parse the assistant's text tolerantly (code fences, prose around the object) and, if given,
       run ``validate(data)``; a ValueError from it counts as an unparseable reply.
    3. On a timeout, a connection error, 429/5xx or an unparseable reply, wait (exponential backoff)
       and try again, up to ``LLM_MAX_RETRIES`` more times.

    Raises LLMNotConfigured, LLMTransientError or LLMUnparseable (both in TRANSIENT_ERRORS, with the
    last raw reply and the attempt count), or LLMError for a refusal no retry would cure.
    """
    sdk = client()
    model_name = model or settings.LLM_MODEL
    json_mode = bool(settings.LLM_JSON_MODE)
    attempts_allowed = 1 + max(int(settings.LLM_MAX_RETRIES), 0)
    last_error: LLMError | None = None
    attempt = 0
    while attempt < attempts_allowed:
        attempt += 1
        if attempt > 1:
            time.sleep(_backoff(attempt - 1))
        body: dict[str, Any] = {"model": model_name, "messages": messages, "temperature": temperature}
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        started = time.perf_counter()
        try:
            raw, completion = _post(sdk, body, attempt, attempts_allowed)
            latency_ms = int(round((time.perf_counter() - started) * 1000))
            content = _content(completion)
            data = _reply_data(content, raw, validate, attempt, attempts_allowed)
        except _JsonModeRejected:
            json_mode = False
            attempt -= 1
            logger.info("LLM server rejects response_format; asking without it")
            continue
        except (LLMTransientError, LLMUnparseable) as exc:  # TRANSIENT_ERRORS: another attempt may cure it.
            last_error = exc
            continue
        prompt_tokens, completion_tokens = _usage(completion)
        return LLMReply(
            data=data,
            content=content,
            model=completion.get("model") or model_name,
            latency_ms=latency_ms,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            raw=raw,
            attempts=attempt,
        )
    assert last_error is not None
    last_error.attempts = attempt
    raise last_error


def _error_text(exc: openai.APIStatusError) -> str:
    try:
        return exc.response.text
    except Exception:  # noqa: BLE001 - a body we cannot read is no reason to fail differently.
        return str(exc)


__all__ = [
    "LLMError",
    "LLMNotConfigured",
    "LLMReply",
    "LLMTransientError",
    "LLMUnparseable",
    "TRANSIENT_ERRORS",
    "client",
    "complete_json",
    "is_configured",
    "parse_json_object",
]
