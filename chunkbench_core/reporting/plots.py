"""Static plots as PNG bytes (matplotlib, Agg backend): the reports inline them as data URIs.

Labels come from data (:func:`chunkbench_core.labels.configuration_label`); ``$`` is escaped so matplotlib
never reads a label as math text. Each configuration keeps one colour of :data:`PALETTE` (20 colours that
stay apart); the recommended one is marked by its shape (a star with a black edge), not by colour alone.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Sequence

from chunkbench_core.labels import configuration_label

if TYPE_CHECKING:
    import matplotlib.pyplot as plt


@lru_cache(maxsize=1)
def _pyplot() -> Any:
    """matplotlib's pyplot on the Agg backend, imported when the first plot is drawn: it takes about 0.4 s, which
    every process that loads the reports' code (a Dagster code server, each run, the CLI) would otherwise pay
    without drawing anything."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot


#: one colour per configuration, in leaderboard order: the five first colours of matplotlib's default cycle,
#: then colours picked one by one to be as far as possible (CIELAB distance) from every colour already
#: chosen, among readable ones on white (lightness 30-75, chroma 25-80). Any two differ by at least 33 CIELAB
#: units (two colours 10 units apart are already easy to tell apart side by side); the decision board's
#: trend chart uses the same list.
PALETTE: tuple[str, ...] = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#5a4b1e",
    "#3cc3b4",
    "#f0a5a5",
    "#c3b400",
    "#e10087",
    "#872d4b",
    "#b4b478",
    "#00693c",
    "#0078ff",
    "#ff78f0",
    "#964b00",
    "#870096",
    "#697800",
    "#00c3f0",
    "#ff6987",
)
#: past 20 configurations the colours repeat with another marker shape, so no two points look alike
MARKERS = ("o", "s", "D", "^", "v", "P")


def color(index: int) -> str:
    """The colour of the configuration at ``index`` (leaderboard order)."""
    return PALETTE[index % len(PALETTE)]


def marker(index: int) -> str:
    """The marker of the configuration at ``index``: a circle for the first 20, then other shapes."""
    return MARKERS[(index // len(PALETTE)) % len(MARKERS)]


def _label(text: str, limit: int = 120) -> str:
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.replace("$", r"\$")


def _png(fig: plt.Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    _pyplot().close(fig)
    return buffer.getvalue()


def _whisker(center: float, bounds: tuple[float, float] | None) -> list[list[float]] | None:
    """Error-bar lengths below/above ``center`` (never negative: a mean outside its interval gets none)."""
    if bounds is None:
        return None
    return [[max(0.0, center - bounds[0])], [max(0.0, bounds[1] - center)]]


@dataclass(frozen=True)
class MetricSeries:
    """One metric across configurations; ``lows``/``highs`` are the CI bounds (None: no whisker)."""

    label: str
    values: Sequence[float | None]
    lows: Sequence[float | None]
    highs: Sequence[float | None]


def metric_bars_png(configurations: Sequence[str], series: Sequence[MetricSeries]) -> bytes:
    """Grouped horizontal bars: configurations on y, one bar per metric, CI whiskers."""
    n_conf, n_series = len(configurations), max(len(series), 1)
    height = max(2.5, 0.22 * n_conf * n_series + 1.2)
    fig, ax = _pyplot().subplots(figsize=(8, min(height, 24)))
    bar = 0.8 / n_series
    for j, s in enumerate(series):
        ys = [i + j * bar for i in range(n_conf)]
        values = [v if v is not None else 0.0 for v in s.values]
        err_low = [max(0.0, v - lo) if (v is not None and lo is not None) else 0.0 for v, lo in zip(s.values, s.lows)]
        err_high = [max(0.0, hi - v) if (v is not None and hi is not None) else 0.0 for v, hi in zip(s.values, s.highs)]
        ax.barh(
            ys,
            values,
            height=bar * 0.9,
            color=color(j),
            label=s.label,
            xerr=[err_low, err_high],
            error_kw={"elinewidth": 1, "capsize": 2, "ecolor": "#333"},
        )
    ax.set_yticks([i + bar * (n_series - 1) / 2 for i in range(n_conf)])
    ax.set_yticklabels([_label(c) for c in configurations], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1.05)
    ax.set_xlabel("mean over questions (whiskers: 95% confidence interval)")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(series), frameon=False)
    fig.tight_layout()
    return _png(fig)


def chunk_size_png(distributions: Sequence[tuple[str, Sequence[float]]], unit: str) -> bytes:
    """Box plots (with the points' spread) of chunk sizes per configuration."""
    labels = [_label(name) for name, _ in distributions]
    data = [list(values) for _, values in distributions]
    fig, ax = _pyplot().subplots(figsize=(8, max(2.2, 0.45 * len(data) + 1.2)))
    ax.boxplot(
        data,
        orientation="horizontal",
        tick_labels=labels,
        showfliers=True,
        widths=0.6,
        flierprops={"markersize": 3, "alpha": 0.5},
        medianprops={"color": "#d62728"},
    )
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=8)
    ax.set_xlabel(f"chunk size ({unit})")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _png(fig)


@dataclass(frozen=True)
class FrontierPoint:
    label: str
    quality: float
    cost: float
    tier: int | None = None
    on_frontier: bool = False
    recommended: bool = False
    quality_ci: tuple[float, float] | None = None
    margin_class: str | None = None  # the comparison's class: best | within_margin | undecided | worse

    @property
    def verdict(self) -> str | None:
        """The recommendation's class in words: recommended, within the margin, undecided or worse."""
        if self.recommended:
            return "recommended"
        if self.margin_class in ("best", "within_margin"):
            return "within the margin"
        if self.margin_class in ("undecided", "worse"):
            return self.margin_class
        return {1: "within the margin", 2: "undecided", 3: "worse"}.get(self.tier or 0)


COST_AXIS_LABELS = {
    "projected_usd": "cost: USD to build the index and answer 1,000 questions",
    "context_tokens": "cost: context tokens the LLM reads per question",
}


def frontier_png(points: Sequence[FrontierPoint], metric: str, cost_axis: str) -> bytes:
    """:func:`frontier_figure` as PNG bytes. A run draws the same plot twice (the leaderboard's Dagster page and the
    managerial report): the last few are kept, as drawing one takes about 0.4 s of CPU."""
    return _frontier_png(tuple(points), metric, cost_axis)


@lru_cache(maxsize=4)
def _frontier_png(points: tuple[FrontierPoint, ...], metric: str, cost_axis: str) -> bytes:
    return _png(frontier_figure(points, metric, cost_axis))


def frontier_figure(points: Sequence[FrontierPoint], metric: str, cost_axis: str) -> plt.Figure:
    """The ranking metric (y) against cost (x) by the recommendation's classes: ★ recommended, filled = within the
    margin of the best, hollow = undecided, faded = worse; the frontier joined.

    Points are numbered in ``points`` order (the ranking) and named in the legend.
    """
    many = len(points) > 8  # a long legend goes under the plot, in two columns, so the plot keeps its width
    fig, ax = _pyplot().subplots(figsize=(10, 5 + (0.12 * len(points) if many else 0)))
    numbers: list[Any] = []  # each point's rank beside it, placed where it overlaps no other once the axes are set
    radii: list[float] = []  # each marker's radius in points (its size is a diameter), its edge included
    for i, p in enumerate(points):
        tint = color(i)
        verdict = p.verdict
        face = tint if verdict in ("recommended", "within the margin") else "white"
        alpha = 0.45 if verdict == "worse" else 1.0
        if p.recommended:  # the shape says it, not the colour: a large star with a black edge
            shape, size, edge, width = "*", 20, "black", 1.2
        else:
            shape, size, edge, width = marker(i), 8, tint, 1.5
        radii.append(size / 2 + width / 2)
        ax.errorbar(
            [p.cost],
            [p.quality],
            yerr=_whisker(p.quality, p.quality_ci),
            fmt=shape,
            markersize=size,
            color=tint,
            ecolor=tint,
            elinewidth=1,
            capsize=3,
            markerfacecolor=face,
            markeredgecolor=edge,
            markeredgewidth=width,
            zorder=3 if p.recommended else 2,
            alpha=alpha,
            label=f"{i + 1}. {_label(p.label)}" + (f" ({'★ ' if p.recommended else ''}{verdict})" if verdict else ""),
        )
        numbers.append(
            ax.annotate(
                str(i + 1),
                (p.cost, p.quality),
                fontsize=8,
                fontweight="bold",
                xytext=(5, 5),
                textcoords="offset points",
                color="#222",
            )
        )
    front = sorted((p for p in points if p.on_frontier), key=lambda p: p.cost)
    if len(front) > 1:
        ax.step(
            [p.cost for p in front],
            [p.quality for p in front],
            where="post",
            color="#555",
            linestyle="--",
            linewidth=1,
            label="frontier",
        )
    ax.set_xlabel(COST_AXIS_LABELS.get(cost_axis, cost_axis))
    ax.set_ylabel(f"{metric} (higher is better)")
    ax.grid(alpha=0.3)
    ax.set_title(
        "Quality vs cost\n★ = recommended, filled = within the margin of the best, hollow = undecided, "
        "faded = worse, dashed = frontier",
        fontsize=10,
    )
    if many:
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2, frameon=False)
    else:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), frameon=False)
    fig.tight_layout()
    place_numbers(fig, ax, numbers, [(p.cost, p.quality, radius) for p, radius in zip(points, radii)])
    return fig


#: where a point's number may go, in order of preference: (x, y) in units of the marker's radius plus a gap, and
#: the text's alignment there (up right first, as before; then the other corners, the sides, above and below)
_SPOTS = (
    (1, 1, "left", "bottom"),
    (1, -1, "left", "top"),
    (-1, 1, "right", "bottom"),
    (-1, -1, "right", "top"),
    (1.3, 0, "left", "center"),
    (-1.3, 0, "right", "center"),
    (0, 1.3, "center", "bottom"),
    (0, -1.3, "center", "top"),
)


def place_numbers(fig: Any, ax: Any, numbers: Sequence[Any], markers: Sequence[tuple[float, float, float]]) -> None:
    """Move each number (an annotation of the point at the same index of ``markers``: x, y in data units and the
    marker's radius in points) to the first spot around its point where it overlaps neither a number already
    placed nor another point's marker and stays inside the axes, looking further out when every near spot is taken;
    where none is free, to the spot that overlaps least. Points that share a cost and a score (a tie) otherwise got their numbers drawn
    on top of each other."""
    if not numbers:
        return
    renderer = fig.canvas.get_renderer()
    scale = fig.dpi / 72.0  # points to pixels
    centres = ax.transData.transform([(x, y) for x, y, _ in markers])
    discs = [(cx, cy, r * scale) for (cx, cy), (_, _, r) in zip(centres, markers)]
    placed: list[Any] = []
    frame = ax.get_window_extent(renderer)  # inside the axes: outside, a number met the title or a tick label

    def overlap(box: Any, own: int) -> float:
        outside = box.width * box.height - max(0.0, min(box.x1, frame.x1) - max(box.x0, frame.x0)) * max(
            0.0, min(box.y1, frame.y1) - max(box.y0, frame.y0)
        )
        area = outside
        for other in placed:
            w = min(box.x1, other.x1) - max(box.x0, other.x0)
            h = min(box.y1, other.y1) - max(box.y0, other.y0)
            area += max(0.0, w) * max(0.0, h)
        for k, (cx, cy, r) in enumerate(discs):
            if k == own:
                continue
            nx, ny = min(max(cx, box.x0), box.x1), min(max(cy, box.y0), box.y1)  # the box's point nearest the disc
            if (nx - cx) ** 2 + (ny - cy) ** 2 < r * r:
                area += r * r
        return area

    for index, (text, (_, _, radius)) in enumerate(zip(numbers, markers)):
        best: tuple[float, Any, tuple[float, float, str, str]] | None = None
        for reach in (1.0, 2.0, 3.0):
            for dx, dy, ha, va in _SPOTS:
                step = (radius + 2.0) * reach
                spot = (dx * step, dy * step, ha, va)
                text.set_position(spot[:2])
                text.set_ha(ha)
                text.set_va(va)
                box = text.get_window_extent(renderer)
                cost = overlap(box, index)
                if best is None or cost < best[0]:
                    best = (cost, box, spot)
                if cost == 0.0:
                    break
            if best is not None and best[0] == 0.0:
                break
        assert best is not None
        _, box, (x, y, ha, va) = best
        text.set_position((x, y))
        text.set_ha(ha)
        text.set_va(va)
        placed.append(box)


def _provenance(raw: Any) -> dict[str, Any]:
    try:
        parsed = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _flag(value: Any) -> bool:
    try:
        return bool(value) and value == value
    except (TypeError, ValueError):  # pandas NA
        return False


def frontier_points(board: Any) -> tuple[list[FrontierPoint], str, str]:
    """(points, metric, cost axis) from the ``leaderboard`` view's rows (a DataFrame), compared rows only."""
    rows = [
        r
        for _, r in board.iterrows()
        if r.get("rank_metric") is not None and r.get("rank_metric") == r.get("rank_metric")
    ]
    if not rows:
        return [], "", ""
    metric = str(rows[0]["rank_metric"])
    axis = str(rows[0].get("cost_axis") or "context_tokens")

    def number(value: Any, default: float = 0.0) -> float:
        try:
            out = float(value)
        except (TypeError, ValueError):
            return default
        return default if out != out else out

    points = [
        FrontierPoint(
            str(r["label"])
            if isinstance(r.get("label"), str)
            else configuration_label(
                r.get("strategy_label") if isinstance(r.get("strategy_label"), str) else r["strategy"],
                r["corpus_model"],
                _provenance(r.get("provenance")),
            ),
            number(r.get("rank_mean")),
            number(r.get(axis)),
            tier=int(r["tier"]) if number(r.get("tier"), -1) >= 0 else None,
            margin_class=str(r["class"]) if isinstance(r.get("class"), str) else None,
            on_frontier=_flag(r.get("on_frontier")),
            recommended=_flag(r.get("recommended")),
            quality_ci=(number(r.get("rank_ci_low")), number(r.get("rank_ci_high")))
            if r.get("rank_ci_low") == r.get("rank_ci_low") and r.get("rank_ci_low") is not None
            else None,
        )
        for r in rows
    ]
    return points, metric, axis
