"""The reports' JavaScript and CSS, read from the package's ``static/`` folder.

The files are package data (``pyproject.toml``), linted as JavaScript by ESLint (``.tools/``, installed by
``make tools``). Every report inlines what it uses, so a report opens offline from ``file://`` and from the
report server alike; the Content-Security-Policy of :func:`.html.page` allows exactly these scripts by hash.
``dom.js`` holds the helpers every page script shares (the global ``chunkbench``) and comes first.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

#: the shared helpers every page script uses; inlined before the page's own script
DOM_JS = "dom.js"


@lru_cache(maxsize=None)
def read(name: str) -> str:
    """The text of ``static/<name>`` (one of the shipped files)."""
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")


def scripts(*names: str) -> list[str]:
    """The inline scripts of a page: the shared helpers, then each named page script."""
    return [read(DOM_JS), *(read(name) for name in names)]


def stylesheet(*names: str) -> str:
    """The page's CSS: the base stylesheet of every report, then the named page stylesheets."""
    return "".join(read(name) for name in ("report.css", *names))
