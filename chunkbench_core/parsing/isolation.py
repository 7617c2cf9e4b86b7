"""Parse documents in a worker process with a memory limit and a wall-clock limit.

One hostile document (a sparse sheet, a zip bomb, a parser bug that loops) must not take the host
or the run down with it. :class:`IsolatedParser` parses each document in a worker process started
(a fresh interpreter, ``python -m chunkbench_core.parsing.isolation``), whose address space is capped with ``RLIMIT_AS``
(``ParseLimits.memory_bytes``); the parent waits at most ``ParseLimits.timeout_s`` seconds for each
document. A document over a limit fails alone, with a :class:`DocumentProcessingError` naming it and
the limit, the worker is replaced, and the next document goes on.

The worker is reused from one document to the next (starting one costs about a second). Image
captions are asked of the parent through the pipe, so the caption source (an API client holding a key)
never leaves the parent process; the time spent captioning does not count against the wall-clock limit.

Defaults fit a 2-core, 24 GB machine running three partitions at once: 2 GB and 120 s per document.
``CHUNKBENCH_PARSE_MEMORY_MB`` and ``CHUNKBENCH_PARSE_TIMEOUT_S`` change them (the settings object passes them
to :func:`parse_limits`).
The PDF reader's own limits (array sizes, stream sizes) scale with the memory limit
(:func:`chunkbench_core.parsing.pdf.pypdf_limits`): the worker passes its limit to the parser.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from chunkbench_core.errors import ConfigError, DocumentProcessingError, ProviderError
from chunkbench_core.parsing.models import ParsedDocument
from chunkbench_core.parsing.options import DEFAULT_MEMORY_BYTES, MB, ParseOptions
from chunkbench_core.redaction import describe_error
from chunkbench_core.settings import VARIABLE_OF

DEFAULT_TIMEOUT_S = 120.0
# the settings' own names, so an error names the variable a user sets
MEMORY_ENV = VARIABLE_OF["parse_memory_mb"].name
TIMEOUT_ENV = VARIABLE_OF["parse_timeout_s"].name


@dataclass(frozen=True)
class ParseLimits:
    """What one document may cost: ``memory_bytes`` of address space, ``timeout_s`` seconds."""

    memory_bytes: int = DEFAULT_MEMORY_BYTES
    timeout_s: float = DEFAULT_TIMEOUT_S

    def __post_init__(self) -> None:
        if (
            not isinstance(self.memory_bytes, int)
            or isinstance(self.memory_bytes, bool)
            or self.memory_bytes < 256 * MB
        ):
            raise ConfigError(
                f"parse memory limit must be at least 256 MB, got {self.memory_bytes!r} bytes ({MEMORY_ENV} is in MB)"
            )
        if not isinstance(self.timeout_s, (int, float)) or isinstance(self.timeout_s, bool) or self.timeout_s <= 0:
            raise ConfigError(
                f"parse time limit must be a positive number of seconds, got {self.timeout_s!r} ({TIMEOUT_ENV})"
            )

    def describe_memory(self) -> str:
        return f"{self.memory_bytes / MB:,.0f} MB ({MEMORY_ENV})"

    def describe_timeout(self) -> str:
        return f"{self.timeout_s:g} s ({TIMEOUT_ENV})"


def parse_limits(memory_mb: str | float | None = None, timeout_s: str | float | None = None) -> ParseLimits:
    """``ParseLimits`` from the values of ``CHUNKBENCH_PARSE_MEMORY_MB`` / ``CHUNKBENCH_PARSE_TIMEOUT_S``
    (defaults when empty); a value that is not a number is a ConfigError naming its variable."""
    memory, timeout = DEFAULT_MEMORY_BYTES, DEFAULT_TIMEOUT_S
    if str(memory_mb or "").strip():
        try:
            memory = int(float(memory_mb) * MB)  # type: ignore[arg-type]  # a str or a number: float() takes both
        except ValueError:
            raise ConfigError(f"{MEMORY_ENV} must be a number of megabytes, got {memory_mb!r}") from None
    if str(timeout_s or "").strip():
        try:
            timeout = float(timeout_s)  # type: ignore[arg-type]  # a str or a number: float() takes both
        except ValueError:
            raise ConfigError(f"{TIMEOUT_ENV} must be a number of seconds, got {timeout_s!r}") from None
    return ParseLimits(memory_bytes=memory, timeout_s=timeout)


# -- the worker -----------------------------------------------------------------------------------
class _ParentCaption:
    """The worker's caption source: asks the parent, which holds the real one."""

    def __init__(self, conn: Connection, caption_id: str | None) -> None:
        self.conn = conn
        self.caption_id = caption_id

    def __call__(self, image: bytes) -> str:
        self.conn.send(("caption", image))
        status, value = self.conn.recv()
        if status == "ok":
            return value
        if status == "provider_error":
            message, kind, code = value
            raise ProviderError(message, kind=kind, status=code)
        raise RuntimeError(value)


def _worker_main(conn: Connection, memory_bytes: int) -> None:  # runs in the spawned process
    import resource

    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = memory_bytes if hard == resource.RLIM_INFINITY else min(memory_bytes, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    from chunkbench_core.parsing import parse

    while True:
        try:
            message = conn.recv()
        except EOFError:
            return
        if message is None:
            return
        path, options, has_captions, caption_id = message
        if has_captions:
            options = replace(options, caption_source=_ParentCaption(conn, caption_id))
        try:
            parsed = parse(path, options)
            conn.send(("parsed", parsed.to_dict()))
        except DocumentProcessingError as exc:
            conn.send(("error", (exc.path, exc.reason)))
        except MemoryError:
            conn.send(("memory", None))
        except BaseException as exc:  # a parser bug: reported, the worker carries on
            conn.send(("error", (str(path), f"unexpected {type(exc).__name__}: {exc}")))


def _main() -> None:  # python -c <boot> FD MEMORY_BYTES (IsolatedParser._start)
    import sys

    fd, memory = int(sys.argv[1]), int(sys.argv[2])
    _worker_main(Connection(fd), memory)


class IsolatedParser:
    """``parse(path, options)`` in a worker process with :class:`ParseLimits` (see the module docstring).

    Use as a context manager (the worker is stopped at exit), or call :meth:`close`.
    """

    def __init__(self, limits: ParseLimits | None = None) -> None:
        self.limits = limits or ParseLimits()
        self._process: Any = None
        self._conn: Connection | None = None

    def __enter__(self) -> "IsolatedParser":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> Connection:
        if self._process is not None and self._process.poll() is None and self._conn is not None:
            return self._conn
        self._stop()
        parent_sock, child_sock = socket.socketpair()
        package_root = str(Path(__file__).resolve().parents[2])
        # a fresh interpreter (not fork, not multiprocessing's spawn, which would import the caller's __main__),
        # importing this checkout's package first (it inherits the environment as it is)
        boot = f"import sys; sys.path.insert(0, {package_root!r}); from chunkbench_core.parsing.isolation import _main; _main()"
        process = subprocess.Popen(
            [sys.executable, "-c", boot, str(child_sock.fileno()), str(self.limits.memory_bytes)],
            pass_fds=(child_sock.fileno(),),
            stdin=subprocess.DEVNULL,
            close_fds=True,
        )
        child_sock.close()
        self._process, self._conn = process, Connection(parent_sock.detach())
        return self._conn

    def _stop(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:  # pragma: no cover
                pass
        if self._process is not None:
            if self._process.poll() is None:
                self._process.kill()
            try:
                self._process.wait(5)
            except subprocess.TimeoutExpired:  # pragma: no cover
                pass
        self._process = self._conn = None

    def close(self) -> None:
        if self._conn is not None and self._process is not None and self._process.poll() is None:
            try:
                self._conn.send(None)
                self._process.wait(2)
            except (OSError, ValueError, subprocess.TimeoutExpired):  # pragma: no cover
                pass
        self._stop()

    def parse(self, path: str | os.PathLike[str], options: ParseOptions | None = None) -> ParsedDocument:
        """Parse ``path`` in the worker; raises :class:`DocumentProcessingError` naming it for any failure."""
        options = options or ParseOptions()
        name = str(path)
        source = options.caption_source
        conn = self._start()
        caption_id = getattr(source, "caption_id", None) if source is not None else None
        # the PDF reader's limits scale with the memory the worker may use
        memory = options.memory_limit_bytes or self.limits.memory_bytes
        conn.send(
            (name, replace(options, caption_source=None, memory_limit_bytes=memory), source is not None, caption_id)
        )
        deadline = time.monotonic() + self.limits.timeout_s
        while True:
            left = deadline - time.monotonic()
            ready = left > 0 and conn.poll(left)
            if not ready:
                self._stop()
                raise DocumentProcessingError(
                    name,
                    f"parsing took longer than the limit of {self.limits.describe_timeout()}; "
                    "the document is skipped (raise the limit to parse it)",
                )
            try:
                kind, value = conn.recv()
            except (EOFError, OSError):
                code = None
                if self._process is not None:
                    try:
                        code = self._process.wait(5)
                    except subprocess.TimeoutExpired:  # pragma: no cover
                        pass
                self._stop()
                raise DocumentProcessingError(name, self._died(code)) from None
            if kind == "caption":
                started = time.monotonic()
                try:
                    assert source is not None
                    conn.send(("ok", source(value)))
                except ProviderError as exc:  # the caption service's one line, kept as such in the warning
                    conn.send(("provider_error", (describe_error(exc), exc.kind, exc.status)))
                except Exception as exc:  # the parser turns a failed caption into a warning
                    conn.send(("error", describe_error(exc)))
                deadline += time.monotonic() - started
                continue
            if kind == "parsed":
                return ParsedDocument.from_dict(value)
            if kind == "memory":
                raise DocumentProcessingError(name, self._over_memory())
            document, reason = value
            if "memory" in reason.lower():
                reason = f"{reason}: over the memory limit of {self.limits.describe_memory()}"
            raise DocumentProcessingError(document, reason)

    def _over_memory(self) -> str:
        return (
            f"parsing needs more memory than the limit of {self.limits.describe_memory()}; "
            "the document is skipped (raise the limit to parse it)"
        )

    def _died(self, exitcode: int | None) -> str:
        how = f"signal {-exitcode}" if exitcode is not None and exitcode < 0 else f"exit code {exitcode}"
        return (
            f"the parser process died ({how}), likely over the memory limit of "
            f"{self.limits.describe_memory()}; the document is skipped"
        )


if __name__ == "__main__":
    _main()
