"""The local engines' speed on this machine, measured once per test process and given to the fresh homes of the
tests whose point is not the calibration.

A ``chunkbench run`` on a fresh home first times each local engine for a few seconds (``calibration.json``; the
estimate's rates). A test of what a run does pays that in every fresh home it makes; the tests that call the command
through :func:`tests.pipelines.support.cli.chunkbench` (and the fault tests' worlds) get instead the engine rates the
first such run of this process measured: only the ``engines`` entries, each a real measurement on this machine under
the same key (model, engine versions, CPU), never the corrections or parsing rates a run learns. The tests about the
calibration itself (tests/core/estimate, an empty home's first runs, the pages' ``chunkbench estimate``
commands) measure their own.
"""

from __future__ import annotations

import json
from pathlib import Path

from chunkbench_core.estimate.calibration import CALIBRATION_FILE, FORMAT_VERSION

#: engine key -> the rate a run of this process measured
_MEASURED: dict[str, dict] = {}


def give(home: Path) -> bool:
    """Write the measured engine rates into ``home`` when it has no calibration yet; whether it did."""
    path = home / CALIBRATION_FILE
    if not _MEASURED or path.exists():
        return False
    home.mkdir(parents=True, exist_ok=True)
    data = {
        "format": FORMAT_VERSION,
        "engines": dict(_MEASURED),
        "corrections": {},
        "parse_rates": {},
        "comparisons": [],
    }
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return True


def keep(home: Path) -> None:
    """Remember the engine rates a run measured in ``home`` (the first measurement of each engine is kept)."""
    try:
        data = json.loads((home / CALIBRATION_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if not isinstance(data, dict) or data.get("format") != FORMAT_VERSION:
        return
    for key, rate in (data.get("engines") or {}).items():
        if isinstance(rate, dict) and rate.get("source", "measured") == "measured":
            _MEASURED.setdefault(key, rate)


def measure(models: tuple[str, ...] = ("all-minilm-l6-v2",)) -> None:
    """Time the local engines of ``models`` in this process, as a run on a fresh home does (the product's own
    calibration, into a scratch folder), unless a run of this process measured them already."""
    import tempfile

    from chunkbench_core.embedding import Embedder, model_registry
    from chunkbench_core.estimate.calibration import CalibrationStore
    from chunkbench_core.estimate.plan import engine_rates

    measured = {rate.get("key", {}).get("model_id") for rate in _MEASURED.values()}
    missing = tuple(m for m in models if m not in measured)
    if not missing:
        return
    registry = model_registry()
    with tempfile.TemporaryDirectory(prefix="chunkbench-test-rates-") as scratch:
        engine_rates(
            missing, registry, CalibrationStore(scratch), lambda model: Embedder(registry[model]), lambda model: []
        )
        keep(Path(scratch))


def give_measured(home: Path, models: tuple[str, ...] = ("all-minilm-l6-v2",)) -> bool:
    """:func:`give` after :func:`measure`: for a test that starts ``chunkbench run`` as a subprocess on a fresh home."""
    measure(models)
    return give(home)


#: the fused MiniLM graph this test process built, as a home keeps it (tests/support/calibration.give_graph)
_GRAPH: list[Path] = []


def give_graph(home: Path) -> bool:
    """Put the fused MiniLM graph into ``home``'s model folder, as the first process to load MiniLM there keeps it
    (``chunkbench_core.embedding.local_onnx.kept_fused_graph``), unless the home has it already; whether it did.

    For the fresh homes of tests that start ``chunkbench`` as a subprocess and whose point is not that first load:
    each such process otherwise imports ``onnx`` and rewrites the graph again (about 1 s of CPU). The graph is
    built once per test process by the product's own function, into a scratch folder; a copy, never a link, so no
    test can damage another's."""
    import atexit
    import shutil
    import tempfile

    from chunkbench_core.embedding.local_onnx import _model_path, fused_graph_name, kept_fused_graph
    from chunkbench_core.embedding.providers import MODEL_FOLDER

    name = fused_graph_name(_model_path())
    target = home / MODEL_FOLDER / name
    if target.exists():
        return False
    if not _GRAPH or not _GRAPH[0].exists() or _GRAPH[0].name != name:
        folder = Path(tempfile.mkdtemp(prefix="chunkbench-test-graph-"))
        atexit.register(shutil.rmtree, folder, True)  # 22 MB per test process, left in /tmp otherwise
        kept_fused_graph(_model_path(), folder)
        _GRAPH[:] = [folder / name]
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_GRAPH[0], target)
    return True
