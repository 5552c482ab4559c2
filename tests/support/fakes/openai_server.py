"""An OpenAI-compatible chat server on 127.0.0.1, in a thread, that plays every model of a prompt optimization.

Deterministic roles, recognised by the request's content:
- target model: it knows the answer to each question it was taught (`teach`), but replies with only the answer
  when the system prompt asks for it (contains OBEY_PHRASE, any case); otherwise, except for a model-dependent
  quarter of the questions, it wraps the answer in chatter. So a better prompt measurably scores better;
- semantic-similarity judge: 0-10 from word overlap between the expected and the candidate answer;
- traffic judge (judge sampling): `verdict: 1` when the graded answer is exactly a taught answer, else `verdict: 0`;
- custom judge: `score: 1` when the text after the last `Answer:` is exactly the taught answer, else `score: 0.2`;
- reflection (GEPA's instruction writer): returns the current instruction plus OBEY_PHRASE in a ``` block; with
  `rewrites = "overfit"` it adds OVERFIT_PHRASE instead, which makes the target answer only the questions in
  `memorised` (better on the train goldens, worse on the test goldens); with `rewrites = "copy"` it pastes the
  questions and answers it was shown into the instruction, and the target then answers exactly the questions
  its system prompt contains (a candidate that learns the train set verbatim).
Usage: prompt tokens = characters / 4 of all messages, completion tokens = characters / 4 of the reply (+1 each).
`players[model]`: that model is played by a function of (system, user) instead (None: a 400 refusal).
Failure injection: `failing` models always answer 500; `flaky[model] = n` fails that model's next n calls with 503;
`rate_limited[model] = n` answers its next n calls 429; `stalled[model] = s` holds each of its calls s seconds first;
`too_long` models answer 400 context_length_exceeded; `broken_stream` models send one chunk of a stream, then cut it;
`fault_cycle[model] = ["500", "ok", "429", "stall", ...]`: that model's calls take these outcomes in turn ("stall":
silent for `stall_s`, then 500), for benchmarks/gateway_faults.py; `slow_stream[model] = s`: s seconds between the
events of its streams (`cut_streams` counts those whose reader left); `held[model] = threading.Event()`: its streams
send their first event, then wait for the event to be set (up to HOLD_S; `hold_timeouts` counts the waits that ran
out); `connections` counts the TCP connections it accepted (connection reuse).
The gateway's calls (api/gateway/): `stream: true` is answered as server-sent events (the reply in three content
chunks, a usage chunk when stream_options.include_usage); a request with `tools` is answered with a call of the
first tool, arguments {"location": "Paris"}. Every request body is kept in `bodies`.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OBEY_PHRASE = "reply with only the final answer"
HOLD_S = 30.0  # the longest a `held` stream waits for its test to let it go on
OVERFIT_PHRASE = "answer from memory only"


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))


class FakeOpenAI:
    def __init__(self, delay_s: float = 0.0, keep_alive: bool = False) -> None:
        self.keep_alive = keep_alive  # HTTP/1.1 connections kept open between answers (benchmarks/gateway_overhead.py)
        self.answers: dict[str, str] = {}
        # model -> (system, user) -> reply, or None to refuse: a model played by other rules (tests/support/
        # calibrated_models.py plays shared-data models by their real per-question outcomes).
        self.players: dict[str, Any] = {}
        self.rewrites = "obey"  # what the reflection model writes: "obey", "overfit" or "copy"
        self.memorised: set[str] = set()  # the questions an OVERFIT_PHRASE prompt answers
        self.failing: set[str] = set()
        self.echo_key: set[str] = set()  # models that answer 401 quoting the bearer key they were sent
        self.flaky: dict[str, int] = {}
        self.rate_limited: dict[str, int] = {}
        self.stalled: dict[str, float] = {}
        self.too_long: set[str] = set()
        self.broken_stream: set[str] = set()
        self.fault_cycle: dict[str, list[str]] = {}
        self.slow_stream: dict[str, float] = {}  # model -> seconds between a stream's events
        self.cut_streams = 0  # streams whose reader went away before the end
        self.held: dict[str, threading.Event] = {}  # model -> what its streams wait for after their first event
        self.hold_timeouts = 0
        self.connections = 0  # TCP connections accepted
        self.stall_s = 2.0
        self._cycle_calls: Counter = Counter()
        self.bodies: list[dict[str, Any]] = []
        self.keys: list[tuple[str, str | None]] = []  # (model, Authorization header) of every request
        self.traceparents: list[tuple[str, str | None]] = []  # (model, traceparent header): trace propagation
        self.call_times: list[tuple[str, float]] = []  # (model, monotonic arrival), for backoff checks
        self.delay_s = delay_s
        self.calls: list[tuple[str, str]] = []  # (model, role)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # --- set-up ---------------------------------------------------------------------------------
    def teach(self, pairs: dict[str, str]) -> None:
        self.answers.update(pairs)

    def start(self) -> "FakeOpenAI":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1" if self.keep_alive else "HTTP/1.0"

            def setup(self) -> None:
                super().setup()
                with fake._lock:
                    fake.connections += 1
                # Headers and body go out as separate writes: without this, Nagle's algorithm holds the body until
                # the client's delayed ACK (40 ms) on a kept-alive connection.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                with fake._lock:
                    fake.keys.append((str(body.get("model", "")), self.headers.get("authorization")))
                    fake.traceparents.append((str(body.get("model", "")), self.headers.get("traceparent")))
                status, payload = fake.respond(body)
                if status == 200 and body.get("stream"):
                    fake.stream(self, body, payload)
                    return
                if body.get("model") in fake.echo_key:  # as some providers and proxies do
                    status, payload = 401, {"error": {"type": "invalid_request_error", "code": "invalid_api_key",
                                                      "message": "Incorrect API key provided: "
                                                                 + self.headers.get("authorization", "")}}
                raw = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                try:
                    self.wfile.write(raw)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left: expected
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, name="fake-openai", daemon=True).start()
        return self

    @property
    def base_url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def roles(self) -> Counter:
        with self._lock:
            return Counter(role for _, role in self.calls)

    # --- behaviour ------------------------------------------------------------------------------
    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        model = str(body.get("model", ""))
        messages = body.get("messages") or []
        system = " ".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
        user = " ".join(str(m.get("content", "")) for m in messages if m.get("role") != "system")
        with self._lock:
            self.call_times.append((model, time.monotonic()))
            self.bodies.append(body)
        fault = None
        with self._lock:
            if self.fault_cycle.get(model):
                fault = self.fault_cycle[model][self._cycle_calls[model] % len(self.fault_cycle[model])]
                self._cycle_calls[model] += 1
        if fault == "stall":
            time.sleep(self.stall_s)
        if self.delay_s or model in self.stalled:
            time.sleep(self.stalled.get(model, self.delay_s))
        with self._lock:
            if fault == "429":
                self.calls.append((model, "error"))
                return 429, {"error": {"message": "rate limit reached, slow down", "type": "rate_limit_error"}}
            if fault in ("500", "stall"):
                self.calls.append((model, "error"))
                return 500, {"error": {"message": f"{model} is down", "type": "server_error"}}
            if self.rate_limited.get(model, 0) > 0:
                self.rate_limited[model] -= 1
                self.calls.append((model, "error"))
                return 429, {"error": {"message": "rate limit reached, slow down", "type": "rate_limit_error"}}
            if model in self.failing:
                self.calls.append((model, "error"))
                return 500, {"error": {"message": f"{model} is down", "type": "server_error"}}
            if model in self.too_long:
                self.calls.append((model, "error"))
                return 400, {"error": {"message": "This model's maximum context length is 8192 tokens. Please reduce "
                                                  "the length of the messages.", "type": "invalid_request_error",
                                       "param": "messages", "code": "context_length_exceeded"}}
            if self.flaky.get(model, 0) > 0:
                self.flaky[model] -= 1
                self.calls.append((model, "error"))
                return 503, {"error": {"message": "overloaded, retry", "type": "server_error"}}
        player = self.players.get(model)
        if player is not None:
            text = player(system, user)
            if text is None:  # the played model has no result for this question: a provider's refusal
                with self._lock:
                    self.calls.append((model, "error"))
                return 400, {"error": {"message": "this question cannot be answered", "type": "invalid_request_error"}}
            role = "played"
        else:
            role, text = self._play(model, system, user)
        with self._lock:
            self.calls.append((model, role))
        prompt_chars = sum(len(str(m.get("content", ""))) for m in messages)
        usage = {"prompt_tokens": prompt_chars // 4 + 1, "completion_tokens": len(text) // 4 + 1}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        message: dict[str, Any] = {"role": "assistant", "content": text}
        finish = "stop"
        tools = [t for t in body.get("tools") or () if isinstance(t, dict) and t.get("type") == "function"]
        if tools and body.get("tool_choice") != "none":
            message = {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_fake_1", "type": "function",
                 "function": {"name": tools[0]["function"]["name"], "arguments": '{"location": "Paris"}'}}]}
            finish = "tool_calls"
        return 200, {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
                     "choices": [{"index": 0, "finish_reason": finish, "message": message}],
                     "usage": usage}

    def stream(self, handler: BaseHTTPRequestHandler, body: dict[str, Any], payload: dict[str, Any]) -> None:
        """Send a completed answer as a chat-completion chunk stream (HTTP/1.0: the end of the stream closes it)."""
        choice = payload["choices"][0]
        text = choice["message"]["content"] or ""
        base = {"id": payload["id"], "object": "chat.completion.chunk", "created": payload["created"],
                "model": payload["model"]}
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        if choice["message"].get("tool_calls"):
            calls = [dict(c, index=i) for i, c in enumerate(choice["message"]["tool_calls"])]
            deltas.append({"tool_calls": calls})
        else:
            third = max(1, len(text) // 3)
            deltas += [{"content": text[i:i + third]} for i in range(0, len(text), third)]
        chunks = [dict(base, choices=[{"index": 0, "delta": d, "finish_reason": None}]) for d in deltas]
        chunks.append(dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]))
        if (body.get("stream_options") or {}).get("include_usage"):
            chunks.append(dict(base, choices=[], usage=payload["usage"]))
        events = [f"data: {json.dumps(c)}\n\n".encode() for c in chunks] + [b"data: [DONE]\n\n"]
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        broken = body.get("model") in self.broken_stream
        chunked = self.keep_alive and not broken  # as providers stream: chunked, the connection kept for reuse
        if chunked:
            handler.send_header("transfer-encoding", "chunked")
            events = [b"%x\r\n%s\r\n" % (len(raw), raw) for raw in events] + [b"0\r\n\r\n"]
        else:
            handler.send_header("connection", "close")  # the end of the stream is the end of the connection
            handler.close_connection = True
        if broken:  # promise more than is sent, then close: the client sees the body cut short
            handler.send_header("content-length", str(sum(map(len, events)) + 1000))
        handler.end_headers()
        try:
            for i, raw in enumerate(events[:1] if broken else events):
                if i and body.get("model") in self.slow_stream:
                    time.sleep(self.slow_stream[body["model"]])
                if i == 1 and body.get("model") in self.held and not self.held[body["model"]].wait(HOLD_S):
                    with self._lock:
                        self.hold_timeouts += 1
                handler.wfile.write(raw)
                handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.cut_streams += 1

    def _play(self, model: str, system: str, user: str) -> tuple[str, str]:
        if "I provided an assistant with" in user:
            blocks = re.findall(r"```(.*?)```", user, flags=re.S)
            current = blocks[0].strip() if blocks else ""
            if self.rewrites == "overfit":
                return "reflection", f"```\n{current}\nAlways {OVERFIT_PHRASE}.\n```"
            if self.rewrites == "copy":
                shown = "\n".join(f"{q} -> {a}" for q, a in self.answers.items() if q in user)
                return "reflection", f"```\n{current}\nKnown answers:\n{shown}\n```"
            return "reflection", f"Here is a better instruction:\n```\n{current}\nAlways {OBEY_PHRASE}, nothing else.\n```"
        if "semantic similarity" in system.lower():
            expected = re.search(r"Expected answer:\s*<<<(.*?)>>>", user, flags=re.S)
            candidate = re.search(r"Candidate answer:\s*<<<(.*?)>>>", user, flags=re.S)
            a, b = words(expected.group(1) if expected else ""), words(candidate.group(1) if candidate else "")
            score = 10 if a == b else int(10 * len(a & b) / max(1, len(a | b)))
            return "judge", str(score)
        if "you grade an assistant's answer" in system.lower():  # judge sampling (flows/learning/judge_grading.py)
            given = user.rsplit("Answer:", 1)[-1].strip().removeprefix("<<<").removesuffix(">>>").strip()
            right = any(given == answer for answer in self.answers.values())
            return "judge", f"The answer was compared.\nverdict: {int(right)}"
        if "you are an evaluator" in system.lower():
            given = user.rsplit("Answer:", 1)[-1].strip()
            given = given.removeprefix("<<<").removesuffix(">>>")  # the service fences the answer
            right = any(given == answer for answer in self.answers.values())
            return "judge", "The answer was checked.\nscore: " + ("1" if right else "0.2")
        for question, answer in self.answers.items():
            if question in user and OVERFIT_PHRASE in system.lower():
                return "target", answer if question in self.memorised else "I do not know."
            if question in user and question in system:  # a prompt that copied this example
                return "target", answer
            if question in user:
                salt = int(hashlib.sha256(f"{model}|{question}".encode()).hexdigest(), 16)
                if OBEY_PHRASE in system.lower() or salt % 4 == 0:
                    return "target", answer
                return "target", f"Sure! Here is what I found: {answer} Let me know if you need anything else."
        return "target", "I do not know."


def capital_goldens(n: int, start: int = 0, as_json: bool = False) -> list[dict[str, Any]]:
    """Synthetic goldens: `question` asks for the capital of an invented country; answers are unique."""
    out = []
    for i in range(start, start + n):
        question = f"What is the capital of Country{i:03d}?"
        answer = json.dumps({"capital": f"City{i:03d}", "country": f"Country{i:03d}"}) if as_json else f"City{i:03d}"
        out.append({"fields": {"question": question}, "answer": answer})
    return out


def teach_goldens(fake: FakeOpenAI, goldens: list[dict[str, Any]]) -> None:
    fake.teach({g["fields"]["question"]: g["answer"] for g in goldens})
