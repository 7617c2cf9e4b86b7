"""``chunkbench`` inside a shell script, run by this test process: a stand-in on the script's ``PATH`` hands each
command (its arguments, environment and working folder) to this process over a Unix socket, which runs it with
``tests.pipelines.support.cli.chunkbench`` and sends back its exit status and output.

For the pages' commands (tests/test_docs_commands.py): each block runs in a real bash session (``cd``, ``export``,
pipes and redirections as a user types them), but a ``chunkbench`` command no longer starts Python, imports
Dagster and loads the embedding engine again: about 1 s of CPU for a quick command, 3 to 5 s for a run, over 70
commands. The entry point itself is tested as a process elsewhere (test_cli_startup.py, test_cli.py).

The commands are served in this process's main thread, one at a time, while the script runs: a command may set
signal handlers (Dagster's in-process runs do), which only the main thread can.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Mapping, Sequence

#: the stand-in: sends its arguments, environment and folder, prints what comes back, exits with its status.
#: -IS: no site packages, no user environment (it needs only the standard library, and starts in about 20 ms)
STAND_IN = """#!{python} -IS
import json, os, socket, sys
connection = socket.socket(socket.AF_UNIX)
connection.connect({socket_path!r})
request = {{"args": sys.argv[1:], "env": dict(os.environ), "cwd": os.getcwd()}}
connection.sendall(json.dumps(request).encode() + b"\\n")
chunks = []
while chunk := connection.recv(1 << 16):
    chunks.append(chunk)
reply = json.loads(b"".join(chunks))
sys.stdout.write(reply["stdout"])
sys.stderr.write(reply["stderr"])
sys.stdout.flush()
sys.stderr.flush()
sys.exit(reply["code"])
"""


@contextlib.contextmanager
def stand_in_folder() -> Iterator[tuple[Path, socket.socket]]:
    """A folder holding the ``chunkbench`` stand-in (to put first on ``PATH``) and the socket it talks to."""
    folder = Path(tempfile.mkdtemp(prefix="cb-"))  # short: a Unix socket's path has at most 107 bytes
    server = socket.socket(socket.AF_UNIX)
    try:
        path = folder / "s"
        server.bind(str(path))
        server.listen(4)
        script = folder / "chunkbench"
        script.write_text(STAND_IN.format(python=sys.executable, socket_path=str(path)), encoding="utf-8")
        script.chmod(0o755)
        yield folder, server
    finally:
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


def _serve_one(server: socket.socket, folder: Path) -> None:
    from tests.pipelines.support.cli import chunkbench

    connection, _ = server.accept()
    with connection:
        data = b""
        while not data.endswith(b"\n"):
            chunk = connection.recv(1 << 16)
            if not chunk:
                return  # the stand-in went away before asking
            data += chunk
        request = json.loads(data)
        env = request["env"]
        # without the stand-in: a process the command starts finds the real programs
        env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != str(folder))
        # as a process started there would: its own environment and folder, no engine rates given (a run on a
        # fresh home times the engines, as the page's reader's first run does)
        done = chunkbench(request["args"], env, request["cwd"], measured_rates=False)
        connection.sendall(json.dumps({"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr}).encode())


def run_script(argv: Sequence[str], env: Mapping[str, str], timeout: float) -> subprocess.CompletedProcess:
    """Run ``argv`` (a shell and its script) with ``env``, its ``chunkbench`` commands served by this process;
    standard output and error as text, as ``subprocess.run(..., capture_output=True, text=True)`` gives."""
    with stand_in_folder() as (folder, server), tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(
            list(argv), env={**env, "PATH": f"{folder}{os.pathsep}{env.get('PATH', '')}"}, stdout=out, stderr=err
        )
        deadline = time.monotonic() + timeout
        try:
            while process.poll() is None:
                if time.monotonic() > deadline:
                    raise subprocess.TimeoutExpired(list(argv), timeout)
                ready, _, _ = select.select([server], [], [], 0.05)
                if ready:
                    _serve_one(server, folder)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            list(argv), process.returncode, out.read().decode("utf-8", "replace"), err.read().decode("utf-8", "replace")
        )
