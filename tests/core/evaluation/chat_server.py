"""A scripted OpenAI-compatible chat server on 127.0.0.1 (stdlib http.server) for tests.

It answers ``POST /v1/chat/completions`` with the replies it was given, in order (the last one
is repeated when they run out), and records every request body and its Authorization header. A reply is
a string (the message content), a dict ``{"status": 500}`` for an HTTP error (optional ``"message"``: the
provider's own words, ``"code"``: its error code such as ``insufficient_quota``, ``"retry_after"``: seconds
in a Retry-After header), ``{"malformed": True}`` for a 200 whose body is not JSON, or ``{"sleep": s}`` for
an answer that takes ``s`` seconds.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.core.embedding.openai_server import free_port


class ScriptedChatServer:
    def __init__(self, replies: list[Any]) -> None:
        self.replies: deque[Any] = deque(replies)
        self.last: Any = replies[-1] if replies else ""
        self.requests: list[dict[str, Any]] = []
        self.authorizations: list[str] = []
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_POST(self) -> None:  # noqa: N802  (the name http.server calls)
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server.lock:
                    server.requests.append(body)
                    server.authorizations.append(self.headers.get("Authorization", ""))
                    reply = server.replies.popleft() if server.replies else server.last
                headers: dict[str, str] = {}
                if isinstance(reply, dict) and "sleep" in reply:  # a server that takes this long to answer
                    time.sleep(float(reply["sleep"]))
                    reply = reply.get("then", "late")
                if isinstance(reply, dict) and reply.get("malformed"):
                    data = b"{not json at all"
                    self.send_response(200)
                elif isinstance(reply, dict) and "status" in reply:
                    error = {"message": reply.get("message", "scripted failure")}
                    if "code" in reply:
                        error.update(type=reply["code"], code=reply["code"])
                    data = json.dumps({"error": error}).encode()
                    if "retry_after" in reply:
                        headers["Retry-After"] = str(reply["retry_after"])
                    self.send_response(int(reply["status"]))
                else:
                    prompt = sum(
                        len(m["content"].split()) for m in body.get("messages", []) if isinstance(m.get("content"), str)
                    )
                    data = json.dumps(
                        {
                            "id": f"chat-{len(server.requests)}",
                            "object": "chat.completion",
                            "created": 0,
                            "model": body.get("model", "scripted"),
                            "choices": [
                                {
                                    "index": 0,
                                    "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": str(reply)},
                                }
                            ],
                            "usage": {
                                "prompt_tokens": prompt,
                                "completion_tokens": len(str(reply).split()),
                                "total_tokens": prompt + len(str(reply).split()),
                            },
                        }
                    ).encode()
                    self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout test)

        self.port = free_port()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "ScriptedChatServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
