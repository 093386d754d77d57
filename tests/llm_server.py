"""A local OpenAI-compatible chat server for tests: real HTTP on 127.0.0.1, scripted answers.

Each POST /v1/chat/completions pops the next scripted step: a reply text, an HTTP error status,
a delay (to trigger client timeouts), or a malformed body. Requests are recorded so tests can
check what the agents sent (and that no API key leaks into a prompt).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Step:
    content: str | None = None       # a normal reply
    status: int = 200                # an HTTP error when not 200
    delay_s: float = 0.0             # sleep before answering
    raw: bytes | None = None         # a malformed body, sent as is


@dataclass
class ScriptedLLM:
    steps: list[Step] = field(default_factory=list)
    requests: list[dict] = field(default_factory=list)
    headers: list[dict] = field(default_factory=list)

    def __post_init__(self):
        self._lock = threading.Lock()
        handler = self._handler()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def _next(self) -> Step:
        with self._lock:
            return self.steps.pop(0) if self.steps else Step(status=500)

    def _handler(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                outer.requests.append(body)
                outer.headers.append(dict(self.headers))
                step = outer._next()
                if step.delay_s:
                    time.sleep(step.delay_s)
                if step.raw is not None:
                    payload = step.raw
                elif step.status != 200:
                    error = {"message": f"scripted {step.status}", "type": "server_error"}
                    payload = json.dumps({"error": error}).encode()
                else:
                    prompt_chars = sum(len(m.get("content", "")) for m in body.get("messages", []))
                    payload = json.dumps({
                        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
                        "model": body.get("model", "test"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": step.content}}],
                        "usage": {"prompt_tokens": prompt_chars // 4, "completion_tokens": len(step.content or "") // 4,
                                  "total_tokens": (prompt_chars + len(step.content or "")) // 4},
                    }).encode()
                try:
                    self.send_response(step.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

        return Handler
