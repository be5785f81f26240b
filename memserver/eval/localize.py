"""Issue-localization metrics of the SWE-bench README: file and function Acc@k and the rest.

Per answer, the evidence in rank order gives the distinct files (order of first appearance)
and the distinct functions (one per evidence symbol; an item without a symbol stands for its
own span). A gold function `A.b` is matched by an evidence function of its file whose symbol
(or one of the comma-separated symbols of a merged chunk) is `A.b` or ends with `.A.b`, or
one of whose spans contains a whole definition of `A.b` in the tree (located with Python's
`ast`, from its `def`/`class` line to its last line). An answer's file rank is the smallest
k whose first k files hold every gold file, its function rank the same for the gold
functions; None when the answer never holds them all. Acc@k is the share of answers with
rank ≤ k.
"""

from __future__ import annotations

import ast
import statistics
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from memserver.eval.locomo import auroc

FILE_K = (1, 3, 5, 10)
FUNCTION_K = (5, 10)
NOT_FUNCTIONS = ("imports", "docstring")  # and `impl…` entries: the README's non-functions


def is_test_path(path: str) -> bool:
    """Under `tests/` or `testing/`, `test_*.py`, `*_test.py`, `conftest.py`."""
    parts = path.split("/")
    name = parts[-1]
    return (
        any(p in ("tests", "testing") for p in parts[:-1])
        or (name.startswith("test_") and name.endswith(".py"))
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def is_doc_path(path: str) -> bool:
    """Under `docs/`, or a `.txt`, `.rst` or `.md` file."""
    return "docs" in path.split("/")[:-1] or path.endswith((".txt", ".rst", ".md"))


def is_function_name(name: str) -> bool:
    return name not in NOT_FUNCTIONS and not name.startswith("impl")


@dataclass(frozen=True, slots=True)
class Hit:
    """One evidence item, as far as the metrics care."""

    path: str
    symbol: str
    start_line: int
    end_line: int
    kind: str = ""
    tokens: int = 0


@dataclass(frozen=True, slots=True)
class Unit:
    """A distinct function of an answer: its file, symbol and every span it came with."""

    path: str
    symbol: str
    spans: tuple[tuple[int, int], ...]


def distinct_files(hits: Iterable[Hit]) -> list[str]:
    return list(dict.fromkeys(h.path for h in hits))


def distinct_functions(hits: Iterable[Hit]) -> list[Unit]:
    spans: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for h in hits:
        key = (h.path, h.symbol or f"{h.start_line}-{h.end_line}")
        spans.setdefault(key, []).append((h.start_line, h.end_line))
    return [Unit(path, symbol, tuple(s)) for (path, symbol), s in spans.items()]


def definitions(source: str) -> dict[str, list[tuple[int, int]]]:
    """Qualified name (`A.b`, `f.inner`) → spans (def line .. last line) of its definitions."""
    out: dict[str, list[tuple[int, int]]] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = f"{prefix}{child.name}"
                out.setdefault(name, []).append((child.lineno, child.end_lineno or child.lineno))
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    try:
        visit(ast.parse(source), "")
    except (SyntaxError, ValueError):
        return {}
    return out


def spans_of(defs: Mapping[str, Sequence[tuple[int, int]]], name: str) -> list[tuple[int, int]]:
    """Definitions of gold `name` (exactly, or nested deeper: `X.A.b` for `A.b`)."""
    return [s for q, spans in defs.items() if q == name or q.endswith("." + name) for s in spans]


@dataclass(frozen=True, slots=True)
class GoldFunction:
    path: str
    name: str
    spans: tuple[tuple[int, int], ...] = ()  # its definitions in the tree, if found


def matches(unit: Unit, gold: GoldFunction) -> bool:
    if unit.path != gold.path:
        return False
    for symbol in unit.symbol.split(","):  # a merged chunk names its parts "A, B"
        symbol = symbol.strip()
        if symbol == gold.name or symbol.endswith("." + gold.name):
            return True
    return any(s <= ds and de <= e for s, e in unit.spans for ds, de in gold.spans)


def file_rank(files: Sequence[str], gold: Sequence[str]) -> int | None:
    if not gold or any(g not in files for g in gold):
        return None
    return max(files.index(g) + 1 for g in gold)


def function_rank(units: Sequence[Unit], gold: Sequence[GoldFunction]) -> int | None:
    if not gold:
        return None
    worst = 0
    for g in gold:
        first = next((i for i, u in enumerate(units, 1) if matches(u, g)), None)
        if first is None:
            return None
        worst = max(worst, first)
    return worst


@dataclass(frozen=True, slots=True)
class Scored:
    """One answer reduced to what the metrics need (and what the report keeps per instance)."""

    files: tuple[str, ...]  # the first 10 distinct files
    file_rank: int | None
    function_rank: int | None = None
    has_functions: bool = False
    gold_in_top5: bool = False  # any gold file among the first 5 files (the gate's target)
    found: bool = True
    confidence: float = 0.0
    tokens: int = 0
    ms: float = 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "files": list(self.files), "file_rank": self.file_rank,
            "function_rank": self.function_rank, "gold_in_top5": self.gold_in_top5,
            "found": self.found, "confidence": round(self.confidence, 6),
            "tokens": self.tokens, "ms": round(self.ms, 2),
        }  # fmt: skip


def score_answer(
    hits: Sequence[Hit], gold_files: Sequence[str], gold_functions: Sequence[GoldFunction], *,
    found: bool = True, confidence: float = 0.0, tokens: int = 0, ms: float = 0.0,
) -> Scored:  # fmt: skip
    files = distinct_files(hits)
    return Scored(
        files=tuple(files[:10]), file_rank=file_rank(files, gold_files),
        function_rank=function_rank(distinct_functions(hits), gold_functions),
        has_functions=bool(gold_functions), gold_in_top5=any(g in files[:5] for g in gold_files),
        found=found, confidence=confidence, tokens=tokens, ms=ms,
    )  # fmt: skip


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[int(q * (len(ordered) - 1))] if ordered else 0.0


def _within(ranks: Sequence[int | None], k: int) -> float:
    return sum(1 for r in ranks if r is not None and r <= k) / len(ranks) if ranks else 0.0


def _share(items: Sequence[Scored], test: Callable[[Scored], bool]) -> float:
    return sum(1 for i in items if test(i)) / len(items) if items else 0.0


def summarise(answers: Sequence[Scored], *, ranking_only: bool = False) -> dict[str, float]:
    """The README's numbers over `answers` (percent for Acc@k). `ranking_only`: just file
    Acc@k and latency (a baseline with no functions, gate or pack)."""
    out: dict[str, float] = {"n": len(answers)}
    for k in FILE_K:
        out[f"file_acc@{k}"] = 100 * _within([a.file_rank for a in answers], k)
    out["p50_ms"] = percentile([a.ms for a in answers], 0.5)
    out["p95_ms"] = percentile([a.ms for a in answers], 0.95)
    if ranking_only:
        return out
    with_functions = [a for a in answers if a.has_functions]
    out["function_n"] = len(with_functions)
    for k in FUNCTION_K:
        out[f"function_acc@{k}"] = 100 * _within([a.function_rank for a in with_functions], k)
    out["found_false_rate"] = _share(answers, lambda a: not a.found)
    out["tokens_mean"] = statistics.mean(a.tokens for a in answers) if answers else 0.0
    out["tests_docs_top10"] = (
        statistics.mean(sum(1 for f in a.files if is_test_path(f) or is_doc_path(f))
                        for a in answers) if answers else 0.0
    )  # fmt: skip
    out["test_at_1"] = _share(answers, lambda a: bool(a.files) and is_test_path(a.files[0]))
    hit = [a.confidence for a in answers if a.gold_in_top5]
    out["auroc_gold_top5"] = auroc(hit, [a.confidence for a in answers if not a.gold_in_top5])
    return out
