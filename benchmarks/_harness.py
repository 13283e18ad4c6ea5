"""Shared by the benchmarks: a service under gunicorn in a fresh workspace, and an HTTP load generator.

The load generator is asyncio over raw sockets (HTTP/1.1, one connection per request, as gunicorn's
sync workers close them), so that the client costs as little CPU as possible on this 2-core machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
PG_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/reflection_bench")
BENCH_REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/13")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine() -> str:
    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()} {platform.release()}"
    )


def use_database(url: str | None) -> None:
    """Point this process's Django at a fresh PostgreSQL database ``url`` (dropped and created), or at the embedded
    SQLite default when ``url`` is empty. Call before ``django.setup()``."""
    if url:
        reset_postgres(url)
        os.environ["DATABASE_URL"] = url
    else:
        os.environ.pop("DATABASE_URL", None)


def reset_postgres(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')


@dataclass
class Service:
    env: dict[str, str]
    workspace: Path
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    extra: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def manage(self, *args: str) -> str:
        out = subprocess.run(
            [PYTHON, "manage.py", *args], cwd=ROOT, env=self.env, check=True, capture_output=True, text=True
        )
        return out.stdout

    def api_key(self, *scopes: str) -> str:
        scope_args = [a for s in scopes for a in ("--scope", s)]
        return self.manage("apikey", "create", f"bench-{time.time_ns()}", *scope_args).strip().splitlines()[-1]

    def start_web(self, workers: int = 2) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                PYTHON,
                "-m",
                "gunicorn",
                "reflection_site.wsgi",
                "--bind",
                f"127.0.0.1:{self.port}",
                "--workers",
                str(workers),
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=self.env,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("gunicorn did not start")

    def cpu_seconds(self) -> float:
        """CPU time (user + system) of the web server: gunicorn's master and every live worker."""
        import psutil

        if self.process is None:
            return 0.0
        total = 0.0
        master = psutil.Process(self.process.pid)
        for proc in [master, *master.children(recursive=True)]:
            try:
                times = proc.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total

    def stop(self) -> None:
        for proc in [self.process, *self.extra]:
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()


@contextmanager
def service(database: str = "sqlite", **env_overrides: str) -> Iterator[Service]:
    """A migrated service in a fresh workspace on SQLite (filesystem broker) or PostgreSQL (Redis broker)."""
    workspace = Path(tempfile.mkdtemp(prefix="reflection-bench-"))
    env = dict(os.environ)
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)
    env.update(
        {"WORKSPACE_DIR": str(workspace), "DJANGO_SETTINGS_MODULE": "reflection_site.settings", "LOG_LEVEL": "WARNING"}
    )
    if database == "postgres":
        reset_postgres(PG_URL)
        env["DATABASE_URL"] = PG_URL
        env["REDIS_URL"] = BENCH_REDIS_URL
    env.update(env_overrides)
    if env.get("REDIS_URL"):
        import redis

        redis.Redis.from_url(env["REDIS_URL"]).flushdb()
    svc = Service(env=env, workspace=workspace)
    svc.manage("migrate", "--noinput")
    try:
        yield svc
    finally:
        svc.stop()
        shutil.rmtree(workspace, ignore_errors=True)


@dataclass
class LoadResult:
    latencies_ms: list[float]
    statuses: dict[int, int]
    elapsed_s: float

    @property
    def rate(self) -> float:
        return len(self.latencies_ms) / self.elapsed_s

    def pct(self, p: float) -> float:
        data = sorted(self.latencies_ms)
        if not data:
            return float("nan")
        return data[min(len(data) - 1, int(round(p / 100 * (len(data) - 1))))]

    def row(self) -> dict[str, float]:
        return {
            "requests": len(self.latencies_ms),
            "rate": round(self.rate, 1),
            "p50_ms": round(self.pct(50), 2),
            "p95_ms": round(self.pct(95), 2),
            "p99_ms": round(self.pct(99), 2),
            "mean_ms": round(statistics.fmean(self.latencies_ms), 2) if self.latencies_ms else float("nan"),
            "errors": sum(n for code, n in self.statuses.items() if code >= 400),
        }


async def _request(port: int, raw: bytes) -> int:
    """One request on a new connection, read until the server closes it; the status code.

    On the event loop's socket calls rather than asyncio streams: a third less CPU a request, which this 2-core
    machine's service under test gets instead."""
    loop = asyncio.get_running_loop()
    with socket.socket() as sock:
        sock.setblocking(False)
        await loop.sock_connect(sock, ("127.0.0.1", port))
        await loop.sock_sendall(sock, raw)
        answer = bytearray()
        while chunk := await loop.sock_recv(sock, 65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def build_request(method: str, path: str, headers: dict[str, str], body: dict | None) -> bytes:
    data = json.dumps(body).encode() if body is not None else b""
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", "Connection: close", f"Content-Length: {len(data)}"]
    if body is not None:
        lines.append("Content-Type: application/json")
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + data


def run_closed_loop(port: int, make_request: Callable[[int], bytes], *, total: int, concurrency: int) -> LoadResult:
    """``concurrency`` clients, each sending its next request when the last one is answered."""

    async def main() -> LoadResult:
        latencies: list[float] = []
        statuses: dict[int, int] = {}
        counter = iter(range(total))

        async def client() -> None:
            for i in counter:
                started = time.perf_counter()
                status = await _request(port, make_request(i))
                latencies.append((time.perf_counter() - started) * 1000)
                statuses[status] = statuses.get(status, 0) + 1

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        return LoadResult(latencies, statuses, time.perf_counter() - started)

    return asyncio.run(main())


def run_open_loop(port: int, make_request: Callable[[int], bytes], *, rate: float, seconds: float) -> LoadResult:
    """Requests sent at a fixed rate whatever the answers; latency counts from the scheduled send time."""

    async def main() -> LoadResult:
        latencies: list[float] = []
        statuses: dict[int, int] = {}
        total = int(rate * seconds)
        loop_start = time.perf_counter()

        async def one(i: int) -> None:
            scheduled = loop_start + i / rate
            delay = scheduled - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            status = await _request(port, make_request(i))
            latencies.append((time.perf_counter() - scheduled) * 1000)
            statuses[status] = statuses.get(status, 0) + 1

        await asyncio.gather(*(one(i) for i in range(total)))
        return LoadResult(latencies, statuses, time.perf_counter() - loop_start)

    return asyncio.run(main())


def table(rows: list[dict[str, object]]) -> str:
    """A Markdown table of dict rows (same keys)."""
    if not rows:
        return ""
    keys = list(rows[0])
    out = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    out += ["| " + " | ".join(str(r[k]) for k in keys) + " |" for r in rows]
    return "\n".join(out)
