"""An OpenAI-compatible upstream that misbehaves on purpose, in a thread on 127.0.0.1: the probes of issue 31 as a
fake provider. The request's `model` names the behaviour (the gateway forwards a custom candidate's model name as
is), so one server plays them all:

- `ok`: a plain completion (stream or not); `slow`: the same after `slow_s` seconds, watching whether the caller
  (the gateway) hangs up meanwhile (`in_flight`, `abandoned`);
- `leak-mid-stream`: one chunk, then an error event quoting the bearer key it was sent and a key-shaped string;
  `leak-first-event`: that error event first; `leak-500` / `leak-400`: an error status quoting them;
- `keepalive`: a stream of SSE comments only (`: keep-alive`), for `keepalive_s`, then the end;
- `trickle`: a non-streamed answer sent one byte every `trickle_s`;
- `huge`: a completion of `huge_bytes`; `gzip-bomb`: a gzip body that inflates to `huge_bytes`;
  `huge-line`: a stream whose second event is one line of `huge_bytes`;
- `redirect-307` / `redirect-302`: a redirect to this server's /redirected (hits counted in `redirected`);
- `status-201` / `status-204` / `status-304`: a success or not-modified status that is no completion;
- `usage-abc`, `usage-negative`, `usage-huge` (10^30), `usage-int64` (2^63), `usage-missing`, `usage-string`: a
  completion (or stream) whose usage is that;
- `choices-object`: a stream whose second chunk has `choices` as an object.
Every behaviour is counted in `hits`."""

from __future__ import annotations

import gzip
import json
import select
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ANSWER = "Rome is the capital of Italy."
LEAKED_SHAPE = "sk-proj-LeakedByTheProviderAbcdefghijklmnop0123456789"  # a key this server never held

USAGES: dict[str, Any] = {
    "usage-abc": {"prompt_tokens": "abc", "completion_tokens": 3},
    "usage-negative": {"prompt_tokens": -1_000_000_000, "completion_tokens": -5},
    "usage-huge": {"prompt_tokens": 10**30, "completion_tokens": 10**30},
    "usage-int64": {"prompt_tokens": 2**63, "completion_tokens": 2**63},
    "usage-missing": None,
    "usage-string": "lots",
}


def completion(model: str, usage: Any = "default", content: str = ANSWER) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "chatcmpl-hostile", "object": "chat.completion", "created": 0, "model": model,
                            "choices": [{"index": 0, "finish_reason": "stop",
                                         "message": {"role": "assistant", "content": content}}]}
    if usage == "default":
        usage = {"prompt_tokens": 12, "completion_tokens": 8, "total_tokens": 20}
    if usage is not None:
        body["usage"] = usage
    return body


def chunk(model: str, content: str | None = None, usage: Any = None, choices: Any = "delta") -> bytes:
    body: dict[str, Any] = {"id": "chatcmpl-hostile", "object": "chat.completion.chunk", "created": 0,
                            "model": model}
    if choices == "delta":
        body["choices"] = [] if content is None else [{"index": 0, "delta": {"content": content},
                                                       "finish_reason": None}]
    else:
        body["choices"] = choices
    if usage is not None:
        body["usage"] = usage
    return b"data: " + json.dumps(body).encode() + b"\n\n"


class HostileUpstream:
    def __init__(self) -> None:
        self.slow_s = 5.0
        self.keepalive_s = 20.0
        self.trickle_s = 0.1
        self.huge_bytes = 4 * 1024 * 1024
        self.hits: Counter = Counter()
        self.redirected = 0
        self._bodies: dict[tuple[str, int], bytes] = {}  # huge bodies, built once per size (benchmarks send many)
        self.in_flight = 0  # `slow` calls the caller has not hung up on yet
        self.abandoned = 0  # `slow` calls whose caller hung up before the answer
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def reset(self) -> None:
        with self._lock:
            self.hits.clear()
            self.redirected = self.abandoned = 0

    def start(self) -> "HostileUpstream":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # each answer ends with its connection: a cut is visible at once

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802  (a 302 turned into a GET lands here)
                self.do_POST()

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                if self.path.endswith("/redirected"):
                    with fake._lock:
                        fake.redirected += 1
                    self.send(200, completion("redirected", content="answered by the redirect target"))
                    return
                body = json.loads(raw or b"{}")
                model = str(body.get("model", ""))
                with fake._lock:
                    fake.hits[model] += 1
                try:
                    fake.play(self, model, bool(body.get("stream")))
                except (BrokenPipeError, ConnectionResetError):  # the gateway hung up: expected in several plays
                    pass

            def send(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                for name, value in {"content-type": "application/json", "content-length": str(len(data)),
                                    **(headers or {})}.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def start_stream(self) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.end_headers()

        class Server(ThreadingHTTPServer):
            request_queue_size = 2048  # a benchmark opens 1,000 calls at once: none may be refused at connect

        self._server = Server(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="hostile-upstream", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    # --- the behaviours --------------------------------------------------------------------------------------
    def play(self, h: Any, model: str, stream: bool) -> None:
        key = h.headers.get("authorization", "")
        leak = f"upstream failed for {key} (also tried {LEAKED_SHAPE})"
        if model == "slow":
            self.wait_or_abandon(h.connection)
            model = "ok"
        if model == "ok":
            if stream:
                h.start_stream()
                h.wfile.write(chunk(model, ANSWER) + chunk(model, usage={"prompt_tokens": 12,
                                                                          "completion_tokens": 8})
                              + b"data: [DONE]\n\n")
            else:
                h.send(200, completion(model))
        elif model in ("leak-mid-stream", "leak-first-event"):
            h.start_stream()
            if model == "leak-mid-stream":
                h.wfile.write(chunk(model, "Rome"))
            h.wfile.write(b"data: " + json.dumps({"error": {"message": leak}}).encode() + b"\n\n")
        elif model in ("leak-500", "leak-400"):
            h.send(int(model[-3:]), {"error": {"message": leak, "type": "invalid_request_error"}})
        elif model == "keepalive":
            h.start_stream()
            ends = time.monotonic() + self.keepalive_s
            while time.monotonic() < ends:
                h.wfile.write(b": keep-alive\n\n")
                h.wfile.flush()
                time.sleep(0.2)
        elif model == "trickle":
            data = json.dumps(completion(model)).encode()
            h.send_response(200)
            h.send_header("content-type", "application/json")
            h.send_header("content-length", str(len(data)))
            h.end_headers()
            for i in range(len(data)):
                h.wfile.write(data[i:i + 1])
                h.wfile.flush()
                time.sleep(self.trickle_s)
        elif model == "huge":
            h.send(200, self.huge(model))
        elif model == "gzip-bomb":
            h.send(200, self.huge(model), {"content-encoding": "gzip"})
        elif model == "huge-line":
            h.start_stream()
            h.wfile.write(chunk(model, "Rome"))
            h.wfile.write(self.huge(model))
        elif model.startswith("redirect-"):
            target = f"http://127.0.0.1:{self._server.server_address[1]}/v1/redirected"  # type: ignore[union-attr]
            h.send(int(model[-3:]), b"", {"location": target})
        elif model.startswith("status-"):
            status = int(model[-3:])
            h.send_response(status)
            h.send_header("content-type", "application/json")
            h.end_headers()
            if status == 201:
                h.wfile.write(json.dumps({"error": {"message": "created, not answered"}}).encode())
        elif model in USAGES:
            usage = USAGES[model]
            if stream:
                h.start_stream()
                h.wfile.write(chunk(model, ANSWER) + chunk(model, usage=usage) + b"data: [DONE]\n\n")
            else:
                h.send(200, completion(model, usage=usage))
        elif model == "choices-object":
            h.start_stream()
            h.wfile.write(chunk(model, "Rome") + chunk(model, choices={"0": {"delta": {"content": "!"}}})
                          + b"data: [DONE]\n\n")
        else:
            h.send(404, {"error": {"message": f"no behaviour {model!r}"}})

    def huge(self, model: str) -> bytes:
        """The body of a `huge`, `gzip-bomb` or `huge-line` answer of `huge_bytes`, made once per size."""
        key = (model, self.huge_bytes)
        with self._lock:
            found = self._bodies.get(key)
        if found is None:
            if model == "huge":
                found = json.dumps(completion(model, content="x" * self.huge_bytes)).encode()
            elif model == "gzip-bomb":
                found = gzip.compress(json.dumps(completion(model, content=" " * self.huge_bytes)).encode(), 9)
            else:
                found = chunk(model, "x" * self.huge_bytes) + b"data: [DONE]\n\n"
            with self._lock:
                self._bodies[key] = found
        return found

    def wait_or_abandon(self, conn: socket.socket) -> None:
        """Hold the call `slow_s` seconds, or less if the caller hangs up (its end of the socket reads EOF)."""
        with self._lock:
            self.in_flight += 1
        try:
            watch = select.poll()  # poll, not select: a benchmark holds more than 1,024 sockets
            watch.register(conn, select.POLLIN | select.POLLHUP)
            ends = time.monotonic() + self.slow_s
            while (left := ends - time.monotonic()) > 0:
                if watch.poll(left * 1000) and conn.recv(1, socket.MSG_PEEK) == b"":
                    with self._lock:
                        self.abandoned += 1
                    raise ConnectionResetError("the caller hung up")
        finally:
            with self._lock:
                self.in_flight -= 1
