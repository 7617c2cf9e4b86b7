"""``make cluster WORKERS=2``: the distributed profile on this machine, every part on 127.0.0.1.

Starts, each in its own process group, and stops them all on Ctrl-C or SIGTERM:

- Redis (Debian's ``redis-server``): the Celery broker and result backend;
- PostgreSQL: the Dagster instance (database ``dagster``) and the shared caches (database ``chunkbench_cache``);
- WORKERS Celery workers (``chunkbench_pipelines.celery_app``), each with its own ``CHUNKBENCH_HOME``
  (``workers/wN/``), as separate machines would have;
- the Dagster daemon and the webserver (the UI), with their own ``CHUNKBENCH_HOME`` (``head/``).

What they share is what the profile declares shared, and nothing else: the results folder and the
embedded vector store's collections (``shared/``: ``CHUNKBENCH_RESULTS_DIR`` and ``CHUNKBENCH_VECTORS_DIR``),
the caches (``CHUNKBENCH_CACHE_URL``), the Dagster instance (``DAGSTER_HOME`` with ``deploy/cluster/dagster.yaml``)
and the broker (``CHUNKBENCH_CELERY_BROKER``). Every other setting (``CHUNKBENCH_CORPUS``, ``CHUNKBENCH_BENCHMARK``,
keys, ...) is passed to every part as this command got it.

State lives in ``--state`` (default ``$CHUNKBENCH_HOME/cluster``) and survives a restart: the next
``make cluster`` finds its runs, results and caches again. A worker that ends unexpectedly is started
again; any other part that ends stops the cluster. ``cluster.json`` in the state folder says where
everything is (addresses, process ids) while the cluster runs.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from chunkbench_core.settings import make_defaults, process_environment

from .cli_ui import _alive, descendants

PROJECT_ROOT = Path(__file__).resolve().parents[1]
INSTANCE_CONFIG = PROJECT_ROOT / "deploy" / "cluster" / "dagster.yaml"
LOOPBACK = "127.0.0.1"
STOP_GRACE_SECONDS = 10.0
INSTANCE_DB, CACHE_DB = "dagster", "chunkbench_cache"
#: the settings the cluster sets for its parts (the user's own values for them are replaced)
CLUSTER_VARIABLES = (
    "CHUNKBENCH_HOME",
    "CHUNKBENCH_RESULTS_DIR",
    "CHUNKBENCH_VECTORS_DIR",
    "CHUNKBENCH_CACHE_URL",
    "CHUNKBENCH_CELERY_BROKER",
    "DAGSTER_HOME",
    "DAGSTER_PG_URL",
)


class ClusterError(RuntimeError):
    """A part of the cluster could not be started (the message says which and what to do)."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the webserver binds: a closed port is free
        try:
            s.bind((LOOPBACK, port))
            return True
        except OSError:
            return False


@dataclass
class Part:
    """One started process (the leader of its own process group) and its log."""

    name: str
    command: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen | None = None
    restarts: int = 0
    worker: bool = False  # a Celery worker: started again when it ends

    def start(self, cwd: Path) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                self.command,
                cwd=cwd,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def ended(self) -> int | None:
        return self.process.poll() if self.process else 0


@dataclass
class Cluster:
    state: Path
    workers: int = 2
    ui_port: int = 3000
    environ: dict[str, str] = field(default_factory=process_environment)
    parts: list[Part] = field(default_factory=list)
    redis_port: int = 0
    pg_port: int = 0
    pg_bin: Path | None = None
    pg_data: Path | None = None
    as_postgres: list[str] = field(default_factory=list)

    # -- where things are -------------------------------------------------------------------------------------
    @property
    def shared(self) -> Path:
        return self.state / "shared"

    @property
    def dagster_home(self) -> Path:
        return self.state / "dagster_home"

    @property
    def redis_url(self) -> str:
        return f"redis://{LOOPBACK}:{self.redis_port}/0"

    def pg_url(self, database: str) -> str:
        return f"postgresql://postgres@{LOOPBACK}:{self.pg_port}/{database}"

    @property
    def ui_url(self) -> str:
        return f"http://{LOOPBACK}:{self.ui_port}"

    def worker_home(self, index: int) -> Path:
        return self.state / "workers" / f"w{index}"

    def common_env(self) -> dict[str, str]:
        env = {k: v for k, v in self.environ.items() if k not in CLUSTER_VARIABLES}
        env.update(
            {
                "CHUNKBENCH_RESULTS_DIR": str(self.shared),
                "CHUNKBENCH_VECTORS_DIR": str(self.shared),
                "CHUNKBENCH_CACHE_URL": self.pg_url(CACHE_DB),
                "CHUNKBENCH_CELERY_BROKER": self.redis_url,
                "DAGSTER_HOME": str(self.dagster_home),
                "DAGSTER_PG_URL": self.pg_url(INSTANCE_DB),
                "PYTHONUNBUFFERED": "1",
            }
        )
        return env

    # -- starting ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        if not _port_free(self.ui_port):
            raise ClusterError(f"port {self.ui_port} on {LOOPBACK} is taken: choose another (make cluster UI_PORT=...)")
        try:
            self._start_redis()
            self._start_postgres()
            self._prepare_instance()
            for index in range(1, self.workers + 1):
                self._start_worker(index)
            self._start_head()
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        self.write_description()

    def _start_redis(self) -> None:
        server = shutil.which("redis-server")
        if not server:
            raise ClusterError("redis-server is missing: apt-get install redis-server (make tools installs it)")
        self.redis_port = free_port()
        folder = self.state / "redis"
        folder.mkdir(parents=True, exist_ok=True)
        # the queue survives a restart of the cluster (append-only file in the state folder)
        part = Part(
            "redis",
            [
                server,
                "--bind",
                LOOPBACK,
                "--port",
                str(self.redis_port),
                "--dir",
                str(folder),
                "--appendonly",
                "yes",
                "--save",
                "",
                "--protected-mode",
                "yes",
            ],
            self.common_env(),
            self.state / "logs" / "redis.log",
        )
        part.start(self.state)
        self.parts.append(part)
        self._wait(lambda: _answers(self.redis_port), "Redis", part)

    def _start_postgres(self) -> None:
        binaries = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
        on_path = shutil.which("pg_ctl")
        found = Path(binaries[-1]) if binaries else (Path(on_path) if on_path else None)
        if found is None:
            raise ClusterError("PostgreSQL is missing: apt-get install postgresql (make tools installs it)")
        self.pg_bin = found.parent
        self.pg_data = self._pg_folder()
        self.pg_port = free_port()
        if os.geteuid() == 0:  # PostgreSQL refuses to run as root
            self.as_postgres = ["runuser", "-u", "postgres", "--"]
        if not (self.pg_data / "PG_VERSION").exists():
            self.pg_data.mkdir(parents=True, exist_ok=True)
            if self.as_postgres:
                shutil.chown(self.pg_data, "postgres", "postgres")
            self._pg("initdb", "-D", str(self.pg_data), "--auth=trust", "-U", "postgres", "--encoding=UTF8")
        # beside the data folder: the postgres user must reach it (the state folder may be private to root)
        log = self.pg_data.parent / f"{self.pg_data.name}.log"
        if self.as_postgres:
            log.touch()
            shutil.chown(log, "postgres", "postgres")
        self._pg(
            "pg_ctl",
            "-D",
            str(self.pg_data),
            "-w",
            "-l",
            str(log),
            "-o",
            f"-p {self.pg_port} -k {self.pg_data} -c listen_addresses={LOOPBACK}",
            "start",
        )
        for database in (INSTANCE_DB, CACHE_DB):
            result = subprocess.run(
                [
                    *self.as_postgres,
                    str(self.pg_bin / "createdb"),
                    "-h",
                    LOOPBACK,
                    "-p",
                    str(self.pg_port),
                    "-U",
                    "postgres",
                    database,
                ],
                capture_output=True,
                text=True,
            )
            if result.returncode != 0 and "already exists" not in result.stderr:
                raise ClusterError(f"creating the PostgreSQL database {database} failed: {result.stderr.strip()}")

    def _pg_folder(self) -> Path:
        """The data folder: in the state folder, unless the postgres user (when we are root) cannot reach it."""
        wanted = self.state / "postgres"
        if os.geteuid() != 0:
            return wanted
        reachable = all(os.stat(p).st_mode & 0o001 for p in [*wanted.parents][::-1] if p.exists())
        if reachable:
            return wanted
        pointer = self.state / "postgres-data-folder.txt"
        if pointer.exists():  # this state folder's own data, from an earlier start
            return Path(pointer.read_text(encoding="utf-8").strip())
        import hashlib

        # a state folder made anew (a new path, or the same path deleted and made again) never finds the data of
        # an earlier one: its inode and creation time are part of the name
        made = os.stat(self.state)
        tag = hashlib.sha256(f"{self.state.resolve()}|{made.st_ino}|{made.st_ctime_ns}".encode()).hexdigest()[:12]
        folder = Path("/var/tmp") / f"chunkbench-cluster-postgres-{tag}"  # noqa: S108 - owned by postgres, 0700
        if folder.exists():
            shutil.rmtree(folder)
        pointer.write_text(f"{folder}\n", encoding="utf-8")
        return folder

    def _pg(self, tool: str, *args: str) -> None:
        assert self.pg_bin is not None
        result = subprocess.run(
            [*self.as_postgres, str(self.pg_bin / tool), *args], capture_output=True, text=True, timeout=120
        )
        if result.returncode != 0:
            raise ClusterError(f"PostgreSQL {tool} failed: {(result.stderr or result.stdout).strip()}")

    def _prepare_instance(self) -> None:
        if not INSTANCE_CONFIG.is_file():
            raise ClusterError(f"{INSTANCE_CONFIG} is missing: make cluster runs from a source checkout")
        self.dagster_home.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(INSTANCE_CONFIG, self.dagster_home / "dagster.yaml")
        (self.state / "workspace.yaml").write_text(
            "load_from:\n  - python_module:\n      module_name: chunkbench_pipelines.definitions\n"
            "      attribute: defs\n      location_name: chunkbench\n",
            encoding="utf-8",
        )
        self.shared.mkdir(parents=True, exist_ok=True)

    def _start_worker(self, index: int) -> None:
        home = self.worker_home(index)
        home.mkdir(parents=True, exist_ok=True)
        env = {**self.common_env(), "CHUNKBENCH_HOME": str(home)}
        if os.geteuid() == 0:
            env["C_FORCE_ROOT"] = "1"  # Celery refuses root otherwise
        command = [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "chunkbench_pipelines.celery_app",
            "worker",
            "-Q",
            "dagster",
            "--concurrency",
            "1",
            "--prefetch-multiplier",
            "1",
            "-n",
            f"w{index}@%h",
            "--loglevel",
            "INFO",
            "--without-gossip",
            "--without-mingle",
        ]
        part = Part(f"w{index}", command, env, self.state / "logs" / f"worker-w{index}.log", worker=True)
        part.start(home)
        self.parts.append(part)

    def _start_head(self) -> None:
        home = self.state / "head"
        home.mkdir(parents=True, exist_ok=True)
        env = {**self.common_env(), "CHUNKBENCH_HOME": str(home)}
        bin_dir = Path(sys.executable).parent
        workspace = str(self.state / "workspace.yaml")
        for name, command in (
            ("daemon", [str(bin_dir / "dagster-daemon"), "run", "-w", workspace]),
            (
                "webserver",
                [str(bin_dir / "dagster-webserver"), "-w", workspace, "-h", LOOPBACK, "-p", str(self.ui_port)],
            ),
        ):
            part = Part(name, command, env, self.state / "logs" / f"{name}.log")
            part.start(home)
            self.parts.append(part)

    def _wait(self, ready, what: str, part: Part, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if part.ended() is not None:
                raise ClusterError(f"{what} ended at start; see {part.log}")
            if time.monotonic() > deadline:
                raise ClusterError(f"{what} did not start within {timeout:g} s; see {part.log}")
            time.sleep(0.2)

    def _wait_ready(self, timeout: float = 300.0) -> None:
        import urllib.request

        def webserver() -> bool:
            try:
                urllib.request.urlopen(f"{self.ui_url}/server_info", timeout=2)
                return True
            except OSError:
                return False

        for part in self.parts:
            if part.worker:
                self._wait(lambda p=part: b" ready." in _read(p.log), f"worker {part.name}", part, timeout)
        self._wait(webserver, "the webserver", self.part("webserver"), timeout)

    def part(self, name: str) -> Part:
        return next(p for p in self.parts if p.name == name)

    def write_description(self) -> None:
        description = {
            "ui": self.ui_url,
            "broker": self.redis_url,
            "instance": self.pg_url(INSTANCE_DB),
            "cache": self.pg_url(CACHE_DB),
            "shared": str(self.shared),
            "processes": {p.name: p.pid for p in self.parts},
            "worker_homes": {f"w{i}": str(self.worker_home(i)) for i in range(1, self.workers + 1)},
        }
        path = self.state / "cluster.json"
        path.write_text(json.dumps(description, indent=2), encoding="utf-8")

    # -- running ----------------------------------------------------------------------------------------------
    def supervise(self, out=sys.stdout) -> int:
        """Until a part other than a worker ends (returns 1); a worker that ends is started again."""
        while True:
            for part in list(self.parts):
                code = part.ended()
                if code is None:
                    continue
                if part.worker:
                    print(f"worker {part.name} ended ({_how(code)}); starting it again", file=out, flush=True)
                    _reap(part)
                    part.restarts += 1
                    part.start(Path(part.env["CHUNKBENCH_HOME"]))
                    self.write_description()
                else:
                    print(
                        f"{part.name} ended ({_how(code)}); see {part.log}. Stopping the cluster.", file=out, flush=True
                    )
                    return 1
            time.sleep(0.5)

    # -- stopping ---------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """The webserver and daemon (and the runs they started), then the workers, then Redis and PostgreSQL."""
        order = [p for p in self.parts if p.name in ("webserver", "daemon")]
        order += [p for p in self.parts if p.worker]
        _stop_parts(order)
        _stop_parts([p for p in self.parts if p.name == "redis"])
        if self.pg_data is not None and self.pg_bin is not None and (self.pg_data / "postmaster.pid").exists():
            subprocess.run(
                [*self.as_postgres, str(self.pg_bin / "pg_ctl"), "-D", str(self.pg_data), "-m", "fast", "-w", "stop"],
                capture_output=True,
                timeout=60,
            )
        (self.state / "cluster.json").unlink(missing_ok=True)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _answers(port: int) -> bool:
    try:
        with socket.create_connection((LOOPBACK, port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def _how(code: int) -> str:
    return f"signal {-code}" if code < 0 else f"exit code {code}"


def _reap(part: Part) -> None:
    """Whatever the ended part left in its process group (a Celery pool process) is killed."""
    if part.pid is not None:
        try:
            os.killpg(part.pid, signal.SIGKILL)
        except OSError:
            pass


def _stop_parts(parts: list[Part]) -> None:
    """SIGTERM to each part's process group, SIGKILL to whatever (in the group or below it) is left after the grace."""
    known: set[int] = set()
    for part in parts:
        if part.process is not None and part.process.poll() is None:
            known |= descendants(part.process.pid)
            try:
                os.killpg(part.process.pid, signal.SIGTERM)
            except OSError:
                pass
    deadline = time.monotonic() + STOP_GRACE_SECONDS
    while time.monotonic() < deadline and any(p.process is not None and p.process.poll() is None for p in parts):
        for part in parts:
            if part.process is not None and part.process.poll() is None:
                known |= descendants(part.process.pid)
        time.sleep(0.1)
    for part in parts:
        if part.process is not None:
            try:
                os.killpg(part.process.pid, signal.SIGKILL)
            except OSError:
                pass
    for pid in known:
        if _alive(pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
    for part in parts:
        if part.process is not None:
            try:
                part.process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass


def stop_launcher(launcher: subprocess.Popen, timeout: float = 60.0) -> None:
    """Stop a launcher started in a session of its own (``start_new_session=True``) as Ctrl-C does; when it has
    not ended within ``timeout`` seconds, kill its whole process group."""
    launcher.send_signal(signal.SIGINT)
    try:
        launcher.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait()


def remove_outside_data(state: Path) -> None:
    """Delete the PostgreSQL data a throwaway cluster kept outside its state folder (as root the data lives in
    /var/tmp, named in ``postgres-data-folder.txt``), and its server log: a stopped cluster's state folder
    removed without this leaves them behind."""
    pointer = state / "postgres-data-folder.txt"
    if not pointer.exists():
        return
    folder = pointer.read_text(encoding="utf-8").strip()
    shutil.rmtree(folder, ignore_errors=True)
    Path(f"{folder}.log").unlink(missing_ok=True)
    pointer.unlink()


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m chunkbench_pipelines.cluster",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    given = make_defaults()
    parser.add_argument(
        "--workers", type=int, default=given.get("WORKERS", 2), help="Celery workers to start (default: WORKERS or 2)"
    )
    parser.add_argument(
        "--port",
        type=int,
        default=given.get("UI_PORT", 3000),
        help="the UI's port on 127.0.0.1 (default: UI_PORT or 3000)",
    )
    parser.add_argument(
        "--state", type=Path, default=None, help="the cluster's folder (default: $CHUNKBENCH_HOME/cluster)"
    )
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
    from chunkbench_core.settings import Settings

    state = (args.state or Settings.from_environment().home / "cluster").expanduser().resolve()
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)  # also when started in the background, where SIGINT starts ignored
    cluster = Cluster(state, workers=args.workers, ui_port=args.port)
    try:
        cluster.start()
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    print(
        f"Dagster UI: {cluster.ui_url}   workers: {args.workers}   state: {state}\n"
        f"shared results and collections: {cluster.shared}   logs: {state / 'logs'}   (Ctrl-C stops everything)",
        flush=True,
    )
    code = 0
    try:
        code = cluster.supervise()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("stopping the cluster...", flush=True)
    finally:
        cluster.stop()
    print("stopped", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
