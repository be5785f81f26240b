"""`memserver eval code`: the code-retrieval bench (CodeSearchNet-style, with abstention).

For each package: index its corpus into `<work>/<package>.index` (incremental,
so a second run reuses it), ask every query through the real recall pipeline
with the model loaded, and score with the bench README's rules: a hit is a
chunk on the gold path covering at least half of the gold span; an answerable
query the system abstained on is a miss. Ablations switch one stage off.
"""

from __future__ import annotations

import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RATES = ("recall@1", "recall@5", "recall@10", "mrr@10", "abstain", "false_abstain")
ABLATIONS = {"no-memories": {"include_memories": False}, "no-rerank": {"rerank": False}}


@dataclass(frozen=True, slots=True)
class Outcome:
    qid: str
    answerable: bool
    found: bool
    rank: int | None  # 1-based rank of the first hit in the top 10 (None if abstained)
    ranked: int | None  # the same, ignoring the gate (ranking quality alone)
    ms: float
    tokens: int
    signals: dict[str, float]


def is_hit(ev: Mapping[str, Any], q: Mapping[str, Any]) -> bool:
    if ev["path"] != q["gold_path"]:
        return False
    gs, ge = q["gold_start_line"], q["gold_end_line"]
    return bool(min(ev["end_line"], ge) - max(ev["start_line"], gs) + 1 >= 0.5 * (ge - gs + 1))


def load_dataset(path: Path) -> dict[str, list[dict[str, Any]]]:
    by_pkg: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            q = json.loads(line)
            by_pkg[q["package"]].append(q)
    return dict(by_pkg)


def ask(recaller: Any, queries: Sequence[dict[str, Any]], **flags: Any) -> list[Outcome]:
    out = []
    for q in queries:
        t = time.perf_counter()
        res = recaller.recall(q["query"], **flags)
        ms = (time.perf_counter() - t) * 1000
        evidence = [e.to_dict() for e in res.evidence]
        ranked = None
        if q["answerable"]:
            ranked = next((i for i, e in enumerate(evidence[:10], 1) if is_hit(e, q)), None)
        rank = ranked if res.found else None
        out.append(Outcome(q["qid"], q["answerable"], bool(res.found), rank, ranked, ms,
                           res.tokens, dict(res.signals)))  # fmt: skip
    return out


def score(outcomes: Sequence[Outcome]) -> dict[str, float]:
    ans = [o for o in outcomes if o.answerable]
    una = [o for o in outcomes if not o.answerable]
    n = max(1, len(ans))
    times = sorted(o.ms for o in outcomes)

    def at(k: int) -> float:
        return sum(1 for o in ans if o.rank is not None and o.rank <= k) / n

    return {
        "recall@1": at(1), "recall@5": at(5), "recall@10": at(10),
        "mrr@10": sum(1 / o.rank for o in ans if o.rank) / n,
        "ungated_recall@10": sum(1 for o in ans if o.ranked is not None) / n,
        "ungated_mrr@10": sum(1 / o.ranked for o in ans if o.ranked) / n,
        "abstain": sum(1 for o in una if not o.found) / max(1, len(una)),
        "false_abstain": sum(1 for o in ans if not o.found) / n,
        "p50_ms": statistics.median(times) if times else 0.0,
        "p95_ms": times[int(0.95 * (len(times) - 1))] if times else 0.0,
        "tokens_mean": statistics.mean(o.tokens for o in outcomes) if outcomes else 0.0,
        "tokens_max": max((o.tokens for o in outcomes), default=0),
        "answerable": len(ans), "unanswerable": len(una),
    }  # fmt: skip


def macro(packages: dict[str, dict[str, float]]) -> dict[str, float]:
    keys = [k for k in next(iter(packages.values())) if k not in ("answerable", "unanswerable")]
    return {k: statistics.mean(p[k] for p in packages.values()) for k in keys}


def run(
    dataset: Path,
    corpora: Path,
    work: Path,
    *,
    make_engine: Callable[[Path, Path], Any],
    ablations: Sequence[str] = tuple(ABLATIONS),
    log: Callable[[str], None] = lambda _: None,
) -> tuple[dict[str, Any], dict[str, list[Outcome]]]:
    """Index and ask every package; return the report and the full-pipeline outcomes."""
    data = load_dataset(dataset)
    report: dict[str, Any] = {"packages": {}, "ablations": {a: {"packages": {}} for a in ablations}}
    outcomes: dict[str, list[Outcome]] = {}
    for pkg, queries in sorted(data.items()):
        root = corpora / pkg
        engine = make_engine(root, work / f"{pkg}.index")
        log(f"{pkg}: indexing {root}")
        indexed = engine.index()
        recaller = engine.recaller()
        recaller.recall("warm up the model and the in-memory view")
        log(f"{pkg}: asking {len(queries)} queries")
        outcomes[pkg] = ask(recaller, queries)
        report["packages"][pkg] = {
            **score(outcomes[pkg]), "index_seconds": indexed.seconds,
            "index_seconds_to_search": indexed.seconds_to_search,
            "index_seconds_embedding": indexed.seconds_embedding, "chunks": indexed.chunks_total,
        }  # fmt: skip
        for name in ablations:
            flags = ABLATIONS[name]
            report["ablations"][name]["packages"][pkg] = score(ask(recaller, queries, **flags))
    report["macro"] = macro(report["packages"])
    for name in ablations:
        report["ablations"][name]["macro"] = macro(report["ablations"][name]["packages"])
    return report, outcomes
