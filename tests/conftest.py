"""Fixtures shared by the whole suite: an isolated workspace, API keys and clients, factories."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.test import Client

from reflection_site.models import ApiKey

ALL_SCOPES = ["ingest", "read", "operate", "annotate"]
# The suite's profile is the seed's, set before Django reads its settings (tests/suite_env.py).
assert os.environ["WORKSPACE_PROFILE"] == "seed"


@pytest.fixture(autouse=True)
def workspace(settings: Any, tmp_path: Path) -> Path:
    """Every test writes memory files, exports and projections under its own folder."""
    root = tmp_path / "workspace"
    root.mkdir()
    settings.WORKSPACE_DIR = root
    settings.DATA_DIR = root / ".openclaw-reflection"
    settings.DATA_DIR.mkdir()
    settings.PROJECTION_DIR = settings.DATA_DIR / "projection"
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.WORKSPACE_PROFILE = "seed"
    return root


@pytest.fixture(autouse=True)
def uncached_admin_dashboards(monkeypatch: pytest.MonkeyPatch) -> None:
    """The admin dashboards' figures are computed on every request: the cache outlives a test's rows."""
    monkeypatch.setattr("reflection_site.admin.DASHBOARD_TTL", 0)


@pytest.fixture(autouse=True)
def no_pending_reindex() -> None:
    """A guarded write asks for its file's re-index once per burst, by a pending mark in the cache, and the cache
    outlives a test: each test starts with no re-index pending."""
    from django.core.cache import cache

    from guardian_app.recall.index import REINDEX_PENDING_KEY
    from reflection_site import memory_files

    cache.delete_many([REINDEX_PENDING_KEY.format(name) for name in (*memory_files.ALL_FILES, "*")])


class ApiClient(Client):
    """A test client that sends JSON and a bearer key."""

    def __init__(self, key: str | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.key = key

    def _auth(self, extra: dict[str, Any]) -> dict[str, Any]:
        if self.key is not None and "HTTP_AUTHORIZATION" not in extra:
            extra["HTTP_AUTHORIZATION"] = f"Bearer {self.key}"
        return extra

    def get(self, path: str, data: Any = None, **extra: Any) -> Any:  # type: ignore[override]
        return super().get(path, data, **self._auth(extra))

    def post(self, path: str, data: Any = None, content_type: str = "application/json", **extra: Any) -> Any:  # type: ignore[override]
        return super().post(path, data, content_type=content_type, **self._auth(extra))

    def delete(self, path: str, data: Any = "", content_type: str = "application/json", **extra: Any) -> Any:  # type: ignore[override]
        return super().delete(path, data, content_type=content_type, **self._auth(extra))


class SentTasks:
    """The tasks sent through ``reflection_site.celery`` (``send`` and ``enqueue_on_commit``), recorded instead of
    sent: ``calls`` holds ``(task path, args)``; ``to(path)`` is the live list of one task's args (``single=True``:
    each call's only argument). Set ``error`` to make every send raise it (a dead broker), ``run_now`` to run each
    task in the caller's process as it is sent."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.error: BaseException | None = None
        self.run_now = False
        self._lists: dict[tuple[str, bool], list[Any]] = {}

    def to(self, task_path: str, *, single: bool = False) -> list[Any]:
        return self._lists.setdefault((task_path, single), [])

    def record(self, task_path: str, args: tuple[Any, ...]) -> None:
        if self.error is not None:
            raise self.error
        self.calls.append((task_path, args))
        for (path, single), sent in self._lists.items():
            if path == task_path:
                sent.append(args[0] if single else args)
        if self.run_now:
            from kombu.utils.imports import symbol_by_name

            symbol_by_name(task_path)(*args)


@pytest.fixture
def sent_tasks(monkeypatch: pytest.MonkeyPatch) -> SentTasks:
    """Every task the code sends, recorded instead of sent to a broker (see ``SentTasks``)."""
    from reflection_site.celery import HotPublisher

    sent = SentTasks()

    def record(publisher: HotPublisher, *args: Any) -> str:
        sent.record(publisher.task_path, args)
        return f"sent-{len(sent.calls)}"

    monkeypatch.setattr(HotPublisher, "__call__", record)
    return sent


@pytest.fixture
def make_key(db: None) -> Callable[..., str]:
    counter = iter(range(1, 10_000))

    def make(*scopes: str, name: str | None = None) -> str:
        _, raw = ApiKey.generate(name or f"key-{next(counter)}", list(scopes) or ALL_SCOPES)
        return raw

    return make


@pytest.fixture
def api_client(make_key: Callable[..., str]) -> ApiClient:
    """A client whose key has every scope."""
    return ApiClient(make_key(*ALL_SCOPES))


@pytest.fixture
def client_for(make_key: Callable[..., str]) -> Callable[..., ApiClient]:
    def make(*scopes: str) -> ApiClient:
        return ApiClient(make_key(*scopes))

    return make


@pytest.fixture
def anon_client() -> ApiClient:
    return ApiClient(None)


def turn_payload(
    session_id: str = "channel:test:alice",
    user: str = "I prefer summaries on Fridays.",
    agent: str = "Noted, summaries on Fridays.",
    **overrides: Any,
) -> dict[str, Any]:
    """A valid ``POST /api/v1/turns`` body."""
    payload: dict[str, Any] = {
        "session": {"id": session_id, "channel_id": session_id.split(":")[1] if ":" in session_id else "test"},
        "user_message": {"content": user},
        "agent_reply": {"content": agent},
        "context": [
            {"role": "user", "message": "Hi there", "timestamp": 1_700_000_000_000},
            {"role": "agent", "message": "Hello! How can I help?", "timestamp": 1_700_000_001_000},
        ],
    }
    payload.update(overrides)
    return payload


@pytest.fixture
def ingest(api_client: ApiClient) -> Callable[..., dict[str, Any]]:
    """Post a turn through the API and return the stored turn's JSON."""

    def post(**kwargs: Any) -> dict[str, Any]:
        response = api_client.post("/api/v1/turns", turn_payload(**kwargs))
        assert response.status_code in (200, 201), response.content
        return response.json()

    return post


@pytest.fixture
def fake_llm(settings: Any) -> Any:
    """A fake OpenAI-compatible server on loopback (tests/fake_llm.py); the settings point the LLM client at it."""
    from tests.fake_llm import start_fake_llm

    server = start_fake_llm()
    settings.LLM_BASE_URL = server.base_url
    settings.LLM_API_KEY = "test-key"
    settings.LLM_MODEL = "fake-model-1"
    settings.LLM_RETRY_BACKOFF_S = 0
    yield server
    server.stop()
