"""The integration suite: real PostgreSQL, real Redis, real Celery worker processes.

Run by ``make test-integration`` with DATABASE_URL (PostgreSQL) and REDIS_URL set. Without those
services the suite skips with the reason, unless REQUIRE_SERVICES=1 (as .ci/run sets), which turns
a missing service into a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.services import Worker, flush_redis, make_worker, services_problem, wait_until, worker

REQUIRE_SERVICES = os.environ.get("REQUIRE_SERVICES") == "1"

# Fixtures shared with the browser suite, re-exported so pytest finds them here.
__all__ = ["Worker", "flush_redis", "make_worker", "wait_until", "worker"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def _require_services() -> None:
    problem = services_problem()
    if problem is None:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"REQUIRE_SERVICES=1 but {problem}", pytrace=False)
    pytest.skip(problem)
