"""Build step beyond pyproject.toml: the top-level ``questions/`` folder ships inside the package.

The sample's question set lives in ``questions/`` at the top of the repository (where a user's own
question sets go too). A wheel carries it as ``chunkbench_core/datasets/sample/questions/``, the
default question folder of an installed chunkbench (see ``chunkbench_core/datasets``).
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED_QUESTIONS = ("sample.json",)


class BuildWithQuestions(build_py):
    def run(self) -> None:
        super().run()
        target = Path(self.build_lib) / "chunkbench_core" / "datasets" / "sample" / "questions"
        target.mkdir(parents=True, exist_ok=True)
        for name in SHIPPED_QUESTIONS:
            shutil.copyfile(ROOT / "questions" / "sample" / name, target / name)


setup(cmdclass={"build_py": BuildWithQuestions})
