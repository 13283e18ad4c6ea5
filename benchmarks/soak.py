"""`make run` under load, then at chat pace: does the embedded runtime keep every turn and decide it?

Method: `make run` (gunicorn with 2 workers, one Celery worker with beat, the embedded SQLite and file broker) in a
fresh workspace and database under a temporary folder, on a free port. An API key is made with `manage.py apikey`.
Then ``--clients`` threads post turns (texts of held-out set v8, three senders) as fast as the service answers for
``--seconds``; then 2 clients post a turn every 3 s for ``--seconds`` more. Then the database is read until every
stored turn has a gate decision (or ``--drain`` seconds pass). Printed: turns posted, latency p50/p95 of each
phase, errors, turns stored and decided, how long the drain took, whether `make run` was still running, and its
exit status after Ctrl-C (SIGINT to its process group).

Usage: python benchmarks/soak.py [--clients 16] [--seconds 60] [--drain 600] [--chat-pause 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _harness import ROOT, free_port, machine  # noqa: E402

TEXTS = [
    turn["text"]
    for line in (ROOT / "tests/fixtures/memory_eval/conversations_heldout_v8.jsonl").read_text().splitlines()
    for turn in json.loads(line)["turns"]
]


def _start(folder: Path, port: int) -> tuple[subprocess.Popen[bytes], dict[str, str], str]:
    env = dict(
        os.environ, WORKSPACE_DIR=str(folder / "ws"), DATABASE_URL=f"sqlite:///{folder}/db.sqlite3", PORT=str(port)
    )
    env.pop("LLM_BASE_URL", None)  # The offline gate: the embedded default.
    python = str(ROOT / ".venv/bin/python")
    subprocess.run([python, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    made = subprocess.run(
        [python, "manage.py", "apikey", "create", "soak"], cwd=ROOT, env=env, check=True, capture_output=True, text=True
    )
    log = (folder / "run.log").open("w")
    run = subprocess.Popen(
        ["make", "run", f"PORT={port}"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    return run, env, made.stdout.strip().splitlines()[-1]


def _post(base: str, key: str, client: int, number: int) -> float:
    body = {
        "session": {"id": f"soak-{client}", "channel_id": "soak"},
        "turn_number": number,
        "user_message": {"content": random.choice(TEXTS), "from": f"sender-{client % 3}"},
        "agent_reply": {"content": "Noted."},
    }
    request = urllib.request.Request(
        f"{base}/api/v1/turns",
        json.dumps(body).encode(),
        {"Content-Type": "application/json", "Authorization": f"Bearer {key}"},
    )
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()
    return time.perf_counter() - started


def _phase(
    base: str, key: str, clients: int, seconds: float, pause: float, first: int
) -> tuple[list[float], list[str]]:
    latencies: list[float] = []
    errors: list[str] = []
    lock = threading.Lock()
    until = time.time() + seconds

    def client(number: int) -> None:
        turn = 0
        while time.time() < until:
            turn += 1
            try:
                took = _post(base, key, number, turn)
                with lock:
                    latencies.append(took)
            except Exception as error:  # noqa: BLE001 — every failure is counted and shown
                with lock:
                    errors.append(repr(error)[:200])
            time.sleep(pause)

    threads = [threading.Thread(target=client, args=(first + n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(latencies), errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--drain", type=float, default=600)
    parser.add_argument("--chat-pause", type=float, default=3.0, help="seconds between a chat client's turns")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="soak-") as scratch:
        folder, port = Path(scratch), free_port()
        run, _, key = _start(folder, port)
        base = f"http://127.0.0.1:{port}"
        for _ in range(120):
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2).read()
                break
            except OSError:
                time.sleep(1)
        for name, clients, pause, first in (("fast", args.clients, 0.0, 0), ("chat pace", 2, args.chat_pause, 1000)):
            latencies, errors = _phase(base, key, clients, args.seconds, pause, first)
            p50, p95 = (latencies[int(len(latencies) * q)] * 1000 if latencies else 0.0 for q in (0.5, 0.95))
            print(
                f"{name}: {len(latencies)} turns, p50 {p50:.0f} ms, p95 {p95:.0f} ms, errors {len(errors)} {errors[:2]}"
            )
        database = sqlite3.connect(folder / "db.sqlite3")
        started = time.time()
        while True:
            stored = database.execute("select count(*) from conversation_turns").fetchone()[0]
            decided = database.execute("select count(distinct turn_id) from memory_gate_decisions").fetchone()[0]
            if decided >= stored or time.time() - started > args.drain:
                break
            time.sleep(2)
        print(f"turns stored {stored}, decided {decided}, drained in {time.time() - started:.0f} s")
        print(f"make run still running: {run.poll() is None}")
        os.killpg(run.pid, signal.SIGINT)
        print(f"make run exit status after Ctrl-C: {run.wait(timeout=60)}")
        print(f"Machine: {machine()}")


if __name__ == "__main__":
    main()
