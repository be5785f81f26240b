"""`memserver eval swebench`: issue localization on SWE-bench-format instances.

Instances are grouped by their source tree (`tree_for`). One working tree under the work
folder is moved from tree to tree as a branch switch would move it (`treesync`), and indexed
incrementally after each switch; then every instance of that tree is recalled with its whole
problem statement in three configurations (`CONFIGS`: the product defaults, a wide one
that tells ranking from packing, and the map answer: ranked files with their places and
no code), and ranked by the whole-file BM25 baseline built on the
same tree in the same run. Scoring follows the bench README (`localize`); the report has the
numbers per release, per split and pooled, every switch's sync and index figures, and per
instance what a report's figures need (ranks, found, confidence, tokens, latency).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memserver.core.errors import PathError
from memserver.core.requests import LIMITS
from memserver.eval.bm25files import FileBM25
from memserver.eval.localize import (
    GoldFunction,
    Hit,
    Scored,
    definitions,
    file_rank,
    is_function_name,
    is_test_path,
    score_answer,
    spans_of,
    summarise,
)
from memserver.eval.treesync import sync_tree

WIDE_BUDGET = LIMITS.budget_max  # recall's largest budget: little is cut for space
CONFIGS: dict[str, dict[str, int | str]] = {
    "defaults": {},
    "wide": {"k": 50, "max_files": 10, "budget_tokens": WIDE_BUDGET},
    "map": {"format": "map"},
}
SPLITS = ("lite", "verified")


@dataclass(frozen=True, slots=True)
class Instance:
    instance_id: str
    repo: str
    base_commit: str
    release: str
    problem_statement: str
    expected_spans: Mapping[str, Sequence[str]]
    splits: tuple[str, ...]

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> Instance:
        return cls(
            str(row["instance_id"]), str(row.get("repo", "")), str(row.get("base_commit", "")),
            str(row.get("release") or row.get("version") or ""), str(row["problem_statement"]),
            {k: list(v) for k, v in dict(row.get("expected_spans") or {}).items()},
            tuple(row.get("splits") or ()),
        )  # fmt: skip

    @property
    def gold_files(self) -> list[str]:
        return [p for p in self.expected_spans if not is_test_path(p)]

    def gold_functions(self, defs: Callable[[str], Mapping[str, Any]]) -> list[GoldFunction]:
        """The gold functions of the non-test gold files, with their definitions' spans."""
        return [GoldFunction(path, name, tuple(spans_of(defs(path), name)))
                for path in self.gold_files for name in self.expected_spans[path]
                if is_function_name(name)]  # fmt: skip


def load_instances(path: Path, *, releases: Iterable[str] = (), limit: int | None = None
                   ) -> list[Instance]:  # fmt: skip
    wanted = set(releases)
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            inst = Instance.from_dict(json.loads(line))
            if not wanted or inst.release in wanted:
                out.append(inst)
    return out[:limit] if limit else out


def tree_for(trees: Path, inst: Instance) -> Path:
    """An instance's source tree: the first folder of these that exists under `trees`:
    `<repo name>-<release>/` (the Django DEV set: `django-3.1/`), `<instance_id>/`,
    `<base_commit>/`, `<repo name>-<base_commit>/`."""
    name = inst.repo.rsplit("/", 1)[-1]
    candidates = [f"{name}-{inst.release}", inst.instance_id, inst.base_commit,
                  f"{name}-{inst.base_commit}"]  # fmt: skip
    for c in candidates:
        if c and not c.startswith("-") and not c.endswith("-") and (trees / c).is_dir():
            return trees / c
    raise PathError(
        f"no source tree for {inst.instance_id} under {trees}",
        hint=f"expected one of {', '.join(c + '/' for c in candidates if c)}; for the Django "
        "DEV set run the bench's prepare.py --out TREES",
    )


def release_key(release: str) -> tuple[Any, ...]:
    """`3.10` after `3.9`; non-numeric parts compare as text after numbers."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in release.split("."))


def groups(trees: Path, instances: Sequence[Instance]) -> list[tuple[Path, list[Instance]]]:
    """Instances per tree, trees in release order (then by name), as a user moves forward."""
    by_tree: dict[Path, list[Instance]] = {}
    for inst in instances:
        by_tree.setdefault(tree_for(trees, inst), []).append(inst)
    return sorted(by_tree.items(), key=lambda g: (release_key(g[1][0].release), g[0].name))


# -- the engine adapter: the only code that calls memserver's engine ------------------


def index_tree(engine: Any) -> dict[str, Any]:
    r = engine.index()
    return {"seconds": r.seconds, "seconds_to_search": r.seconds_to_search,
            "seconds_embedding": r.to_dict().get("seconds_embedding", 0.0),
            "chunks_added": r.chunks_added, "chunks_total": r.chunks_total,
            "files_indexed": r.files_indexed,
            "keyword_rewritten": list(r.keyword_rewritten)}  # fmt: skip


def ask(recaller: Any, query: str, flags: Mapping[str, int | str]
        ) -> tuple[list[Hit], dict[str, Any]]:  # fmt: skip
    """Evidence hits in rank order, then the places of the files the answer names without
    their code (`also`), and the answer's found / confidence / tokens / ms. A map answer's
    hits are its files' places in file order (a file without places counts as the file
    alone)."""
    started = time.perf_counter()
    res = recaller.recall(query, **flags)
    ms = (time.perf_counter() - started) * 1000
    hits = [Hit(e.path, e.symbol or "", e.start_line, e.end_line, e.kind, e.tokens)
            for e in res.evidence]  # fmt: skip
    for f in res.files if flags.get("format") == "map" else res.also:
        hits += [Hit(f.path, m.name, m.start_line, m.end_line) for m in f.symbols] or [
            Hit(f.path, "", 0, 0)
        ]
    return hits, {"found": bool(res.found), "confidence": float(res.confidence or 0.0),
                  "tokens": int(res.tokens), "ms": ms}  # fmt: skip


# -- the run ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Outcome:
    inst: Instance
    tree: str
    functions: tuple[GoldFunction, ...]
    answers: Mapping[str, Scored]  # per configuration, and "bm25"

    def to_dict(self) -> dict[str, Any]:
        return {"instance_id": self.inst.instance_id, "release": self.inst.release,
                "tree": self.tree, "splits": list(self.inst.splits),
                "gold_files": self.inst.gold_files,
                "gold_functions": [f"{g.path}:{g.name}" + ("" if g.spans else " (not located)")
                                   for g in self.functions],
                **{name: a.to_dict() for name, a in self.answers.items()}}  # fmt: skip


def _bm25_answer(index: FileBM25, inst: Instance) -> Scored:
    started = time.perf_counter()
    files = [p for p, _ in index.rank(inst.problem_statement)]
    ms = (time.perf_counter() - started) * 1000
    rank = file_rank(files, inst.gold_files)
    top5 = any(g in files[:5] for g in inst.gold_files)
    return Scored(tuple(files[:10]), rank, gold_in_top5=top5, ms=ms)


def ask_tree(recaller: Any, bm25: FileBM25, root: Path, tree: str,
             instances: Sequence[Instance]) -> list[Outcome]:  # fmt: skip
    cache: dict[str, dict[str, list[tuple[int, int]]]] = {}

    def defs(path: str) -> dict[str, list[tuple[int, int]]]:
        if path not in cache:
            file = root / path
            cache[path] = definitions(file.read_text("utf-8", "replace")) if file.is_file() else {}
        return cache[path]

    out = []
    for inst in instances:
        gold_fns = inst.gold_functions(defs)
        answers: dict[str, Scored] = {}
        for name, flags in CONFIGS.items():
            hits, answer = ask(recaller, inst.problem_statement, flags)
            answers[name] = score_answer(hits, inst.gold_files, gold_fns, **answer)
        answers["bm25"] = _bm25_answer(bm25, inst)
        out.append(Outcome(inst, tree, tuple(gold_fns), answers))
    return out


def run(
    dataset: Path, trees: Path, work: Path, *, make_engine: Callable[[Path, Path], Any],
    releases: Iterable[str] = (), limit: int | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:  # fmt: skip
    """Switch, index, ask and score every tree's instances; the report dict."""
    plan = groups(trees, load_instances(dataset, releases=releases, limit=limit))
    root, index_dir = work / "tree", work / "index"
    engine = None
    switches: list[dict[str, Any]] = []
    outcomes: list[Outcome] = []
    for tree, instances in plan:
        synced = sync_tree(tree, root)
        engine = engine or make_engine(root, index_dir)
        indexed = index_tree(engine)
        log(f"{tree.name}: {synced.copied} files rewritten, {synced.deleted} deleted; indexed "
            f"in {indexed['seconds']:.1f} s (+{indexed['chunks_added']} chunks); "
            f"asking {len(instances)} instances")  # fmt: skip
        started = time.perf_counter()
        bm25 = FileBM25.from_tree(root)
        bm25_seconds = time.perf_counter() - started
        recaller = engine.recaller()
        recaller.recall("warm up the model and the in-memory view")
        outcomes += ask_tree(recaller, bm25, root, tree.name, instances)
        switches.append({"tree": tree.name, "instances": len(instances), "sync": synced.to_dict(),
                         "index": indexed, "bm25_seconds": round(bm25_seconds, 3)})  # fmt: skip
    return report(outcomes, switches, dataset=dataset.name)


def _blocks(outcomes: Sequence[Outcome]) -> dict[str, dict[str, float]]:
    out = {name: summarise([o.answers[name] for o in outcomes]) for name in CONFIGS}
    out["bm25"] = summarise([o.answers["bm25"] for o in outcomes], ranking_only=True)
    return out


def report(outcomes: Sequence[Outcome], switches: Sequence[Mapping[str, Any]], *,
           dataset: str = "") -> dict[str, Any]:  # fmt: skip
    releases = sorted({o.inst.release for o in outcomes}, key=release_key)
    functions = [g for o in outcomes for g in o.functions]
    return {
        "dataset": dataset,
        "instances_n": len(outcomes),
        "configs": {name: dict(flags) for name, flags in CONFIGS.items()},
        "pooled": _blocks(outcomes),
        "per_release": {r: _blocks([o for o in outcomes if o.inst.release == r])
                        for r in releases},
        "per_split": {s: _blocks(sel) for s in SPLITS
                      if (sel := [o for o in outcomes if s in o.inst.splits])},
        "gold_functions": {"n": len(functions), "located": sum(1 for g in functions if g.spans)},
        "switches": list(switches),
        "instances": [o.to_dict() for o in outcomes],
    }  # fmt: skip


def format_table(report: Mapping[str, Any]) -> str:
    """The report as a plain-text table: pooled, per split, per release; one row per system."""
    head = (f"{'set':<9} {'system':<9} {'n':>4} {'@1':>5} {'@3':>5} {'@5':>5} {'@10':>5} "
            f"{'fn@5':>5} {'fn@10':>5} {'!found':>6} {'tokens':>6} {'t/d':>4} {'p50':>6} "
            f"{'p95':>6} {'AUROC':>5}")  # fmt: skip
    lines = [head]
    sets = [("all", report["pooled"]), *report["per_split"].items(),
            *report["per_release"].items()]  # fmt: skip
    for name, blocks in sets:
        for system, b in blocks.items():
            acc = " ".join(f"{b[f'file_acc@{k}']:>5.1f}" for k in (1, 3, 5, 10))
            row = f"{name:<9} {system:<9} {int(b['n']):>4} {acc}"
            if "function_acc@5" in b:
                row += (f" {b['function_acc@5']:>5.1f} {b['function_acc@10']:>5.1f} "
                        f"{b['found_false_rate']:>6.2f} {b['tokens_mean']:>6.0f} "
                        f"{b['tests_docs_top10']:>4.1f} {b['p50_ms']:>6.0f} {b['p95_ms']:>6.0f} "
                        f"{b['auroc_gold_top5']:>5.2f}")  # fmt: skip
            else:
                row += " " * 31 + f" {b['p50_ms']:>6.1f} {b['p95_ms']:>6.1f}"
            lines.append(row)
    return "\n".join(lines)
