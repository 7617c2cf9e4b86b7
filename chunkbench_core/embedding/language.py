"""Which language a corpus is written in, and the boundary model that can read it.

The rule (stated once, here, and tested):

- The parsed corpus's letters are counted by script (:class:`ScriptShare`). When more than
  :data:`NON_LATIN_SHARE` (5%) of them are outside the Latin script (Persian and Arabic are the
  Arabic script; Cyrillic, Greek, Hebrew, CJK and the rest count alike), the corpus *needs a
  multilingual boundary model*.
- When it does, and the boundary model in force reads English only (``languages = ["en"]`` in the
  model registry) and came from the registry's default (nobody chose it: no run config, no
  ``chunkbench defaults set boundary_model``, no ``CHUNKBENCH_BOUNDARY_MODEL``), the boundary model
  becomes the first multilingual model of the registry, preferring local ones
  (multilingual-e5-small with the shipped registry). With no multilingual model registered, the
  build is refused with a message naming the command that settles it.
- A boundary model chosen explicitly is kept, whatever the corpus; when it reads English only on
  such a corpus the choice carries a warning (shown in the diagnostics and the run summary).

:class:`BoundaryChoice` records the model, where it came from and why: it goes into the collection's
provenance and the diagnostics.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from chunkbench_core.errors import ConfigError

if TYPE_CHECKING:
    from .registry import EmbeddingModelSpec, ModelRegistry

#: above this share of letters outside the Latin script, the corpus needs a multilingual boundary model
NON_LATIN_SHARE = 0.05

#: letters by script (Unicode blocks); anything else that is a letter and not Latin counts as "other"
_SCRIPTS: dict[str, re.Pattern[str]] = {
    "latin": re.compile(r"[A-Za-z\u00c0-\u024f\u1e00-\u1eff]"),
    "arabic": re.compile(
        r"[\u0620-\u064a\u066e-\u06d3\u06d5\u06ee\u06ef\u06fa-\u06fc\u06ff\u0750-\u077f"
        r"\u08a0-\u08c9\ufb50-\ufdfb\ufe70-\ufefc]"
    ),
    "cyrillic": re.compile(r"[\u0400-\u04ff\u0500-\u052f]"),
    "greek": re.compile(r"[\u0370-\u03ff\u1f00-\u1fff]"),
    "hebrew": re.compile(r"[\u05d0-\u05ea\ufb1d-\ufb4f]"),
    "cjk": re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]"),
}
_LETTER = re.compile(r"[^\W\d_]")
#: how a script is named for a person (the languages it usually means)
SCRIPT_NAMES = {
    "arabic": "Arabic script (Persian, Arabic, Urdu)",
    "cyrillic": "Cyrillic",
    "greek": "Greek",
    "hebrew": "Hebrew",
    "cjk": "Chinese, Japanese or Korean",
    "other": "other non-Latin scripts",
}


@dataclass(frozen=True)
class ScriptShare:
    """Letters of a text (or a whole corpus) counted by script."""

    letters: int = 0
    by_script: Mapping[str, int] = field(default_factory=dict)  # latin, arabic, cyrillic, ..., other

    @classmethod
    def of(cls, texts: Iterable[str]) -> "ScriptShare":
        total = 0
        counts: dict[str, int] = {}
        for text in texts:
            n = len(_LETTER.findall(text))
            if not n:
                continue
            total += n
            named = 0
            for script, pattern in _SCRIPTS.items():
                k = len(pattern.findall(text))
                if k:
                    counts[script] = counts.get(script, 0) + k
                    named += k
            if n > named:
                counts["other"] = counts.get("other", 0) + n - named
        return cls(total, dict(sorted(counts.items())))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "ScriptShare | None":
        if not isinstance(data, Mapping) or not isinstance(data.get("letters"), int):
            return None
        raw = data.get("by_script")
        scripts = raw if isinstance(raw, Mapping) else {}
        return cls(int(data["letters"]), {str(k): int(v) for k, v in scripts.items()})

    def to_dict(self) -> dict[str, Any]:
        return {"letters": self.letters, "by_script": dict(self.by_script)}

    def __add__(self, other: "ScriptShare") -> "ScriptShare":
        counts = dict(self.by_script)
        for script, n in other.by_script.items():
            counts[script] = counts.get(script, 0) + n
        return ScriptShare(self.letters + other.letters, dict(sorted(counts.items())))

    @property
    def non_latin(self) -> float:
        """The share of letters outside the Latin script (0 for a text without letters)."""
        if not self.letters:
            return 0.0
        return 1.0 - self.by_script.get("latin", 0) / self.letters

    def share(self, script: str) -> float:
        return self.by_script.get(script, 0) / self.letters if self.letters else 0.0

    @property
    def main_other_script(self) -> str | None:
        """The non-Latin script with the most letters, or None."""
        others = {s: n for s, n in self.by_script.items() if s != "latin" and n}
        return max(others, key=lambda s: (others[s], s)) if others else None

    @property
    def needs_multilingual(self) -> bool:
        """The rule: more than 5% of the letters are outside the Latin script."""
        return self.non_latin > NON_LATIN_SHARE

    def describe(self) -> str:
        """ "12% of the letters are Arabic script (Persian, Arabic, Urdu)" (or "all Latin")."""
        script = self.main_other_script
        if script is None:
            return "its letters are all in the Latin script" if self.letters else "it has no letters"
        return (
            f"{_percent(self.non_latin)} of its letters are outside the Latin script "
            f"(mostly {SCRIPT_NAMES.get(script, script)})"
        )


def _percent(share: float) -> str:
    value = share * 100
    return f"{value:.0f}%" if value >= 1 else "under 1%"


@dataclass(frozen=True)
class BoundaryChoice:
    """The boundary model in force, where it came from, and why (for provenance and diagnostics).

    ``source``: ``run config`` | ``defaults set`` | ``environment`` | ``registry`` | ``corpus language``
    (switched from the registry's English-only default by the rule above). ``warning``: set when an
    explicitly chosen model reads English only and the corpus needs a multilingual one.
    """

    model: str
    source: str
    reason: str
    warning: str | None = None
    replaced: str | None = None  # the English-only default it replaced (source "corpus language")

    def to_dict(self) -> dict[str, Any]:
        out = {"model": self.model, "source": self.source, "reason": self.reason}
        if self.warning:
            out["warning"] = self.warning
        if self.replaced:
            out["replaced"] = self.replaced
        return out


_SOURCE_WORDS = {
    "run config": "set in the run config",
    "defaults set": "set with chunkbench defaults set boundary_model",
    "environment": "set by CHUNKBENCH_BOUNDARY_MODEL",
    "registry": "the model registry's default",
}


def multilingual_model(registry: "ModelRegistry") -> "EmbeddingModelSpec | None":
    """The registry's first multilingual model, local ones first (they run offline)."""
    specs = [s for s in registry.values() if s.multilingual]
    local = [s for s in specs if s.provider == "local"]
    chosen = local or specs
    return chosen[0] if chosen else None


def choose_boundary_model(
    registry: "ModelRegistry",
    *,
    explicit: str | None = None,
    shared_default: str | None = None,
    machine_default: str | None = None,
    corpus: ScriptShare | None = None,
) -> BoundaryChoice:
    """The boundary model in force (module docstring: the order and the language rule).

    Raises ConfigError when the corpus needs a multilingual model, the default reads English only and the
    registry has no multilingual model; EmbeddingError (from ``get_model``) for an unknown model id.
    """
    from .registry import get_model

    for value, source in (  # noqa: B007 (source is read after the loop)
        (explicit, "run config"),
        (shared_default, "defaults set"),
        (machine_default, "environment"),
        (registry.default_boundary_model, "registry"),
    ):
        if value:
            spec = get_model(value, registry)
            break
    words = _SOURCE_WORDS[source]
    if corpus is None or not corpus.needs_multilingual:
        why = "" if corpus is None else f"; the corpus reads as Latin script ({corpus.describe()})"
        return BoundaryChoice(spec.id, source, f"{words}{why}")
    if not spec.english_only:
        reads = (
            "multilingual"
            if spec.multilingual
            else ("reads " + ", ".join(spec.languages) if spec.languages else "declares no languages")
        )
        return BoundaryChoice(spec.id, source, f"{words} ({reads}); the corpus: {corpus.describe()}")
    if source != "registry":
        return BoundaryChoice(
            spec.id,
            source,
            f"{words}, kept although it reads English only",
            warning=(
                f"the boundary model {spec.id} reads English only, but {corpus.describe()}: its semantic cuts "
                "of that text are close to arbitrary. Use a multilingual boundary model "
                f"(chunkbench defaults set boundary_model {_suggest(registry)}) unless this is deliberate."
            ),
        )
    other = multilingual_model(registry)
    if other is None:
        raise ConfigError(
            f"the corpus needs a multilingual boundary model ({corpus.describe()}) and the default, {spec.id}, reads "
            'English only; no registered model declares languages = ["multilingual"]. Register one (a model '
            "registry file named by CHUNKBENCH_MODELS), or keep the English-only model knowingly: "
            f"chunkbench defaults set boundary_model {spec.id}"
        )
    return BoundaryChoice(
        other.id,
        "corpus language",
        f"{corpus.describe()}, and the registry's default {spec.id} reads English only",
        replaced=spec.id,
    )


def _suggest(registry: "ModelRegistry") -> str:
    other = multilingual_model(registry)
    return other.id if other is not None else "MODEL"
