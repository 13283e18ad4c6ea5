"""A fake OpenAI-compatible HTTP server on loopback, for tests, benchmarks and worker subprocesses.

The real ``openai`` SDK talks to it over HTTP, so the client's timeouts, retries and parsing all run.

    llm = start_fake_llm()                 # http://127.0.0.1:<port>/v1
    llm.queue(FakeReply(status=500), {"decision": "NO_WRITE", "reason": "small talk"})
    ...                                    # the next two chat calls get a 500, then that object
    llm.stop()

``POST /v1/chat/completions`` serves the queued replies in order, then the default responder
(``smart_responder`` unless ``set_default`` changed it). ``POST /v1/embeddings`` answers with
deterministic hashed bag-of-words vectors, so similar texts get similar vectors. Every JSON body
received is appended to ``requests`` (its path to ``paths``).

A request with ``"stream": true`` (OpenClaw's ``openai-completions`` transport asks for one) is answered
as server-sent ``chat.completion.chunk`` events ending in ``data: [DONE]``, with the usage in a last chunk
when ``stream_options.include_usage`` asks for it. A ``FakeReply`` with ``tool_calls`` answers with
those calls (``finish_reason: "tool_calls"``), streamed or not.
"""

from __future__ import annotations

import array
import base64
import hashlib
import json
import math
import re
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class FakeReply:
    content: str | dict = "{}"
    status: int = 200
    delay: float = 0.0
    model: str = "fake-model-1"
    usage: tuple[int, int] | None = (11, 7)
    body: str | None = None  # Sent as the whole response body instead of a chat completion (a broken proxy).
    # [{"id": "call_1", "name": "read", "arguments": {...} or "<json>"}]: the assistant calls these tools.
    tool_calls: list[dict] | None = None


Responder = Callable[[dict], "str | dict | FakeReply"]


# --- The default responder ------------------------------------------------------------------------
def _system_text(body: dict) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "system")


def _user_text(body: dict) -> str:
    return "\n".join(str(m.get("content") or "") for m in body.get("messages", []) if m.get("role") == "user")


def _block(text: str, tag: str) -> str:
    match = re.search(rf"<{tag}>\n?(.*?)\n?</{tag}>", text, re.DOTALL)
    return match.group(1) if match else ""


def _json_lines(text: str) -> list[dict]:
    items = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                items.append(json.loads(line))
            except ValueError:
                continue
    return items


def gate_responder(body: dict) -> dict:
    """Answer a memory-gate prompt (sessions_app/prompts/gate-*.txt) with the heuristic gate's verdict."""
    from sessions_app.heuristic_gate import CorrectionHint, classify_turn

    system, user = _system_text(body), _user_text(body)
    turn = (_json_lines(_block(user, "turn")) or [{}])[0]
    context = [(item.get("role", "user"), item.get("message", "")) for item in _json_lines(_block(user, "context"))]
    hints = [
        CorrectionHint(
            pattern=item.get("pattern") or "",
            corrected_status=item.get("corrected_status") or "refused",
            corrected_target_file=item.get("corrected_target_file"),
            correction_id=item.get("id") or "",
        )
        for item in _json_lines(_block(system, "corrections"))
        if item.get("pattern")
    ]
    verdict = classify_turn(turn.get("user", ""), turn.get("agent", ""), context=context, corrections=hints)
    return {
        "decision": verdict.decision,
        "reason": verdict.reason,
        "candidate_fact": verdict.candidate_fact,
        "confidence": verdict.confidence,
    }


def guardian_responder(body: dict) -> dict:
    """Answer a write-guardian prompt (guardian_app/prompts/guardian-*.txt) with the offline guardian's
    verdict: an append edit of the fact, or a refusal (duplicate, vague, secret, a correction's pattern)."""
    from guardian_app.write.heuristic_guardian import GuardianCorrection, review_fact

    system, user = _system_text(body), _user_text(body)
    target = re.search(r"^Target file: (\S+)", user, re.MULTILINE)
    corrections = [
        GuardianCorrection(
            pattern=item.get("pattern") or "",
            corrected_status=item.get("corrected_status") or "refused",
            reason=item.get("reason") or "",
            correction_id=item.get("id") or "",
        )
        for item in _json_lines(_block(system, "corrections"))
        if item.get("pattern")
    ]
    verdict = review_fact(
        _block(user, "fact"),
        _block(user, "file"),
        target_file=target.group(1) if target else "MEMORY.md",
        corrections=corrections,
    )
    return verdict.as_reply()


def reflect_responder(body: dict) -> dict:
    """Answer a reflect prompt (guardian_app/prompts/reflect-*.txt): one statement per fact, newest first
    (at most three), each citing its fact's source; no MEMORY.md proposals."""
    facts = _json_lines(_block(_user_text(body), "facts"))
    return {
        "summary": [{"text": f"{f.get('content', '')}", "sources": [f.get("source", "")]} for f in facts[:3]],
        "memory_proposals": [],
    }


def skill_responder(body: dict) -> dict:
    """Answer a skill-draft prompt (guardian_app/prompts/skill-*.txt): the memory's sentences as steps."""
    memory = _block(_user_text(body), "memory")
    steps = [s.strip(" .") for s in re.split(r"(?<=[.;])\s+|\bthen\b", memory) if s.strip(" .")]
    words = re.findall(r"[a-z0-9]+", memory.lower())[:3]
    return {
        "name": "-".join(words) or "skill",
        "description": steps[0] if steps else memory[:100],
        "triggers": [f"The user asks about {' '.join(words)}"],
        "steps": steps[:5],
        "confidence": 0.85,
    }


# --- An OpenClaw agent (tests/integration/test_openclaw_*.py drive the real `openclaw agent`) --------------
OPENCLAW_MARKER = "running inside OpenClaw"
# A user message naming a file ("… read notes.txt …") gets a `read` tool call for it, then a reply.
_OPENCLAW_FILE = re.compile(r"(?<![\w/.-])([\w-]+\.(?:txt|md|json))\b")


def _text_of(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return str(content or "")


def openclaw_responder(body: dict) -> FakeReply:
    """Answer an OpenClaw agent turn: a tool call when the user's message names a file (once per turn), a
    reply quoting the tool result after it, else a short acknowledgement of the user's words."""
    messages = body.get("messages", [])
    # OpenClaw adds user-role blocks of its own (internal context) after the prompt and after tool results.
    internal = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>"
    asked = max(
        (
            i
            for i, m in enumerate(messages)
            if m.get("role") == "user" and not _text_of(m.get("content")).lstrip().startswith(internal)
        ),
        default=-1,
    )
    prompt = _text_of(messages[asked].get("content")) if asked >= 0 else ""
    prompt = re.sub(r"^\[[^\]]*\d{2}:\d{2}[^\]]*\]\s*", "", prompt).split("\n\nRuntime:")[0]
    prompt = prompt.split(internal)[0].strip()
    results = [m for m in messages[asked + 1 :] if m.get("role") == "tool"]
    if results:
        first_line = _text_of(results[-1].get("content")).strip().splitlines()[:1]
        return FakeReply(content=f"The file says: {first_line[0] if first_line else '(empty)'}")
    match = _OPENCLAW_FILE.search(prompt)
    tools = {t.get("function", {}).get("name") for t in body.get("tools") or []}
    if match and "read" in tools:
        call_id = "call_" + hashlib.sha1(prompt.encode()).hexdigest()[:10]
        return FakeReply(
            content="", tool_calls=[{"id": call_id, "name": "read", "arguments": {"path": match.group(1)}}]
        )
    return FakeReply(content=f"Noted: {prompt[:200]}")


# Marker in the system message -> the function that answers such prompts. Other parts add theirs here
# (the write guardian: "ROLE: write_guardian" -> an append edit of the fact).
RESPONDERS: dict[str, Responder] = {
    "ROLE: memory_gate": gate_responder,
    "ROLE: write_guardian": guardian_responder,
    "ROLE: reflect": reflect_responder,
    "ROLE: skill_draft": skill_responder,
    OPENCLAW_MARKER: openclaw_responder,
}


def smart_responder(body: dict) -> str | dict | FakeReply:
    """Answer each known kind of prompt as a sensible model would; anything else gets ``{}``."""
    system = _system_text(body)
    for marker, responder in RESPONDERS.items():
        if marker in system:
            return responder(body)
    return {}


# --- Embeddings -----------------------------------------------------------------------------------
_WORD = re.compile(r"[a-z0-9]+|[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]", re.IGNORECASE)


def _tokens(text: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(text)]
    # Adjacent pairs too, so that word order and CJK bigrams count a little.
    return words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]


def embed_text(text: str, dims: int = 384) -> list[float]:
    """A unit vector: each token adds ±1 at a hashed position (the "hashing trick")."""
    vector = [0.0] * dims
    for token in _tokens(text):
        digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
        index = int.from_bytes(digest[:4], "little") % dims
        vector[index] += 1.0 if digest[4] & 1 else -1.0
    norm = math.sqrt(sum(v * v for v in vector))
    if norm == 0:
        vector[0] = 1.0
        return vector
    return [v / norm for v in vector]


def _embedding_response(body: dict) -> dict:
    inputs = body.get("input", "")
    if isinstance(inputs, str) or (isinstance(inputs, list) and inputs and isinstance(inputs[0], int)):
        inputs = [inputs]
    dims = int(body.get("dimensions") or 384)
    data = []
    tokens = 0
    for index, item in enumerate(inputs):
        text = item if isinstance(item, str) else " ".join(str(t) for t in item)
        tokens += len(_tokens(text)) or 1
        vector = embed_text(text, dims)
        if body.get("encoding_format") == "base64":
            encoded: Any = base64.b64encode(array.array("f", vector).tobytes()).decode()
        else:
            encoded = vector
        data.append({"object": "embedding", "index": index, "embedding": encoded})
    return {
        "object": "list",
        "data": data,
        "model": body.get("model") or "fake-embedding-1",
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


# --- The server -----------------------------------------------------------------------------------
class FakeLLM:
    def __init__(self, server: ThreadingHTTPServer) -> None:
        self._server = server
        host, port = server.server_address[:2]
        self.base_url = f"http://{host}:{port}/v1"
        self.requests: list[dict] = []
        self.paths: list[str] = []
        self._queue: deque[FakeReply | dict | str] = deque()
        self._default: Responder = smart_responder
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="fake-llm", daemon=True)

    def queue(self, *replies: FakeReply | dict | str) -> None:
        with self._lock:
            self._queue.extend(replies)

    def set_default(self, fn: Responder) -> None:
        self._default = fn

    @property
    def chat_requests(self) -> list[dict]:
        return [
            body for path, body in zip(self.paths, self.requests, strict=True) if path.endswith("/chat/completions")
        ]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _record(self, path: str, body: dict) -> None:
        with self._lock:
            self.paths.append(path)
            self.requests.append(body)

    def _next_reply(self, body: dict) -> FakeReply:
        with self._lock:
            queued = self._queue.popleft() if self._queue else None
        reply = queued if queued is not None else self._default(body)
        if isinstance(reply, FakeReply):
            return reply
        return FakeReply(content=reply)


def _tool_calls(reply: FakeReply) -> list[dict]:
    return [
        {
            "id": call.get("id") or f"call_{index}",
            "type": "function",
            "function": {
                "name": call["name"],
                "arguments": call["arguments"]
                if isinstance(call.get("arguments"), str)
                else json.dumps(call.get("arguments") or {}, ensure_ascii=False),
            },
        }
        for index, call in enumerate(reply.tool_calls or [])
    ]


def _chat_completion_stream(reply: FakeReply, body: dict) -> str:
    """The reply as server-sent events: role and content, each tool call, the finish reason, the usage."""
    content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content, ensure_ascii=False)
    head = {
        "id": "chatcmpl-fake-" + hashlib.sha1(str(time.time_ns()).encode()).hexdigest()[:12],
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": reply.model,
    }
    deltas: list[dict] = [{"role": "assistant", "content": content}] if content else [{"role": "assistant"}]
    deltas += [{"tool_calls": [{"index": index, **call}]} for index, call in enumerate(_tool_calls(reply))]
    chunks = [{**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]} for delta in deltas]
    finish = "tool_calls" if reply.tool_calls else "stop"
    chunks.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    if reply.usage is not None and (body.get("stream_options") or {}).get("include_usage"):
        prompt, completion = reply.usage
        usage = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
        chunks.append({**head, "choices": [], "usage": usage})
    events = [f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n" for chunk in chunks]
    return "".join(events) + "data: [DONE]\n\n"


def _chat_completion(reply: FakeReply, body: dict) -> dict:
    content = reply.content if isinstance(reply.content, str) else json.dumps(reply.content, ensure_ascii=False)
    out: dict[str, Any] = {
        "id": "chatcmpl-fake-" + hashlib.sha1(str(time.time_ns()).encode()).hexdigest()[:12],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": reply.model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": content,
                    **({"tool_calls": _tool_calls(reply)} if reply.tool_calls else {}),
                },
                "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                "logprobs": None,
            }
        ],
    }
    if reply.usage is not None:
        prompt, completion = reply.usage
        out["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
    return out


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # Keep-alive: the SDK reuses its connection, as with a real server.
    # One write per response and no Nagle delay: an "instant" endpoint must not wait 40 ms for an ACK.
    wbufsize = 1 << 16
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name.
        pass

    def _send(self, status: int, payload: dict | str, content_type: str = "application/json") -> None:
        data = (payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)).encode()
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # The client gave up (a timeout test).

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming.
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, {"object": "list", "data": [{"id": "fake-model-1", "object": "model", "owned_by": "fake"}]})
        else:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if len(raw) < length:
            # The client went away mid-request (a killed worker): nothing was asked, nothing is recorded or answered.
            self.close_connection = True
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            self._send(400, {"error": {"message": "invalid JSON body", "type": "invalid_request_error"}})
            return
        path = self.path.split("?")[0].rstrip("/")
        fake._record(path, body)
        if path.endswith("/embeddings"):
            self._send(200, _embedding_response(body))
            return
        if not path.endswith("/chat/completions"):
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            reply = fake._next_reply(body)
        except Exception as exc:  # noqa: BLE001 - a responder bug shows as a 500 with its message.
            self._send(500, {"error": {"message": f"fake responder failed: {exc!r}", "type": "server_error"}})
            return
        if reply.delay:
            time.sleep(reply.delay)
        if reply.status != 200:
            message = reply.content if isinstance(reply.content, str) and reply.content != "{}" else "fake error"
            self._send(reply.status, {"error": {"message": message, "type": "server_error", "code": reply.status}})
            return
        if reply.body is not None:
            self._send(200, reply.body)
        elif body.get("stream"):
            self._send(200, _chat_completion_stream(reply, body), content_type="text/event-stream")
        else:
            self._send(200, _chat_completion(reply, body))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() must not wait for idle keep-alive connections.
    fake: FakeLLM


def start_fake_llm(port: int = 0) -> FakeLLM:
    """Start the server on 127.0.0.1 (``port`` 0 picks a free one) in a daemon thread."""
    server = _Server(("127.0.0.1", port), _Handler)
    fake = FakeLLM(server)
    server.fake = fake
    fake._thread.start()
    return fake


if __name__ == "__main__":  # python -m tests.fake_llm [PORT]: a fake endpoint for `make run` by hand.
    import os
    import sys

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reflection_site.settings")
    import django

    django.setup()
    llm = start_fake_llm(int(sys.argv[1]) if len(sys.argv) > 1 else 8765)
    print(f"fake LLM at {llm.base_url} (Ctrl-C stops it)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        llm.stop()
