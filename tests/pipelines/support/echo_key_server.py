"""A stdlib HTTP server on 127.0.0.1 that refuses every request with a 401 echoing the caller's key,
as OpenAI does ("Incorrect API key provided: sk-..."), both in full and masked."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class EchoKeyServer:
    def __init__(self) -> None:
        self.requests = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:  # noqa: N802  (the name http.server calls)
                self._refuse()

            def do_POST(self) -> None:  # noqa: N802  (the name http.server calls)
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self._refuse()

            def _refuse(self) -> None:
                server.requests += 1
                key = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
                masked = key[:8] + "*" * max(len(key) - 12, 0) + key[-4:]
                body = json.dumps(
                    {
                        "error": {
                            "message": f"Incorrect API key provided: {masked}. The full key was {key}; "
                            f"header Authorization: Bearer {key}",
                            "type": "invalid_request_error",
                            "param": None,
                            "code": "invalid_api_key",
                        }
                    }
                ).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
