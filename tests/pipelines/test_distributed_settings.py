"""The distributed profile's settings: the cache URL, the vector store's root, the Celery broker (no server needed)."""

from pathlib import Path

import pytest
from dagster import EnvVar

from chunkbench_core.errors import ConfigError
from chunkbench_core.settings import Settings
from chunkbench_pipelines.caches import close_caches, context_cache, embedding_cache
from chunkbench_pipelines.definitions import executor_for
from chunkbench_pipelines.resources import build_resources

URL = "postgresql://chunkbench:s3cret-pw@db.internal:5432/caches"


def test_the_cache_url_reaches_both_caches_as_an_env_var_and_is_shown_without_its_password(tmp_path):
    settings = Settings.load({"CHUNKBENCH_HOME": str(tmp_path), "CHUNKBENCH_CACHE_URL": URL})
    resources = build_resources(settings)
    assert resources["embeddings"].cache_url == EnvVar("CHUNKBENCH_CACHE_URL")  # never the value in run config
    assert resources["llm"].cache_url == EnvVar("CHUNKBENCH_CACHE_URL")
    assert build_resources(settings, resolve=True)["embeddings"].cache_url == URL
    shown = dict((name, value) for name, value, _ in settings.rows())
    assert shown["CHUNKBENCH_CACHE_URL"] == "postgresql://chunkbench:[redacted]@db.internal:5432/caches"
    assert "s3cret-pw" not in repr(settings)
    from chunkbench_core.redaction import redact

    assert "s3cret-pw" not in redact(f"could not connect with {URL}")


def test_one_shared_cache_per_url_and_process_closed_at_the_end(tmp_path):
    first, again = embedding_cache(URL, str(tmp_path)), embedding_cache(URL, str(tmp_path))
    assert first is again and type(first).__name__ == "PostgresEmbeddingCache"
    contexts = context_cache(URL, str(tmp_path))
    assert type(contexts).__name__ == "PostgresContextCache" and context_cache(URL, None) is contexts
    close_caches()  # nothing connected yet: closing is cheap and safe
    assert embedding_cache(URL, str(tmp_path)) is not first  # a new one after closing
    close_caches()
    # without a URL: the SQLite files of the home folder, or of a given folder
    assert embedding_cache(None, str(tmp_path)).path == tmp_path / "embedding_cache.sqlite"
    assert context_cache(str(tmp_path / "elsewhere"), None).path == tmp_path / "elsewhere" / "contextual_cache.sqlite"


@pytest.mark.parametrize(
    "variable, value, message",
    [
        ("CHUNKBENCH_CACHE_URL", "mysql://u:hidden-pw@h/db", "unsupported scheme"),
        ("CHUNKBENCH_CACHE_URL", "postgresql://u:hidden-pw@h:5432/", "names no database"),
        ("CHUNKBENCH_CELERY_BROKER", "amqp://u:hidden-pw@h//", "must be a Redis URL"),
        ("CHUNKBENCH_CELERY_VISIBILITY_TIMEOUT", "soon", "number of seconds"),
        ("CHUNKBENCH_CELERY_VISIBILITY_TIMEOUT", "1", "at least 5 seconds"),
    ],
)
def test_a_bad_value_names_its_variable_and_hides_the_password(variable, value, message):
    with pytest.raises(ConfigError) as raised:
        Settings.load({variable: value})
    assert variable in str(raised.value) and message in str(raised.value)
    assert "hidden-pw" not in str(raised.value)


def test_the_vector_store_root_moves_the_collections_and_nothing_else(tmp_path):
    shared = tmp_path / "shared"
    settings = Settings.load(
        {"CHUNKBENCH_HOME": str(tmp_path / "home"), "CHUNKBENCH_VECTORS_DIR": str(shared), "CHUNKBENCH_BENCHMARK": "b"}
    )
    assert settings.qdrant_dir == shared / "benchmarks" / "b" / "qdrant"
    assert settings.results_dir == tmp_path / "home" / "benchmarks" / "b"
    with build_resources(settings)["qdrant"].open() as store:
        assert store.local_root == shared / "benchmarks" / "b" / "qdrant"
    plain = Settings.load({"CHUNKBENCH_HOME": str(tmp_path / "home")})
    assert plain.qdrant_dir == tmp_path / "home" / "benchmarks" / "sample" / "qdrant"


def test_a_broker_sends_steps_to_celery_workers_with_late_acknowledgement():
    from dagster import in_process_executor

    assert executor_for(Settings()) is in_process_executor
    settings = Settings.load(
        {"CHUNKBENCH_CELERY_BROKER": "redis://127.0.0.1:6379/0", "CHUNKBENCH_CELERY_VISIBILITY_TIMEOUT": "30"}
    )
    executor = executor_for(settings)
    assert executor.name == "celery"
    from chunkbench_pipelines.celery_app import executor_config

    config = executor_config(settings)
    assert config["broker"] == config["backend"] == "redis://127.0.0.1:6379/0"
    source = config["config_source"]
    assert (
        source["task_acks_late"] and source["task_reject_on_worker_lost"] and source["worker_prefetch_multiplier"] == 1
    )
    assert source["broker_transport_options"]["visibility_timeout"] == 30.0
    assert source["broker_transport_options"]["unacked_restore_interval"] == 7.5


def test_the_worker_app_runs_dagster_celerys_step_task_with_the_same_settings():
    from chunkbench_pipelines.celery_app import make_worker_app

    app = make_worker_app(Settings.load({"CHUNKBENCH_CELERY_BROKER": "redis://127.0.0.1:6379/0"}))
    assert "execute_plan" in app.tasks
    assert app.conf.task_acks_late and app.conf.broker_url == "redis://127.0.0.1:6379/0"
    assert app.conf.broker_transport_options["visibility_timeout"] == 60.0


def test_the_cluster_gives_each_worker_its_own_home_and_shares_only_what_the_profile_declares(tmp_path):
    from chunkbench_pipelines.cluster import CLUSTER_VARIABLES, Cluster

    cluster = Cluster(
        tmp_path / "state",
        workers=2,
        environ={"CHUNKBENCH_CORPUS": "/docs", "CHUNKBENCH_HOME": "/mine", "CHUNKBENCH_CACHE_URL": "/elsewhere"},
    )
    cluster.redis_port, cluster.pg_port = 6390, 5440
    env = cluster.common_env()
    assert env["CHUNKBENCH_CORPUS"] == "/docs"  # the user's settings go to every part
    assert "CHUNKBENCH_HOME" not in env  # each part gets its own
    assert env["CHUNKBENCH_RESULTS_DIR"] == env["CHUNKBENCH_VECTORS_DIR"] == str(tmp_path / "state" / "shared")
    assert env["CHUNKBENCH_CACHE_URL"] == "postgresql://postgres@127.0.0.1:5440/chunkbench_cache"
    assert env["CHUNKBENCH_CELERY_BROKER"] == "redis://127.0.0.1:6390/0"
    assert set(CLUSTER_VARIABLES) <= set(env) | {"CHUNKBENCH_HOME"}
    assert cluster.worker_home(1) != cluster.worker_home(2)
    assert Path(cluster.worker_home(1)).parent == tmp_path / "state" / "workers"


def test_a_state_folder_made_anew_never_finds_the_postgres_data_of_an_earlier_one(tmp_path, monkeypatch):
    import shutil

    from chunkbench_pipelines import cluster
    from chunkbench_pipelines.cluster import Cluster

    monkeypatch.setattr(cluster.os, "geteuid", lambda: 0)  # as root: the data goes where the postgres user reaches

    state = tmp_path / "private" / "state"
    state.mkdir(parents=True)
    (tmp_path / "private").chmod(0o700)  # the postgres user cannot reach it: the data goes to /var/tmp
    first = Cluster(state)._pg_folder()
    assert not str(first).startswith(str(state))
    assert Cluster(state)._pg_folder() == first  # the same state folder keeps its data
    shutil.rmtree(state)
    state.mkdir()
    second = Cluster(state)._pg_folder()
    assert second != first  # the same path made again starts afresh


def test_a_stopped_throwaway_cluster_leaves_no_data_outside_its_state_folder(tmp_path):
    """As root the cluster keeps PostgreSQL's data outside the state folder (named in a pointer file):
    remove_outside_data deletes that folder and its server log; a state folder without the pointer is left as is."""
    from chunkbench_pipelines.cluster import remove_outside_data

    state, outside = tmp_path / "state", tmp_path / "var-tmp" / "chunkbench-cluster-postgres-abc"
    (outside / "base").mkdir(parents=True)
    Path(f"{outside}.log").write_text("server log", encoding="utf-8")
    state.mkdir()
    (state / "postgres-data-folder.txt").write_text(f"{outside}\n", encoding="utf-8")
    remove_outside_data(state)
    assert not outside.exists() and not Path(f"{outside}.log").exists()
    assert not (state / "postgres-data-folder.txt").exists() and state.is_dir()
    remove_outside_data(state)  # nothing left to remove: no error


@pytest.mark.parametrize("ignores_ctrl_c", [False, True])
def test_stopping_a_launcher_ends_its_whole_group(ignores_ctrl_c, tmp_path):
    """Ctrl-C first; a launcher that does not end in time is killed with its process group (its children too)."""
    import subprocess
    import sys
    import time

    from chunkbench_pipelines.cluster import stop_launcher

    child_pid = tmp_path / "child.pid"
    code = (
        "import os, signal, subprocess, sys, time\n"
        + ("signal.signal(signal.SIGINT, signal.SIG_IGN)\n" if ignores_ctrl_c else "")
        + "child = subprocess.Popen(['sleep', '60'])\n"
        # the pid is written inside the try: a Ctrl-C sent once it exists always finds the handler in place
        + f"try:\n    open({str(child_pid)!r}, 'w').write(str(child.pid))\n    time.sleep(60)\n"
        + "except KeyboardInterrupt:\n    child.kill(); child.wait()\n"
    )
    launcher = subprocess.Popen([sys.executable, "-c", code], start_new_session=True)
    while not child_pid.exists() or not child_pid.read_text():
        assert launcher.poll() is None
    stop_launcher(launcher, timeout=2)
    assert launcher.returncode is not None
    child = int(child_pid.read_text())
    deadline = time.monotonic() + 10  # SIGKILL is delivered at once, but the child may be scheduled a moment later
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{child}/stat", encoding="ascii") as handle:
                if handle.read().rsplit(")", 1)[1].split()[0] == "Z":  # ended, not reaped yet
                    return
        except (FileNotFoundError, ProcessLookupError):
            return  # ended and reaped
        time.sleep(0.05)
    pytest.fail(f"the launcher's child {child} is still running")
