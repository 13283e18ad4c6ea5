"""An adversarial probe of the running service over real HTTP (issue 18): requests tried, 5xx answers, leaks found.

It starts the embedded default (gunicorn + SQLite + the filesystem broker, a Celery worker, a fresh workspace on a
loopback port) and, with ``--postgres``, the production shape too (PostgreSQL + Redis), and sends:

1. auth: every operation of the served OpenAPI schema x {no key, unknown key, malformed header, revoked key, each
   wrong scope, a valid key}; the feedback endpoint x its learning token. A refused request answering 2xx is a leak;
2. paths: hostile memory-file names (traversal, encodings, NUL, absolute paths, the data dir's files, lookalikes);
3. nul: ``\\u0000`` in a turn, a correction and a feedback under every Content-Type (and none);
4. size: bodies just over ``MAX_REQUEST_BYTES``, far over it, a lying Content-Length and a chunked flood;
5. links: each memory file replaced by a symlink (``/etc/passwd``, the data dir's ``secret_key``, ``reflection.db``),
   a FIFO, a directory and a dangling link, read through the file and history endpoints with a time limit;
6. regex: catastrophic correction patterns saved with the ``annotate`` scope, then turns built to trip them; each
   turn must still be decided (by the worker) within a time limit;
7. ids: turns carrying Chinese resident ids, US SSNs and UK NI numbers go through the whole pipeline; none may
   reach a memory file, ``GET /api/v1/dataset/samples`` or any export format made without ``include_pii``;
8. fuzz: random operations of the schema with junk path values, query strings and bodies.

A leak is any answer carrying a marker it must never carry: a line of ``/etc/passwd``, the secret key, SQLite's
file header, a traceback, a national id of step 7; a refused request that answered 2xx; a stored NUL; a request
left hanging past its time limit. Every 5xx is counted with its request.

    python benchmarks/security_probe.py              # the full probe (a few thousand requests), embedded default
    python benchmarks/security_probe.py --postgres   # the same against PostgreSQL + Redis as well
    python benchmarks/security_probe.py --quick      # the short mode CI runs (tests/integration/test_security_probe.py)
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.parse
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._harness import PYTHON, ROOT, Service, machine, service  # noqa: E402

LEARNING_TOKEN = "probe-learning-token-7f3a"
TIMEOUT_S = 10.0
# Valid national ids (checked by reflection_site.privacy): none may leave the database unredacted.
NATIONAL_IDS = {
    "110105198001010016": "我的身份证号是{id}，请记住。",
    "11010519491231002X": "My mother's resident ID is {id}.",
    "536-22-1048": "My SSN is {id}, keep it for the tax form.",
    "AB 12 34 56 C": "My national insurance number is {id}.",
}
MEMORY_FILES = ("MEMORY.md", "USER.md", "SOUL.md", "IDENTITY.md", "AGENTS.md", "TOOLS.md")


@dataclass
class Answer:
    status: int
    body: bytes
    headers: dict[str, str]
    seconds: float


@dataclass
class Report:
    database: str
    tried: int = 0
    by_category: Counter[str] = field(default_factory=Counter)
    server_errors: list[str] = field(default_factory=list)
    leaks: list[str] = field(default_factory=list)
    statuses: Counter[int] = field(default_factory=Counter)
    category_statuses: dict[str, Counter[int]] = field(default_factory=dict)
    slowest: list[tuple[float, str]] = field(default_factory=list)
    scanned: Counter[str] = field(default_factory=Counter)  # what the id check read: a check of nothing is no check

    def as_dict(self) -> dict[str, Any]:
        return {
            "database": self.database,
            "requests_tried": self.tried,
            "by_category": dict(self.by_category),
            "server_errors": len(self.server_errors),
            "server_error_samples": self.server_errors[:20],
            "leaks": len(self.leaks),
            "leak_samples": self.leaks[:20],
            "statuses": {str(k): v for k, v in sorted(self.statuses.items())},
            "statuses_by_category": {c: dict(sorted(s.items())) for c, s in self.category_statuses.items()},
            "slowest": self.slowest,
            "scanned": dict(self.scanned),
        }


class Probe:
    def __init__(self, svc: Service, report: Report, *, rng: random.Random) -> None:
        self.svc = svc
        self.report = report
        self.rng = rng
        self.data_dir = svc.workspace / ".openclaw-reflection"
        self.secret = (
            (self.data_dir / "secret_key").read_text().strip() if (self.data_dir / "secret_key").exists() else ""
        )
        self.keys: dict[str, str] = {}
        self.category = "setup"

    # --- HTTP ------------------------------------------------------------------------------------------------
    def send(
        self,
        method: str,
        path: str,
        body: bytes | str | None = None,
        headers: dict[str, str] | None = None,
        *,
        timeout: float = TIMEOUT_S,
        expect_refusal: bool = False,
    ) -> Answer | None:
        """One request on its own connection; counts it, checks the answer for 5xx and leaks."""
        raw = body.encode() if isinstance(body, str) else body
        if not path.isascii():
            path = urllib.parse.quote(path, safe="/%?&=:;~!$'()*+,@[]")
        conn = http.client.HTTPConnection("127.0.0.1", self.svc.port, timeout=timeout)
        started = time.monotonic()
        self.report.tried += 1
        self.report.by_category[self.category] += 1
        label = f"{self.category}: {method} {path[:120]}"
        try:
            conn.putrequest(method, path, skip_accept_encoding=True)
            for name, value in (headers or {}).items():
                conn.putheader(name, value)
            if raw is not None and not any(k.lower() == "content-length" for k in (headers or {})):
                conn.putheader("Content-Length", str(len(raw)))
            conn.endheaders()
            if raw:
                conn.send(raw)
            response = conn.getresponse()
            answer = Answer(
                response.status,
                response.read(),
                {k.lower(): v for k, v in response.getheaders()},
                time.monotonic() - started,
            )
        except TimeoutError:
            self.report.leaks.append(f"{label}: no answer within {timeout} s (a stalled worker)")
            return None
        except (ConnectionError, http.client.HTTPException, OSError) as exc:
            # The server may close on an oversized body before reading it: a refusal, not a failure.
            self.report.statuses[0] += 1
            if self.category != "size":
                self.report.server_errors.append(f"{label}: connection failed: {exc!r}")
            return None
        finally:
            conn.close()
        self.report.statuses[answer.status] += 1
        self.report.category_statuses.setdefault(self.category, Counter())[answer.status] += 1
        self.report.slowest = sorted([*self.report.slowest, (round(answer.seconds, 2), label)], reverse=True)[:5]
        if answer.status >= 500:
            self.report.server_errors.append(f"{label}: {answer.status} {answer.body[:200]!r}")
        if expect_refusal and answer.status < 400:
            self.report.leaks.append(f"{label}: answered {answer.status} to a request that must be refused")
        self.check_leaks(label, answer.body)
        return answer

    def check_leaks(self, label: str, body: bytes) -> None:
        text = body.decode("utf-8", "replace")
        markers = {
            "a line of /etc/passwd": "root:x:0:0",
            "SQLite's file header": "SQLite format 3",
            "a traceback": "Traceback (most recent call last)",
        }
        if self.secret:
            markers["the secret key"] = self.secret
        for what, marker in markers.items():
            if marker in text:
                self.report.leaks.append(f"{label}: the answer holds {what}")

    def json(self, method: str, path: str, payload: Any, key: str | None = None, **kw: Any) -> Answer | None:
        headers = {"Content-Type": "application/json"}
        if key:
            headers["Authorization"] = f"Bearer {key}"
        headers.update(kw.pop("headers", {}))
        return self.send(method, path, json.dumps(payload), headers, **kw)

    def make_keys(self) -> None:
        """Every key the probe uses, and a revoked one, made by one ``manage.py shell`` (one Django start-up)."""
        combos = [
            ("ingest",), ("read",), ("operate",), ("annotate",), ("ingest", "read"), ("operate", "read"),
            ("ingest", "read", "operate", "annotate"),
        ]  # fmt: skip
        code = (
            "import json; from django.utils import timezone; from reflection_site.models import ApiKey\n"
            f"combos = {combos!r}\n"
            "keys = {'+'.join(c): ApiKey.generate('probe-' + '+'.join(c), list(c))[1] for c in combos}\n"
            "row, keys['revoked'] = ApiKey.generate('probe-revoked', ['ingest', 'read', 'operate', 'annotate'])\n"
            "ApiKey.objects.filter(id=row.id).update(revoked_at=timezone.now())\n"
            "print(json.dumps(keys))"
        )
        self.keys = json.loads(self.svc.manage("shell", "-c", code).strip().splitlines()[-1])

    def key(self, *scopes: str) -> str:
        return self.keys["+".join(scopes)]

    def turn(self, user: str, *, session: str = "channel:probe:ada", key: str | None = None) -> dict[str, Any] | None:
        body = {
            "session": {"id": session, "channel_id": "probe"},
            "user_message": {"content": user},
            "agent_reply": {"content": "Noted."},
            "context": [{"role": "user", "message": "Hi", "timestamp": 1_700_000_000_000}],
        }
        answer = self.json("POST", "/api/v1/turns", body, key or self.key("ingest", "read"))
        return json.loads(answer.body) if answer is not None and answer.status in (200, 201) else None

    # --- 1. The auth matrix ----------------------------------------------------------------------------------
    def auth(self, schema: dict[str, Any]) -> None:
        self.category = "auth"
        scopes = ["ingest", "read", "operate", "annotate"]
        revoked = self.keys["revoked"]
        for path, methods in schema["paths"].items():
            url = _fill(path, "USER.md")
            for method, operation in methods.items():
                method = method.upper()
                security = [name for req in operation.get("security", []) for name in req]
                body = "{}" if method != "GET" else None
                if "LearningToken" in security:
                    for token, refused in ((None, True), ("wrong", True), (LEARNING_TOKEN, False)):
                        headers = {"Content-Type": "application/json"}
                        if token:
                            headers["X-Learning-Token"] = token
                        self.send(method, url, body, headers, expect_refusal=refused)
                    continue
                cases: list[tuple[dict[str, str], bool]] = [
                    ({}, True),
                    ({"Authorization": "Bearer rk_unknownunknownunknownunknown"}, True),
                    ({"Authorization": "Token something"}, True),
                    ({"Authorization": f"Bearer {revoked}"}, True),
                ]
                for scope in scopes:
                    cases.append(({"Authorization": f"Bearer {self.key(scope)}"}, None))  # type: ignore[arg-type]
                for headers, refused in cases:
                    headers = {**headers, "Content-Type": "application/json"}
                    answer = self.send(method, url, body, headers, expect_refusal=bool(refused))
                    if refused is None and answer is not None and answer.status == 401:
                        self.report.leaks.append(f"auth: {method} {path}: a valid key was answered 401")

    # --- 2. Path names -----------------------------------------------------------------------------------------
    def paths(self) -> None:
        self.category = "paths"
        reader = self.key("read")
        names = [
            "../settings.py", "..%2Fsettings.py", "..%2f..%2f..%2fetc%2fpasswd", "%2e%2e%2f%2e%2e%2fetc%2fpasswd",
            "/etc/passwd", "%2Fetc%2Fpasswd", "USER.md%00.txt", "USER.md%00", "USER.md%2F..%2F..%2Fetc%2Fpasswd",
            "....//....//etc/passwd", "..%5C..%5Cetc%5Cpasswd", ".openclaw-reflection%2Fsecret_key",
            ".openclaw-reflection%2Freflection.db", "secret_key", "reflection.db", "user.md", "USER.MD", "USER.md.",
            "USER.md%20", "%55SER.md", "USER%E2%80%AE.md", "ＵＳＥＲ.md", "USER.md%0A", "memory%2F..%2F..%2Fetc%2Fpasswd",
            "bank%2F..%2F..%2F.openclaw-reflection%2Fsecret_key", "~root", "%25", "x" * 3000, "MEMORY.md;ls",
            "MEMORY.md%3Bcat%20%2Fetc%2Fpasswd", "%C0%AE%C0%AE%2Fetc%2Fpasswd", "..", ".", "%00",
        ]  # fmt: skip
        for name in names:
            for suffix in ("", "/history"):
                url = f"/api/v1/guardian/files/{name}{suffix}"
                answer = self.send("GET", url, headers={"Authorization": f"Bearer {reader}"})
                if answer is not None and answer.status == 200 and urllib.parse.unquote(name) not in MEMORY_FILES:
                    self.report.leaks.append(f"paths: {url} answered 200")

    # --- 3. NUL under every Content-Type ---------------------------------------------------------------------
    def nul(self) -> None:
        self.category = "nul"
        key = self.key("ingest", "read", "operate", "annotate")
        turn = self.turn("I prefer tea in the afternoon.")
        turn_id = turn["id"] if turn else "none"
        payloads = {
            "/api/v1/turns": {
                "session": {"id": "channel:probe:nul", "channel_id": "probe"},
                "user_message": {"content": "evil \u0000 here"},
                "agent_reply": {"content": "ok"},
                "context": [],
            },
            f"/api/v1/traces/{turn_id}/feedback": {"user_id": "u\u0000", "feedback": "down", "reason": "x\u0000y"},
            "/api/v1/guardian/audits/none/corrections": {
                "status": "refused",
                "reason": "no\u0000",
                "corrected_by": "p",
            },
        }
        content_types = [
            None, "application/json", "text/plain", "application/vnd.api+json", "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=xyz", "application/json; charset=utf-16", "application/octet-stream",
            "text/html", "application/xml",
        ]  # fmt: skip
        for path, payload in payloads.items():
            for content_type in content_types:
                for encoding in ("escaped", "raw"):
                    text = json.dumps(payload)
                    if encoding == "raw":
                        text = text.replace("\\u0000", "\x00")
                    headers = {"Authorization": f"Bearer {key}", "X-Learning-Token": LEARNING_TOKEN}
                    if content_type:
                        headers["Content-Type"] = content_type
                    answer = self.send("POST", path, text, headers)
                    if answer is not None and answer.status < 400:
                        self.report.leaks.append(
                            f"nul: POST {path} ({content_type}, {encoding}) answered {answer.status}"
                        )
        self.stored_nul_check()

    def stored_nul_check(self) -> None:
        database = self.data_dir / "reflection.db"
        if not database.exists():
            return  # PostgreSQL refuses NUL in text by itself
        with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as conn:
            for table, column in (
                ("conversation_turns", "user_message_content"),
                ("conversation_turns", "feedback_json"),
            ):
                try:
                    found = conn.execute(f"SELECT count(*) FROM {table} WHERE instr({column}, char(0)) > 0").fetchone()[
                        0
                    ]
                except sqlite3.Error:
                    continue
                if found:
                    self.report.leaks.append(f"nul: {found} row(s) of {table}.{column} hold a NUL")

    # --- 4. Oversized bodies ---------------------------------------------------------------------------------
    def size(self, limit: int) -> None:
        self.category = "size"
        key = self.key("ingest", "read")
        auth = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        for size in (limit + 1, limit + 4096, 3 * limit):
            body = b'{"session": {"id": "channel:probe:big"}, "user_message": {"content": "' + b"a" * size + b'"}}'
            answer = self.send("POST", "/api/v1/turns", body, auth, timeout=60)
            if answer is not None and answer.status != 413:
                self.report.leaks.append(f"size: a {size}-byte body answered {answer.status}, not 413")
        # A Content-Length far beyond the body, and beyond the limit.
        self.send("POST", "/api/v1/turns", b"{}", {**auth, "Content-Length": str(limit * 10)}, timeout=15)
        self.send("POST", "/api/v1/turns", b"{}", {**auth, "Content-Length": "-1"}, timeout=15)
        self.send("POST", "/api/v1/turns", b"{}", {**auth, "Content-Length": "99999999999999999999"}, timeout=15)
        # A chunked body bigger than the limit.
        self._chunked(limit * 2, auth)
        # A deep JSON nest and a huge number.
        self.send("POST", "/api/v1/turns", "[" * 100_000 + "]" * 100_000, auth, timeout=30)
        self.send("POST", "/api/v1/turns", '{"n": ' + "9" * 100_000 + "}", auth, timeout=30)

    def _chunked(self, total: int, headers: dict[str, str]) -> None:
        self.report.tried += 1
        self.report.by_category[self.category] += 1
        try:
            with socket.create_connection(("127.0.0.1", self.svc.port), timeout=30) as sock:
                head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
                sock.sendall(
                    f"POST /api/v1/turns HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n{head}\r\n".encode()
                )
                chunk = b"a" * 65536
                sent = 0
                while sent < total:
                    sock.sendall(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    sent += len(chunk)
                sock.sendall(b"0\r\n\r\n")
                status_line = sock.recv(4096).split(b"\r\n", 1)[0]
        except OSError:
            self.report.statuses[0] += 1
            return
        status = int(status_line.split()[1]) if len(status_line.split()) > 1 else 0
        self.report.statuses[status] += 1
        if status >= 500:
            self.report.server_errors.append(f"size: chunked {total} bytes: {status_line!r}")

    # --- 5. Symlinks, FIFOs, directories ------------------------------------------------------------------------
    def links(self) -> None:
        self.category = "links"
        reader = self.key("read")
        targets: dict[str, Any] = {
            "/etc/passwd": lambda p: p.symlink_to("/etc/passwd"),
            "secret_key": lambda p: p.symlink_to(self.data_dir / "secret_key"),
            "reflection.db": lambda p: p.symlink_to(self.data_dir / "reflection.db"),
            "relative link": lambda p: p.symlink_to(Path(".openclaw-reflection") / "secret_key"),
            "fifo": lambda p: os.mkfifo(p),
            "directory": lambda p: p.mkdir(),
            "dangling": lambda p: p.symlink_to(self.svc.workspace / "nowhere"),
        }
        for name in MEMORY_FILES:
            path = self.svc.workspace / name
            for what, make in targets.items():
                _remove(path)
                make(path)
                for suffix in ("", "/history"):
                    url = f"/api/v1/guardian/files/{name}{suffix}"
                    answer = self.send("GET", url, headers={"Authorization": f"Bearer {reader}"}, timeout=8)
                    if answer is not None and answer.status == 200 and what not in ("dangling",):
                        content = json.loads(answer.body) if suffix == "" else {}
                        if suffix == "" and content.get("exists"):
                            self.report.leaks.append(f"links: {url} read through a {what}")
                _remove(path)

    # --- 6. Catastrophic correction patterns -----------------------------------------------------------------
    def regex(self, *, wait_s: float) -> None:
        self.category = "regex"
        annotator = self.key("annotate")
        audit_id = self._an_audit()
        patterns = [
            "(a+)+$", "(a|a)+$", "(a|aa)+$", "(.*a){20}", "^(a+)+b", "(x+x+)+y", "((a+)*)+$", "(\\w+\\s?)+$",
            "(a?){30}a{30}", "([a-z]+)*[0-9]", "(?:a+)+(?:b+)+c", "(\\d+)*x", "(.*)*$", "(a+){2,}$", "(?=a)*",
            "(a)\\1+", "(?<=a)b", "[", "(", "*", "a{1000000}", "(?P<x>a)(?P=x)",
        ]  # fmt: skip
        if audit_id:
            for pattern in patterns:
                body = {
                    "status": "refused",
                    "reason": "probe: a catastrophic pattern",
                    "corrected_by": "probe",
                    "apply_to_future": True,
                    "correction_pattern": pattern,
                }
                self.json("POST", f"/api/v1/guardian/audits/{audit_id}/corrections", body, annotator, timeout=15)
        evil = ["a" * n + "!" for n in (24, 31, 64, 5000)] + ["x" * 40 + "y", "1" * 200 + "x", " " * 3000 + "!"]
        ingest = self.key("ingest", "read")
        turns = [self.turn(f"Remember: {text}", session="channel:probe:regex", key=ingest) for text in evil]
        ids = [t["id"] for t in turns if t]
        deadline = time.monotonic() + wait_s
        pending = set(ids)
        while pending and time.monotonic() < deadline:
            for turn_id in list(pending):
                answer = self.send("GET", f"/api/v1/turns/{turn_id}", headers={"Authorization": f"Bearer {ingest}"})
                if (
                    answer is not None
                    and answer.status == 200
                    and json.loads(answer.body).get("gate_status") != "pending"
                ):
                    pending.discard(turn_id)
            time.sleep(0.5)
        for turn_id in pending:
            self.report.leaks.append(f"regex: turn {turn_id} not decided within {wait_s} s (a stalled gate)")

    def _an_audit(self) -> str | None:
        reader = self.key("read")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            answer = self.send("GET", "/api/v1/guardian/audits?limit=1", headers={"Authorization": f"Bearer {reader}"})
            if answer is not None and answer.status == 200:
                items = json.loads(answer.body)["items"]
                if items:
                    return items[0]["id"]
            time.sleep(0.5)
        return None

    # --- 7. National ids through the pipeline ---------------------------------------------------------------
    def ids(self, *, wait_s: float) -> None:
        self.category = "ids"
        ingest = self.key("ingest", "read")
        operator = self.key("operate", "read")
        turn_ids = []
        for number, template in NATIONAL_IDS.items():
            for session in ("channel:probe:zhang", "channel:probe:smith"):
                turn = self.turn(template.format(id=number), session=session, key=ingest)
                if turn:
                    turn_ids.append(turn["id"])
        self._wait_decided(turn_ids, ingest, wait_s)
        for name in MEMORY_FILES:
            path = self.svc.workspace / name
            if path.is_file() and not path.is_symlink():
                self.report.scanned["memory files"] += 1
                self._scan(f"ids: {name} on disk", path.read_text(encoding="utf-8", errors="replace"))
        self.svc.manage("dataset", "collect")
        listing = self.send("GET", "/api/v1/dataset/samples?limit=200", headers={"Authorization": f"Bearer {operator}"})
        if listing is not None:
            self.report.scanned["samples"] += len(json.loads(listing.body).get("items", []))
            self._scan("ids: GET /api/v1/dataset/samples", listing.body.decode("utf-8", "replace"))
            for sample in json.loads(listing.body).get("items", []):
                one = self.send(
                    "GET", f"/api/v1/dataset/samples/{sample['id']}", headers={"Authorization": f"Bearer {operator}"}
                )
                if one is not None:
                    self._scan(f"ids: GET sample {sample['id']}", one.body.decode("utf-8", "replace"))
        for fmt in ("openai", "alpaca", "sharegpt", "raw", "csv"):
            created = self.json("POST", "/api/v1/dataset/exports", {"format": fmt, "name": f"probe-{fmt}"}, operator)
            if created is None or created.status != 202:
                continue
            export_id = json.loads(created.body)["id"]
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                state = self.send(
                    "GET", f"/api/v1/dataset/exports/{export_id}", headers={"Authorization": f"Bearer {operator}"}
                )
                if state is not None and json.loads(state.body).get("status") in ("completed", "failed"):
                    break
                time.sleep(0.5)
            download = self.send(
                "GET",
                f"/api/v1/dataset/exports/{export_id}/download?split=all",
                headers={"Authorization": f"Bearer {operator}"},
            )
            if download is not None and download.status == 200:
                self.report.scanned["export formats"] += 1
                self._scan(f"ids: the {fmt} export", download.body.decode("utf-8", "replace"))
        out = self.svc.manage("dataset", "export-conversations", "--date", time.strftime("%Y-%m-%d", time.gmtime()))
        path = Path(out.strip().rsplit(" to ", 1)[-1])
        if path.is_file():
            self.report.scanned["conversation export turns"] += path.read_text(encoding="utf-8").count("\n")
            self._scan(f"ids: {path.name}", path.read_text(encoding="utf-8", errors="replace"))

    def _wait_decided(self, turn_ids: list[str], key: str, wait_s: float) -> None:
        deadline = time.monotonic() + wait_s
        pending = set(turn_ids)
        while pending and time.monotonic() < deadline:
            for turn_id in list(pending):
                answer = self.send("GET", f"/api/v1/turns/{turn_id}", headers={"Authorization": f"Bearer {key}"})
                if answer is not None and json.loads(answer.body or b"{}").get("gate_status") not in (None, "pending"):
                    pending.discard(turn_id)
            time.sleep(0.5)
        time.sleep(2)  # the guardian runs after the gate

    def _scan(self, where: str, text: str) -> None:
        for number in NATIONAL_IDS:
            variants = {number, number.replace("-", ""), number.replace(" ", "")}
            if any(v in text for v in variants):
                self.report.leaks.append(f"{where} holds the national id {number}")

    # --- 8. Fuzz ---------------------------------------------------------------------------------------------
    def fuzz(self, schema: dict[str, Any], count: int) -> None:
        self.category = "fuzz"
        key = self.key("ingest", "read", "operate", "annotate")
        operations = [(p, m.upper()) for p, ms in schema["paths"].items() for m in ms]
        junk_values = [
            "", "0", "-1", "9" * 40, "null", "true", "%00", "%", "..%2F", "' OR 1=1 --", "<script>", "ＡＢ", "\u202e",
            "a" * 600, "1e309", "NaN", "[]", "{}", "01J" + "Z" * 23, "USER.md", "channel:x:y", "%ff%fe", "😀",
        ]  # fmt: skip
        bodies: list[Any] = [
            {}, [], None, "str", 1, {"a": None}, {"session": None}, {"ids": [2**70]}, {"ids": ["x"] * 30},
            {"format": "x" * 9999}, {"train_split": 1e309}, {"status": {"$ne": 1}}, {"user_id": "a" * 10_000},
            {"session": {"id": "x" * 5000}, "user_message": {"content": "y"}, "agent_reply": {"content": "z"}},
        ]  # fmt: skip
        for _ in range(count):
            path, method = self.rng.choice(operations)
            url = _fill(path, None, rng=self.rng, junk=junk_values)
            if self.rng.random() < 0.5:
                params = {
                    self.rng.choice(
                        ["limit", "cursor", "since", "until", "q", "k", "status", "type", "window"]
                    ): self.rng.choice(junk_values)
                }
                url += "?" + urllib.parse.urlencode(params)
            body = None if method == "GET" else json.dumps(self.rng.choice(bodies))
            headers = {
                "Authorization": f"Bearer {key}",
                "Content-Type": "application/json",
                "X-Learning-Token": LEARNING_TOKEN,
            }
            self.send(method, url, body, headers)


def _fill(path: str, value: str | None, *, rng: random.Random | None = None, junk: list[str] | None = None) -> str:
    def one(_: Any) -> str:
        if value is not None:
            return value
        assert rng is not None and junk is not None
        return urllib.parse.quote(rng.choice(junk), safe="%")

    import re

    return re.sub(r"{[^}]+}", one, path)


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file() or path.is_fifo():
        path.unlink()
    elif path.is_dir():
        path.rmdir()


def start_worker(svc: Service) -> None:
    log = open(svc.workspace / "worker.log", "wb")  # noqa: SIM115 - lives as long as the worker
    worker = subprocess.Popen(
        [PYTHON, "-m", "celery", "-A", "reflection_site", "worker", "-Q", "celery,guardian", "-c", "1", "-P", "solo",
         "--without-heartbeat", "--without-gossip", "--without-mingle", "--loglevel", "WARNING"],
        cwd=ROOT, env=svc.env, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    svc.extra.append(worker)


def run(database: str, *, quick: bool, seed: int = 18) -> dict[str, Any]:
    env = {
        "LEARNING_FEEDBACK_TOKEN": LEARNING_TOKEN,
        "MAX_REQUEST_BYTES": str(256 * 1024),
        "DATASET_NOT_ROLLED_BACK_WITHIN_DAYS": "0",
        "LEARNING_TOKEN_FAILURES_PER_MIN": "1000000",  # the auth matrix sends many wrong tokens on purpose
        "LEARNING_RATE_LIMIT_PER_CLIENT_PER_MIN": "1000000",
        "DEBUG": "false",
        "LOG_LEVEL": "ERROR",  # a 4xx is the expected answer here, thousands of times
    }
    report = Report(database=database)
    started = time.monotonic()
    with service(database, **env) as svc:
        svc.start_web(workers=2)
        start_worker(svc)
        probe = Probe(svc, report, rng=random.Random(seed))
        probe.make_keys()
        first = probe.send("GET", "/api/openapi.json", timeout=60)
        if first is None or first.status != 200:
            raise RuntimeError(f"the service did not serve its schema: {report.server_errors} {report.leaks}")
        schema = json.loads(first.body)
        probe.turn("I prefer summaries on Fridays.")  # something for the worker to write, so that audits exist
        phases = {
            "auth": lambda: probe.auth(schema),
            "paths": probe.paths,
            "nul": probe.nul,
            "size": lambda: probe.size(256 * 1024),
            "regex": lambda: probe.regex(wait_s=60),
            "ids": lambda: probe.ids(wait_s=90),
            "links": probe.links,
            "fuzz": lambda: probe.fuzz(schema, 150 if quick else 2500),
        }
        timings = {}
        for name, phase in phases.items():
            began = time.monotonic()
            phase()
            timings[name] = round(time.monotonic() - began, 1)
        log = (svc.workspace / "worker.log").read_text(errors="replace")
        worker_tracebacks = log.count("Traceback (most recent call last)")
        worker_log_tail = log[-3000:] if worker_tracebacks else ""
    result = report.as_dict()
    result["worker_tracebacks"] = worker_tracebacks
    result["worker_log_tail"] = worker_log_tail
    result["phase_seconds"] = timings
    result["seconds"] = round(time.monotonic() - started, 1)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="The short mode (CI): fewer fuzz requests.")
    parser.add_argument("--postgres", action="store_true", help="Also probe PostgreSQL + Redis.")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    results = [run("sqlite", quick=args.quick)]
    if args.postgres:
        results.append(run("postgres", quick=args.quick))
    if args.json:
        print(json.dumps({"machine": machine(), "results": results}, indent=2))
    else:
        print(f"machine: {machine()}")
        for r in results:
            print(
                f"{r['database']}: {r['requests_tried']} requests in {r['seconds']} s, {r['server_errors']} 5xx, "
                f"{r['leaks']} leaks, worker tracebacks {r['worker_tracebacks']}; by category {r['by_category']}"
            )
            print(f"  seconds by phase: {r['phase_seconds']}; slowest answers: {r['slowest']}")
            print(f"  read for national ids: {r['scanned']}")
            print(f"  statuses by category: {r['statuses_by_category']}")
            for line in r["server_error_samples"] + r["leak_samples"]:
                print(f"  {line}")
            if r["worker_log_tail"]:
                print(r["worker_log_tail"])
    clean = all(r["server_errors"] == 0 and r["leaks"] == 0 and r["worker_tracebacks"] == 0 for r in results)
    sys.exit(0 if clean else 1)


if __name__ == "__main__":
    main()
