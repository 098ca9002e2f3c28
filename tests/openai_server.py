"""A local OpenAI-compatible server for the judge's tests and benchmarks (127.0.0.1 only).

It implements ``/v1/chat/completions`` (with and without ``response_format``), ``/v1/files``
and ``/v1/batches``, with a configurable latency and faults injected by markers in the
trajectory text, so each test decides per trajectory what goes wrong:

transient (first attempt of a request only): ``FAULT:429`` (with Retry-After), ``FAULT:500``,
``FAULT:hang`` (past the client's timeout), ``FAULT:drop`` (connection closed), ``FAULT:garbage``
(HTTP 200 whose body is not JSON);
in the answer, every time: ``FAULT:malformed`` (truncated JSON), ``FAULT:schema`` (JSON of the
wrong shape), ``FAULT:hallucinate`` (invented mode id, one missing), ``FAULT:outofrange`` (step
999), ``FAULT:badquote`` (a quote that is in no step), ``FAULT:unreadable`` (no mode line in a
mast-original answer);
``FAULT:fixable``: invalid at first, valid once the answer is sent back for repair.

Account limits, as a provider enforces them: ``rpm`` / ``tpm`` (requests and tokens per minute,
each a token bucket refilled continuously and holding ``burst_s`` seconds' worth, since providers
enforce a per-minute limit over shorter windows) answer 429 with
``Retry-After`` once a bucket is empty; ``ratelimit_headers`` adds OpenAI's
``x-ratelimit-limit/remaining/reset-requests/-tokens`` to every answer. A prompt's cached
tokens are reported as OpenAI does (``usage.prompt_tokens_details.cached_tokens``): the longest
prefix shared with an earlier prompt, from 1,024 tokens on, in steps of 128. ``reject_key``
answers every chat request 401 with the key echoed in the message, as some servers do.

A request is logged with the first ``ID:<word>`` found in its messages (``marker``), so a
test can tell which trajectory a request was about. The default answer marks FM-1.3 present at the first step containing ``LOOP`` (quoting it) and
every other mode absent. Canned answers: each ``JUDGE:FM-x.y`` in a step marks that mode present
at the first step holding it, quoting the marker, so a generated corpus can give the judge any
verdicts it likes (a judge of known error rates). ``supports_json_schema=False`` makes it answer ``json_schema`` requests
with HTTP 500, as llama.cpp's server does.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
import uuid
from collections import Counter, deque
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_STEP = re.compile(r"\[(\w+) step (\d+) \| [^\]\n]*\]\n(.*?)(?=\n\[\1 step |\nEND UNTRUSTED TRAJECTORY)", re.DOTALL)
_MODE_ID = re.compile(r"^- (FM-\d\.\d) ", re.MULTILINE)
#: A mode line of a mast-original prompt; not anchored, as agentdash's prompt runs its lines together.
_ORIGINAL_LINE = re.compile(r"(\d\.\d) ([^:\n]+?): <yes or no>")
_FAULT = re.compile(r"FAULT:(\w+)")
_MARKER = re.compile(r"ID:(\w+)")
_CANNED = re.compile(r"JUDGE:(FM-\d\.\d)")
TRANSIENT = {"429", "500", "hang", "drop", "garbage"}
#: The prompt cache: prefixes count in blocks of 128 tokens (4 characters a token), over the last prompts.
PREFIX_CHARS = 512
PROMPTS_REMEMBERED = 32


def request_key(body: dict[str, Any]) -> str:
    """Identity of a logical request (the same whatever response_format it was sent with)."""
    material = json.dumps([body.get("model"), body.get("messages"), body.get("temperature")], sort_keys=True)
    return hashlib.sha256(material.encode()).hexdigest()[:16]


class FakeOpenAI:
    """The server; use as a context manager. ``log`` lists every request it received."""

    def __init__(self, latency: float = 0.0, *, supports_json_schema: bool = True, hang_seconds: float = 5.0,
                 retry_after: str = "1", port: int = 0, rpm: float | None = None, tpm: float | None = None,
                 burst_s: float = 1.0, ratelimit_headers: bool = False, reject_key: bool = False):
        self.latency = latency
        self.limits = {k: _Bucket(v, burst_s) for k, v in (("requests", rpm), ("tokens", tpm)) if v}
        self.ratelimit_headers = ratelimit_headers
        self.reject_key = reject_key
        #: Digests of the 512-character prefixes of the last prompts, for the prompt cache.
        self._prompts: deque[list[bytes]] = deque(maxlen=PROMPTS_REMEMBERED)
        self._prefixes: Counter[bytes] = Counter()
        self.supports_json_schema = supports_json_schema
        self.hang_seconds = hang_seconds
        self.retry_after = retry_after
        self.log: list[dict[str, Any]] = []
        self.rate_limited = 0
        #: Tokens of the requests admitted under a limit: prompts and answers.
        self.tokens_counted = 0.0
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = _QuietServer(("127.0.0.1", port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def chat_requests(self) -> list[dict[str, Any]]:
        return [e for e in self.log if e["path"] == "/v1/chat/completions"]

    # -- answers -----------------------------------------------------------------------------

    def admit(self, body: dict[str, Any], authorization: str) -> tuple[int, Any, dict[str, str]] | None:
        """The rejection a request gets before it is answered (bad key, rate limit), else None."""
        if self.reject_key:
            given = authorization.removeprefix("Bearer ")
            return 401, {"error": {"message": f"Incorrect API key provided: {given}. You can find your API key "
                                              "at your provider's dashboard.", "code": "invalid_api_key"}}, {}
        if not self.limits:
            return None
        text = "\n".join(str(m.get("content", "")) for m in body.get("messages") or [])
        cost = {"requests": 1.0, "tokens": len(text) / 4 + (body.get("max_tokens") or 0)}
        with self._lock:
            waits = {k: b.wait_for(cost[k]) for k, b in self.limits.items()}
            if any(waits.values()):
                headers = {"Retry-After": f"{max(waits.values()):.3f}"}
                self.rate_limited += 1
                return 429, {"error": {"message": "Rate limit reached", "type": "requests"}}, \
                    headers | self._limit_headers()
            for k, b in self.limits.items():
                b.take(cost[k])
            self.tokens_counted += cost["tokens"] - (body.get("max_tokens") or 0)
        return None

    def _limit_headers(self) -> dict[str, str]:
        if not self.ratelimit_headers:
            return {}
        headers = {}
        for k, b in self.limits.items():
            headers[f"x-ratelimit-limit-{k}"] = str(int(b.per_minute))
            headers[f"x-ratelimit-remaining-{k}"] = str(int(b.level()))
            headers[f"x-ratelimit-reset-{k}"] = f"{b.reset_seconds():.3f}s"
        return headers

    def _cached_tokens(self, text: str) -> int:
        """The prompt-cache hit of ``text``, as OpenAI counts it: the prefix it shares with one of
        the last prompts, in whole 128-token blocks (4 characters a token) from 1,024 tokens on.

        A block boundary is every 512 characters, so the hit is the longest such prefix of
        ``text`` that a remembered prompt also began with: one digest per boundary, computed
        incrementally, looked up in the digests of the remembered prompts (comparing the text
        with each of them took longer than answering the request)."""
        digests, h = [], hashlib.blake2b(digest_size=16)
        for start in range(0, len(text) - len(text) % PREFIX_CHARS, PREFIX_CHARS):
            h.update(text[start:start + PREFIX_CHARS].encode())
            digests.append(h.copy().digest())
        with self._lock:
            blocks = next((k + 1 for k in range(len(digests) - 1, -1, -1) if self._prefixes[digests[k]]), 0)
            if len(self._prompts) == self._prompts.maxlen:
                for d in self._prompts[0]:
                    self._prefixes[d] -= 1
                    if not self._prefixes[d]:
                        del self._prefixes[d]
            self._prompts.append(digests)
            self._prefixes.update(digests)
        tokens = blocks * PREFIX_CHARS // 4
        return 0 if tokens < 1024 else tokens

    def answer(self, body: dict[str, Any], key: str) -> tuple[int, Any, dict[str, str]]:
        """(status, JSON body or raw bytes, headers) for a chat request; also what a batch line gets.

        ``key`` is the body's ``request_key``, which the caller has already computed.
        """
        messages = body.get("messages") or []
        text = "\n".join(str(m.get("content", "")) for m in messages)
        with self._lock:
            attempt = self._seen.get(key, 0)
            self._seen[key] = attempt + 1
        faults = set(_FAULT.findall(text))
        rf = body.get("response_format") or {}
        if rf.get("type") == "json_schema" and not self.supports_json_schema:
            return 500, {"error": {"message": "response_format json_schema is not supported"}}, {}
        if attempt == 0:
            for f in sorted(faults & TRANSIENT):
                if f == "429":
                    return 429, {"error": {"message": "rate limited"}}, {"Retry-After": self.retry_after}
                if f == "500":
                    return 500, {"error": {"message": "internal error"}}, {}
                return 0, f, {}
        repaired = "That answer is invalid" in str(messages[-1].get("content", "")) if messages else False
        content = self._content(text, faults, original="@@" in text and "<yes or no>" in text, repaired=repaired)
        completion = _completion(body.get("model", "model"), content, len(text) // 4, self._cached_tokens(text))
        if self.limits:  # the answer's tokens count against the limit as well
            with self._lock:
                if "tokens" in self.limits:
                    self.limits["tokens"].take(completion["usage"]["completion_tokens"])
                self.tokens_counted += completion["usage"]["completion_tokens"]
        return 200, completion, self._limit_headers()

    def _content(self, text: str, faults: set[str], *, original: bool, repaired: bool) -> str:
        steps = [(int(m.group(2)), m.group(3)) for m in _STEP.finditer(text)]
        loop = next(((i, c) for i, c in steps if "LOOP" in c), None)
        if "fixable" in faults and not repaired:
            return "I think there is some repetition here."
        if original:
            lines = _ORIGINAL_LINE.findall(text)
            if "unreadable" in faults:
                return "@@\nA. I cannot tell.\nB. no\nC. Failure modes:\n@@"
            looping = "LOOP" in text  # agentdash's prompt has no step headers to find the step by
            body = "\n".join(f"{code} {name}: {'yes' if code == '1.3' and looping else 'no'}" for code, name in lines)
            return f"@@\nA. The agents repeat themselves.\nB. no\nC. Failure modes:\n{body}\n@@"
        if "malformed" in faults:
            return '{"modes": [{"mode_id": "FM-1.1", "present": fal'
        if "schema" in faults:
            return json.dumps({"failure_modes": {"1.1": 0}, "summary": 3})
        modes = list(dict.fromkeys(_MODE_ID.findall(text)))
        canned: dict[str, int] = {}
        for i, content in steps:
            for mode in _CANNED.findall(content):
                canned.setdefault(mode, i)
        answers = []
        for mode in modes:
            entry: dict[str, Any] = {"mode_id": mode, "present": False}
            if mode in canned:
                entry.update(present=True, onset_step=canned[mode], quote=f"JUDGE:{mode}", rationale="canned",
                             confidence=0.8)
            if mode == "FM-1.3" and loop is not None:
                i, content = loop
                at = content.index("LOOP")
                quote = content[max(0, at - 10) : at + 4]
                entry.update(present=True, onset_step=i, quote=quote, rationale="repeats itself", confidence=0.9)
                if "badquote" in faults:
                    entry["quote"] = "words that appear nowhere in the run"
                if "outofrange" in faults:
                    entry["onset_step"] = 999
            answers.append(entry)
        if "hallucinate" in faults and answers:
            answers[0] = {"mode_id": "FM-9.9", "present": True, "onset_step": 0, "quote": "x"}
        return json.dumps({"modes": answers, "summary": "checked"})

    # -- HTTP --------------------------------------------------------------------------------

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once, no delayed-ACK stall

            def log_message(self, *args: object) -> None:  # keep test output quiet
                return

            def _send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length") or 0))

            def do_POST(self) -> None:
                raw = self._body()
                if self.path == "/v1/chat/completions":
                    self._chat(raw)
                elif self.path == "/v1/files":
                    self._upload(raw)
                elif self.path == "/v1/batches":
                    self._create_batch(json.loads(raw))
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_GET(self) -> None:
                if self.path == "/v1/stats":  # for a benchmark whose server runs in another process
                    with server._lock:
                        statuses: dict[str, int] = {}
                        for e in server.chat_requests():
                            statuses[str(e.get("status"))] = statuses.get(str(e.get("status")), 0) + 1
                    self._send(200, {"statuses": statuses, "rate_limited": server.rate_limited,
                                     "tokens": server.tokens_counted})
                    return
                m = re.fullmatch(r"/v1/batches/([\w-]+)", self.path)
                if m and m.group(1) in server.batches:
                    self._send(200, server._advance(m.group(1)))
                    return
                m = re.fullmatch(r"/v1/files/([\w-]+)/content", self.path)
                if m and m.group(1) in server.files:
                    self._send(200, server.files[m.group(1)])
                    return
                self._send(404, {"error": {"message": f"no route {self.path}"}})

            def _chat(self, raw: bytes) -> None:
                body = json.loads(raw)
                marker = _MARKER.search(json.dumps(body.get("messages")))
                key = request_key(body)
                entry = {"path": self.path, "key": key, "at": time.monotonic(),
                         "marker": marker.group(1) if marker else None,
                         "response_format": (body.get("response_format") or {}).get("type"),
                         "authorization": self.headers.get("Authorization", "")}
                rejected = server.admit(body, self.headers.get("Authorization", ""))
                if server.latency:
                    time.sleep(server.latency)
                status, payload, headers = rejected or server.answer(body, key)
                entry["status"] = status if status else payload
                with server._lock:
                    server.log.append(entry)
                if status == 0 and payload == "hang":
                    server._stopping.wait(server.hang_seconds)
                    self.close_connection = True
                    return
                if status == 0 and payload == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if status == 0 and payload == "garbage":
                    self._send(200, b"<html>upstream proxy error</html>")
                    return
                self._send(status, payload, headers)

            def _upload(self, raw: bytes) -> None:
                msg = BytesParser(policy=HTTP).parsebytes(
                    f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode() + raw
                )
                content = next(
                    (p.get_payload(decode=True) for p in msg.iter_parts() if p.get_param("name", header="content-disposition") == "file"),
                    b"",
                )
                fid = "file-" + uuid.uuid4().hex[:12]
                server.files[fid] = content
                with server._lock:
                    server.log.append({"path": self.path, "key": fid, "status": 200})
                self._send(200, {"id": fid, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                                 "filename": "requests.jsonl", "purpose": "batch", "status": "processed"})

            def _create_batch(self, body: dict[str, Any]) -> None:
                bid = "batch_" + uuid.uuid4().hex[:12]
                server.batches[bid] = _batch(bid, body["input_file_id"], "in_progress")
                with server._lock:
                    server.log.append({"path": self.path, "key": bid, "status": 200})
                self._send(200, server.batches[bid])

        return Handler

    def _advance(self, bid: str) -> dict[str, Any]:
        """A batch completes on its second retrieval: its lines are answered like chat requests."""
        batch = self.batches[bid]
        batch["polls"] = batch.get("polls", 0) + 1
        if batch["status"] == "in_progress" and batch["polls"] >= 2:
            out = []
            for line in self.files[batch["input_file_id"]].decode().splitlines():
                req = json.loads(line)
                status, payload, _ = self.answer(req["body"], request_key(req["body"]))
                ok = status == 200
                out.append(json.dumps({
                    "id": "resp-" + uuid.uuid4().hex[:8], "custom_id": req["custom_id"],
                    "response": {"status_code": status, "body": payload if ok else {"error": str(payload)}},
                    "error": None,
                }))
            fid = "file-" + uuid.uuid4().hex[:12]
            self.files[fid] = ("\n".join(out) + "\n").encode()
            batch.update(status="completed", output_file_id=fid)
        return {k: v for k, v in batch.items() if k != "polls"}


class _QuietServer(ThreadingHTTPServer):
    request_queue_size = 256  # up to hundreds of concurrent clients connect at once in the benchmark

    def handle_error(self, request, client_address) -> None:  # a client that went away is expected here
        return


class _Bucket:
    """A per-minute limit: a bucket of ``burst_s`` seconds' worth, refilled continuously."""

    def __init__(self, per_minute: float, burst_s: float):
        self.per_minute = per_minute
        self.capacity = per_minute * burst_s / 60
        self._level = self.capacity
        self._at = time.monotonic()

    def level(self) -> float:
        now = time.monotonic()
        self._level = min(self.capacity, self._level + (now - self._at) * self.per_minute / 60)
        self._at = now
        return self._level

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` is available (0 if it is now)."""
        missing = min(amount, self.capacity) - self.level()
        return max(missing, 0.0) * 60 / self.per_minute

    def take(self, amount: float) -> None:
        self._level = self.level() - amount

    def reset_seconds(self) -> float:
        return (self.capacity - self.level()) * 60 / self.per_minute


def _completion(model: str, content: str, prompt_tokens: int, cached_tokens: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:12],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(content) // 4,
                  "total_tokens": prompt_tokens + len(content) // 4,
                  "prompt_tokens_details": {"cached_tokens": cached_tokens}},
    }


def _batch(bid: str, input_file_id: str, status: str) -> dict[str, Any]:
    return {
        "id": bid, "object": "batch", "endpoint": "/v1/chat/completions", "errors": None,
        "input_file_id": input_file_id, "completion_window": "24h", "status": status,
        "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
        "request_counts": {"total": 0, "completed": 0, "failed": 0},
    }


def serve(argv: list[str] | None = None) -> None:
    """Run the server in the foreground until interrupted (for trying the judge by hand)."""
    import argparse

    parser = argparse.ArgumentParser(description="A local OpenAI-compatible test server on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=0, help="port (default: any free one)")
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)
    with FakeOpenAI(args.latency, port=args.port) as server:
        print(f"serving {server.base_url}", flush=True)
        try:
            server._stopping.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    serve()
