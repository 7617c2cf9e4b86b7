"""Counts the texts each process embeds with the model (a test's instrument, never part of the product).

On PYTHONPATH with CHUNKBENCH_TEST_EMBEDDED_DIR set, every Python process (each Celery worker's pool
process) appends ``namespace key`` for each text its Embedder sent to the engine to be stored in the cache,
once the vectors came back, to ``<dir>/<pid>.log`` (the latency measurements, which bypass the cache on
purpose, are not counted). The module is patched when something imports it, so the processes that
never embed pay nothing.
"""

import importlib.abc
import importlib.util
import os
import sys

TARGET = "chunkbench_core.embedding.providers"
FOLDER = os.environ.get("CHUNKBENCH_TEST_EMBEDDED_DIR")


def _patch(module) -> None:
    original = module.Embedder._embed_rows

    def counted(self, rows, keys, texts, purpose, vectors, usage, store):
        result = original(self, rows, keys, texts, purpose, vectors, usage, store)
        if rows and store:  # not the timed calls that bypass the cache on purpose (query latency)
            with open(os.path.join(FOLDER, f"{os.getpid()}.log"), "a", encoding="utf-8") as out:
                out.write("".join(f"{self.namespace} {keys[i]}\n" for i in rows))
        return result

    module.Embedder._embed_rows = counted


class _PatchOnImport(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return spec
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


if FOLDER:
    sys.meta_path.insert(0, _PatchOnImport())
