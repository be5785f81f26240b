"""Report folders for `memserver eval … --report DIR`: PNG figures and a static index.html.

A figure is described as data by one of the frozen specs below (`eval.figures` builds them
from an eval's report dict); `write_report` draws each with matplotlib (Agg backend, imported
here only, and only when drawing: the sole matplotlib importer), writes the report's JSON
beside them, and an index.html that references nothing but the files it wrote. Every figure
carries a one-line caption and the command that made it.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memserver.core.errors import ConfigError
from memserver.eval.localize import percentile


@dataclass(frozen=True, slots=True)
class Lines:
    """Curves (x, y) per series; series named in `dashed` are baselines."""

    name: str
    title: str
    caption: str
    x_label: str
    y_label: str
    series: Mapping[str, Sequence[tuple[float, float]]]
    dashed: frozenset[str] = frozenset()
    log_x: bool = False
    log_y: bool = False


@dataclass(frozen=True, slots=True)
class Bars:
    """Grouped bars: one bar per series in each group (None: no bar); baselines hatched."""

    name: str
    title: str
    caption: str
    y_label: str
    groups: Sequence[str]
    series: Mapping[str, Sequence[float | None]]
    baselines: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Roc:
    """ROC of a score separating positives from negatives, with the chosen point marked."""

    name: str
    title: str
    caption: str
    positive: Sequence[float]
    negative: Sequence[float]
    chosen: tuple[float, float] | None = None  # (false positive rate, true positive rate)
    chosen_label: str = "chosen threshold"


@dataclass(frozen=True, slots=True)
class Histogram:
    """Distributions (e.g. latencies in ms) per series, each with its p50 and p95 marked."""

    name: str
    title: str
    caption: str
    x_label: str
    values: Mapping[str, Sequence[float]]


@dataclass(frozen=True, slots=True)
class Stacked:
    """Stacked bars: per group, the parts (e.g. seconds per phase) and an optional label."""

    name: str
    title: str
    caption: str
    y_label: str
    groups: Sequence[str]
    parts: Mapping[str, Sequence[float]]
    labels: Sequence[str] = ()


@dataclass(frozen=True, slots=True)
class Table:
    title: str
    header: Sequence[str]
    rows: Sequence[Sequence[Any]]


Figure = Lines | Bars | Roc | Histogram | Stacked


@dataclass(frozen=True, slots=True)
class Page:
    """What one report shows: its figures, tables and notes (e.g. data an eval lacks)."""

    title: str
    figures: tuple[Figure, ...]
    tables: tuple[Table, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Written:
    index: Path
    figures: tuple[Path, ...] = field(default_factory=tuple)


def roc_points(positive: Sequence[float], negative: Sequence[float]) -> list[tuple[float, float]]:
    """(FPR, TPR) for every threshold, from (0, 0) to (1, 1); ties move both at once."""
    scored = sorted([(s, 1) for s in positive] + [(s, 0) for s in negative], reverse=True)
    p, n = max(1, len(positive)), max(1, len(negative))
    points, tp, fp, i = [(0.0, 0.0)], 0, 0, 0
    while i < len(scored):
        j = i
        while j < len(scored) and scored[j][0] == scored[i][0]:
            tp += scored[j][1]
            fp += 1 - scored[j][1]
            j += 1
        points.append((fp / n, tp / p))
        i = j
    return points


# -- drawing --------------------------------------------------------------------------------


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError as exc:
        raise ConfigError(
            "--report needs matplotlib, which is not installed",
            hint="pip install 'memserver[reports]'",
        ) from exc
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _lines(ax: Any, f: Lines) -> None:
    for label, points in f.series.items():
        # a log axis has no place for zero (e.g. no embedding phase with the hashing embedder)
        points = [(x, y) for x, y in points if (x > 0 or not f.log_x) and (y > 0 or not f.log_y)]
        if points:
            xs, ys = zip(*points, strict=True)
            style = "--" if label in f.dashed else "-"
            ax.plot(xs, ys, style, marker="o", markersize=3, label=label)
    if f.log_x:
        ax.set_xscale("log")
    if f.log_y:
        ax.set_yscale("log")
    ax.set_xlabel(f.x_label)
    ax.set_ylabel(f.y_label)


def _group_ticks(ax: Any, groups: Sequence[str]) -> None:
    """One tick per group; slanted when there are many or long names, so none overlap."""
    slant = len(groups) > 5 or max((len(g) for g in groups), default=0) > 14
    ax.set_xticks(range(len(groups)), list(groups), rotation=20 if slant else 0,
                  ha="right" if slant else "center")  # fmt: skip


def bar_slots(f: Bars) -> tuple[float, dict[str, list[tuple[float, float]]]]:
    """(bar width, series → [(x, value)]): each group is as wide as the bars it has, so a
    series drawn in one group only (a baseline) leaves no gaps in the others."""
    present = [[k for k, v in f.series.items() if v[g] is not None] for g in range(len(f.groups))]
    width = 0.8 / max([1, *(len(p) for p in present)])
    slots: dict[str, list[tuple[float, float]]] = {}
    for g, labels in enumerate(present):
        for i, label in enumerate(labels):
            value = f.series[label][g]
            assert value is not None
            slots.setdefault(label, []).append((g + (i - (len(labels) - 1) / 2) * width, value))
    return width, slots


def _bars(ax: Any, f: Bars) -> None:
    width, slots = bar_slots(f)
    for label, kept in slots.items():
        base = label in f.baselines
        ax.bar([x for x, _ in kept], [v for _, v in kept], width, label=label,
               hatch="//" if base else None, alpha=0.6 if base else 1.0)  # fmt: skip
    _group_ticks(ax, f.groups)
    ax.set_ylabel(f.y_label)


def _roc(ax: Any, f: Roc) -> None:
    xs, ys = zip(*roc_points(f.positive, f.negative), strict=True)
    ax.plot(xs, ys, "-", label=f"ROC ({len(f.positive)} positive, {len(f.negative)} negative)")
    ax.plot([0, 1], [0, 1], ":", color="grey", label="chance")
    if f.chosen is not None:
        ax.plot([f.chosen[0]], [f.chosen[1]], "o", color="red", label=f.chosen_label)
    ax.set_xlabel("false positive rate")
    ax.set_ylabel("true positive rate")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.02)


def _histogram(ax: Any, f: Histogram) -> None:
    kept = {k: v for k, v in f.values.items() if v}
    everything = [x for v in kept.values() for x in v]
    lo, hi = (min(everything), max(everything)) if everything else (0.0, 1.0)
    bins = [lo + (hi - lo) * i / 30 for i in range(31)] if hi > lo else 10
    for i, (label, values) in enumerate(kept.items()):
        color = f"C{i}"
        # outlines, not filled bars: filled ones blend into colours no legend names
        ax.hist(values, bins=bins, histtype="step", linewidth=1.4, color=color, label=label)
        for q, style in ((0.5, "-"), (0.95, "--")):
            v = percentile(values, q)
            ax.axvline(v, color=color, linestyle=style, linewidth=1,
                       label=f"{label} p{int(q * 100)} {v:.0f} {f.x_label}")  # fmt: skip
    ax.set_xlabel(f.x_label)
    ax.set_ylabel("count")


def _stacked(ax: Any, f: Stacked) -> None:
    bottoms = [0.0] * len(f.groups)
    for label, values in f.parts.items():
        ax.bar(range(len(f.groups)), values, 0.6, bottom=bottoms, label=label)
        bottoms = [b + v for b, v in zip(bottoms, values, strict=True)]
    for x, (text, top) in enumerate(zip(f.labels, bottoms, strict=False)):
        ax.annotate(text, (x, top), ha="center", va="bottom", fontsize=7)
    _group_ticks(ax, f.groups)
    ax.set_ylabel(f.y_label)


_DRAW: dict[type, Callable[[Any, Any], None]] = {
    Lines: _lines, Bars: _bars, Roc: _roc, Histogram: _histogram, Stacked: _stacked,
}  # fmt: skip


def draw(figure: Figure, path: Path) -> Path:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(9.0, 4.2), dpi=110)
    try:
        _DRAW[type(figure)](ax, figure)
        ax.set_title(figure.title, fontsize=10)
        ax.grid(True, alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            # beside the axes, never over a bar or a curve ("best" still covers some)
            ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
        fig.tight_layout()
        fig.savefig(path, format="png", bbox_inches="tight")
    finally:
        plt.close(fig)
    return path


# -- the page -------------------------------------------------------------------------------

_STYLE = """body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;
color:#222}figure{margin:2em 0}img{max-width:100%;border:1px solid #ddd}figcaption{font-size:.9em}
code{background:#f3f3f3;padding:0 .2em}table{border-collapse:collapse;font-size:.85em;margin:1em 0}
td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}th:first-child,td:first-child
{text-align:left}"""


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "—" if math.isnan(value) else f"{value:.3g}" if abs(value) < 1 else f"{value:.1f}"
    return html.escape("—" if value is None else str(value))


def _table(t: Table) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in t.header)
    rows = "".join("<tr>" + "".join(f"<td>{_cell(v)}</td>" for v in r) + "</tr>" for r in t.rows)
    return f"<h2>{html.escape(t.title)}</h2><table><tr>{head}</tr>{rows}</table>"


def write_report(out: Path, page: Page, *, command: str, data: Any) -> Written:
    """Draw the page's figures into `out`, write `out/report.json` (the eval's JSON, `data`)
    and `out/index.html`."""
    title, figures, tables, notes = page.title, page.figures, page.tables, page.notes
    out.mkdir(parents=True, exist_ok=True)
    names = [f.name for f in figures]
    if len(set(names)) != len(names):
        raise ConfigError(f"two figures share a name in {names}", hint="name each figure once")
    (out / "report.json").write_text(json.dumps(data, indent=1, ensure_ascii=False), "utf-8")
    drawn = tuple(draw(f, out / f"{f.name}.png") for f in figures)
    cmd = f"<code>{html.escape(command)}</code>"
    parts = [f"<!doctype html><html lang=en><meta charset=utf-8><title>{html.escape(title)}"
             f"</title><style>{_STYLE}</style><h1>{html.escape(title)}</h1>",
             f"<p>Made by {cmd}. Data: <a href=report.json>report.json</a>.</p>"]  # fmt: skip
    parts += [f"<p>{html.escape(n)}</p>" for n in notes]
    parts += [_table(t) for t in tables]
    for f, path in zip(figures, drawn, strict=True):
        caption = f"{html.escape(f.caption)} Made by {cmd}."
        img = f'<img src="{path.name}" alt="{html.escape(f.title)}">'
        parts.append(f'<figure id="{f.name}">{img}<figcaption>{caption}</figcaption></figure>')
    index = out / "index.html"
    index.write_text("\n".join(parts) + "\n", "utf-8")
    return Written(index, drawn)
