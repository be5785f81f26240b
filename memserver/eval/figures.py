"""What each eval's report shows, as data: `Page`s of figure specs built from report dicts.

No drawing here (that is `eval.report`, the sole matplotlib importer). Baselines come from
the bench READMEs through `data/baselines.json` (`load_baselines`) and are passed in, so the
figures never carry numbers of their own. Where an eval's JSON lacks what a figure needs
(per-query confidences or latencies), the page says so in a note instead of guessing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from memserver.eval.report import (
    Bars,
    Figure,
    Histogram,
    Lines,
    Page,
    Roc,
    Stacked,
    Table,
    Written,
    write_report,
)

FILE_K = (1, 3, 5, 10)


def load_baselines() -> dict[str, Any]:
    """The bench READMEs' baseline numbers, per eval (`code`, `locomo`, `swebench`)."""
    text = resources.files("memserver.eval").joinpath("data/baselines.json").read_text("utf-8")
    return dict(json.loads(text))


def operating_point(rows: Sequence[tuple[bool, bool]]) -> tuple[float, float]:
    """(FPR, TPR) of a yes/no decision: rows of (is positive, decided yes)."""
    pos = [d for p, d in rows if p]
    neg = [d for p, d in rows if not p]
    return (sum(neg) / len(neg) if neg else 0.0, sum(pos) / len(pos) if pos else 0.0)


# -- swebench -------------------------------------------------------------------------------

_SWE_ROWS = (("file Acc@1", "file_acc@1"), ("@3", "file_acc@3"), ("@5", "file_acc@5"),
             ("@10", "file_acc@10"), ("fn Acc@5", "function_acc@5"),
             ("fn Acc@10", "function_acc@10"), ("found false", "found_false_rate"),
             ("tokens", "tokens_mean"), ("tests/docs top 10", "tests_docs_top10"),
             ("test #1", "test_at_1"), ("p50 ms", "p50_ms"), ("p95 ms", "p95_ms"),
             ("AUROC", "auroc_gold_top5"))  # fmt: skip


def _swe_table(title: str, blocks: Mapping[str, Mapping[str, Mapping[str, float]]]) -> Table:
    rows = [[group, name, int(b.get("n", 0)), *(b.get(key) for _, key in _SWE_ROWS)]
            for group, by_config in blocks.items() for name, b in by_config.items()]  # fmt: skip
    return Table(title, ["set", "system", "n", *(h for h, _ in _SWE_ROWS)], rows)


def swebench(report: Mapping[str, Any], baselines: Mapping[str, Any]) -> Page:
    pooled, configs = report["pooled"], [c for c in report["pooled"] if c != "bm25"]
    label = {c: f"memserver {c}" for c in configs} | {"bm25": "BM25 whole files (this run)"}
    series = {label[c]: [(k, pooled[c][f"file_acc@{k}"]) for k in FILE_K] for c in pooled}
    published = baselines.get("published", {})
    dashed = set()
    for name, m in published.get("methods", {}).items():
        points = [(k, m[f"file_acc@{k}"]) for k in FILE_K if f"file_acc@{k}" in m]
        series[f"{name} (Lite, other set)"] = points
        dashed.add(f"{name} (Lite, other set)")
    dev = baselines.get("dev_bm25", {}).get("all", {})
    if dev and dev.get("n") == report["instances_n"]:
        series["BM25 (bench README)"] = [(k, dev[f"file_acc@{k}"]) for k in FILE_K]
        dashed.add("BM25 (bench README)")
    n = report["instances_n"]
    figures: list[Figure] = [
        Lines("file_acc", f"File Acc@k, pooled (n = {n})",
              "File Acc@k (all gold files in the first k distinct files) of memserver and of "
              "whole-file BM25 in the same run; dashed: published numbers on another set.",
              "k (distinct files)", "file Acc@k (%)", series, frozenset(dashed)),
    ]  # fmt: skip
    groups = [*report["per_release"], "pooled"]
    blocks = [*report["per_release"].values(), pooled]
    figures.append(Bars(
        "acc5_per_release", "File Acc@5 per release", "File Acc@5 per release and pooled, "
        "memserver's two configurations beside whole-file BM25 from the same run.",
        "file Acc@5 (%)", groups, {label[c]: [b[c]["file_acc@5"] for b in blocks] for c in pooled},
    ))  # fmt: skip
    fn_series: dict[str, list[float | None]] = {
        label[c]: [pooled[c]["function_acc@5"], pooled[c]["function_acc@10"]] for c in configs
    }
    for name, m in published.get("methods", {}).items():
        if "function_acc@10" in m or "function_acc@5" in m:
            fn_series[name] = [m.get("function_acc@5"), m.get("function_acc@10")]
    figures.append(Bars(
        "function_acc", "Function Acc@k, pooled", "Function Acc@5/10 (all gold functions among "
        "the first k distinct evidence functions); hatched: published, on SWE-bench Lite.",
        "function Acc@k (%)", ["Acc@5", "Acc@10"], fn_series,
        frozenset(fn_series) - {label[c] for c in configs},
    ))  # fmt: skip
    figures += _swe_gate_and_latency(report, configs)
    figures.append(_swe_switches(report["switches"]))
    figures.append(Bars(
        "tests_docs", "Tests and docs among the top-10 files", "Mean number of test or doc "
        "files among each answer's first 10 files, per release and pooled.",
        "files of 10", groups, {label[c]: [b[c]["tests_docs_top10"] for b in blocks]
                                for c in configs},
    ))  # fmt: skip
    tables = (
        _swe_table("Pooled", {"all": pooled}),
        _swe_table("Per split", report["per_split"]),
        _swe_table("Per release", report["per_release"]),
    )
    return Page(f"memserver eval swebench: {report.get('dataset', '')}", tuple(figures), tables)


def _swe_gate_and_latency(report: Mapping[str, Any], configs: Sequence[str]) -> list[Figure]:
    inst = report["instances"]
    d = [i["defaults"] for i in inst]
    return [
        Roc("gate_roc", "confidence vs a gold file in the top 5 (defaults)",
            "ROC of recall's confidence for 'a gold file is among the first 5 files', product "
            "defaults; the dot is `found` (the gate's threshold).",
            [a["confidence"] for a in d if a["gold_in_top5"]],
            [a["confidence"] for a in d if not a["gold_in_top5"]],
            operating_point([(a["gold_in_top5"], a["found"]) for a in d]), "found = true"),
        Histogram("latency", "Recall latency per issue",
                  "Recall latency over the whole issue text per configuration, p50 (solid) and "
                  "p95 (dashed) marked.", "ms",
                  {c: [i[c]["ms"] for i in inst] for c in configs}),
    ]  # fmt: skip


def _swe_switches(switches: Sequence[Mapping[str, Any]]) -> Stacked:
    idx = [s["index"] for s in switches]
    return Stacked(
        "index_time", "Branch switches: sync and incremental index time",
        "Seconds per switch of the working tree: file sync, until keyword search works, "
        "embedding, the rest of indexing, and building the BM25 baseline; label: chunks added.",
        "seconds", [s["tree"] for s in switches],
        {"sync": [s["sync"]["seconds"] for s in switches],
         "to keyword search": [i["seconds_to_search"] for i in idx],
         "embedding": [i["seconds_embedding"] for i in idx],
         "rest of index": [max(0.0, i["seconds"] - i["seconds_to_search"]
                               - i["seconds_embedding"]) for i in idx],
         "BM25 baseline": [s["bm25_seconds"] for s in switches]},
        [f"+{i['chunks_added']}" for i in idx],
    )  # fmt: skip


# -- code -----------------------------------------------------------------------------------


def code_queries(outcomes: Mapping[str, Sequence[Any]], weights: Sequence[float], bias: float
                 ) -> list[dict[str, Any]]:  # fmt: skip
    """Per query of `eval.code`'s outcomes what its report draws. `code.Outcome` keeps no
    confidence, so it is the gate's logistic model (`weights`, `bias`) over the outcome's
    signals, as `eval.calibrate` computes it, unless the outcome carries one."""
    from memserver.eval.calibrate import probabilities

    rows = []
    for package, outs in outcomes.items():
        model = list(probabilities(list(outs), weights, bias)) if outs else []
        for o, p in zip(outs, model, strict=True):
            confidence = getattr(o, "confidence", None)
            rows.append({"qid": o.qid, "package": package, "answerable": o.answerable,
                         "found": o.found, "rank": o.rank, "ms": round(o.ms, 2),
                         "tokens": o.tokens,
                         "confidence": float(p if confidence is None else confidence)})  # fmt: skip
    return rows


def code(report: Mapping[str, Any], queries: Sequence[Mapping[str, Any]],
         baselines: Mapping[str, Any]) -> Page:  # fmt: skip
    """`queries`: per query `package`, `answerable`, `found`, `confidence`, `ms`."""
    pkgs, ks = report["packages"], (1, 5, 10)
    series = {p: [(k, b[f"recall@{k}"]) for k in ks] for p, b in pkgs.items()}
    series["macro"] = [(k, report["macro"][f"recall@{k}"]) for k in ks]
    methods = baselines.get("methods", {})
    for name, m in methods.items():
        series[name] = [(k, m[f"recall@{k}"]) for k in ks]
    groups = [*pkgs, "macro"]
    mrr: dict[str, list[float | None]] = {
        "memserver": [*(b["mrr@10"] for b in pkgs.values()), report["macro"]["mrr@10"]]
    }
    for name, abl in report.get("ablations", {}).items():
        mrr[f"memserver {name}"] = [*(abl["packages"][p]["mrr@10"] for p in pkgs),
                                    abl["macro"]["mrr@10"]]  # fmt: skip
    for name, m in methods.items():
        mrr[name] = [*(None for _ in pkgs), m["mrr@10"]]
    figures: list[Figure] = [
        Lines("recall_at_k", "Recall@k per package", "Recall@k per package and macro; dashed: "
              "the bench README's anchor baselines (macro).", "k", "recall@k", series,
              frozenset(methods)),
        Bars("mrr", "MRR@10", "MRR@10 per package and macro, with ablations and the README's "
             "baselines (macro only, hatched); an abstention counts as a miss.", "MRR@10",
             groups, mrr, frozenset(methods)),
    ]  # fmt: skip
    if queries and all(q.get("confidence") is not None for q in queries):
        figures.append(Roc(
            "abstention_roc", "Abstention: answerable vs unanswerable",
            "ROC of the gate's confidence for 'the query is answerable'; the dot is `found`.",
            [q["confidence"] for q in queries if q["answerable"]],
            [q["confidence"] for q in queries if not q["answerable"]],
            operating_point([(q["answerable"], q["found"]) for q in queries]), "found = true",
        ))  # fmt: skip
    figures.append(Histogram(
        "latency", "Recall latency per package", "Recall latency per query, p50 (solid) and "
        "p95 (dashed) marked.", "ms", {p: [q["ms"] for q in queries if q["package"] == p]
                                       for p in pkgs},
    ))  # fmt: skip
    figures.append(_code_index_time(pkgs))
    keys = ("recall@1", "recall@5", "recall@10", "mrr@10", "abstain", "false_abstain", "p50_ms",
            "p95_ms", "tokens_mean")  # fmt: skip
    rows = [[p, *(b.get(k) for k in keys)] for p, b in [*pkgs.items(), ("macro", report["macro"])]]
    rows += [[name, *(m.get(k) for k in keys)] for name, m in methods.items()]
    return Page("memserver eval code", tuple(figures), (Table("Results", ["", *keys], rows),))


def _code_index_time(pkgs: Mapping[str, Mapping[str, Any]]) -> Stacked:
    """Index seconds per package, by phase when the report has them (older ones: total)."""
    labels = [f"{b.get('chunks', '')} chunks" for b in pkgs.values()]
    total = [float(b.get("index_seconds", 0.0)) for b in pkgs.values()]
    if not all("index_seconds_embedding" in b for b in pkgs.values()):
        return Stacked("index_time", "Index time per package", "Seconds to index each "
                       "package (this report has the total only, not its phases).", "seconds",
                       list(pkgs), {"index": total}, labels)  # fmt: skip
    search = [float(b["index_seconds_to_search"]) for b in pkgs.values()]
    embed = [float(b["index_seconds_embedding"]) for b in pkgs.values()]
    rest = [max(0.0, t - s - e) for t, s, e in zip(total, search, embed, strict=True)]
    return Stacked(
        "index_time", "Index time per package, by phase", "Seconds to index each package: "
        "until keyword search works (walk, chunk, store, BM25), embedding, and the rest.",
        "seconds", list(pkgs), {"to keyword search": search, "embedding": embed, "rest": rest},
        labels,
    )  # fmt: skip


# -- locomo ---------------------------------------------------------------------------------


def locomo(report: Mapping[str, Any], baselines: Mapping[str, Any]) -> Page:
    ks, cats = (5, 10, 20), report["per_category"]
    methods = baselines.get("methods", {})
    series = {f"category {c}": [(k, b[f"recall@{k}"]) for k in ks] for c, b in cats.items()}
    series["pooled 1-4"] = [(k, report["pooled"][f"recall@{k}"]) for k in ks]
    if "consolidated" in report:
        series["pooled, consolidated"] = [(k, report["consolidated"]["pooled"][f"recall@{k}"])
                                          for k in ks]  # fmt: skip
    for name, m in methods.items():
        series[f"{name} (pooled)"] = [(k, m[f"recall@{k}"]) for k in ks]
    groups = [*(f"cat {c}" for c in cats), "pooled"]
    r10: dict[str, list[float | None]] = {
        "memserver": [*(b["recall@10"] for b in cats.values()), report["pooled"]["recall@10"]]
    }
    for name, m in methods.items():
        per = m.get("category_recall@10", {})
        r10[name] = [*(per.get(c) for c in cats), m["recall@10"]]
    cat5 = report["cat5"]
    gate: dict[str, list[float | None]] = {
        "memserver": [cat5["abstain"], cat5["false_abstain"], cat5["auroc"]]
    }
    for name, m in methods.items():
        gate[name] = [None, None, m.get("auroc")]
    figures: list[Figure] = [
        Lines("recall_at_k", "Evidence R@k per category", "Evidence recall R@k per question "
              "category and pooled over 1-4; dashed: the README's baselines (pooled).", "k",
              "R@k", series, frozenset(f"{n} (pooled)" for n in methods)),
        Bars("recall10", "R@10 per category", "R@10 per category and pooled, memserver beside "
             "the README's baselines (hatched).", "R@10", groups, r10, frozenset(methods)),
        Bars("abstention", "Category 5: abstention", "Abstention on adversarial questions, "
             "false abstention on 1-4, and the AUROC of confidence (baselines: AUROC only).",
             "rate", ["abstain (cat 5)", "false abstain (1-4)", "AUROC"], gate,
             frozenset(methods)),
    ]  # fmt: skip
    asked = report.get("questions")
    if asked:
        figures += _locomo_gate_and_latency(asked)
        notes: tuple[str, ...] = ()
    else:  # a report written before the eval kept its questions
        figures.append(Bars(
            "latency", "Recall latency", "Recall p50 and p95 over all questions (this report "
            "has no per-question latencies, so no histogram).", "ms", ["p50", "p95"],
            {"memserver": [report["recall_p50_ms"], report["recall_p95_ms"]]},
        ))  # fmt: skip
        notes = ("Not drawn: the abstention ROC and a latency histogram need per-question "
                 "confidences and latencies, which this report does not hold.",)  # fmt: skip
    keys = ("recall@5", "recall@10", "recall@20", "all@10")
    rows = [["memserver", *(report["pooled"][k] for k in keys), cat5["auroc"]]]
    rows += [[n, *(m[k] for k in keys), m.get("auroc")] for n, m in methods.items()]
    table = Table("Pooled over categories 1-4", ["", *keys, "cat-5 AUROC"], rows)
    return Page("memserver eval locomo", tuple(figures), (table,), notes)


def _locomo_gate_and_latency(asked: Sequence[Mapping[str, Any]]) -> list[Figure]:
    answerable = [q for q in asked if int(q["category"]) != 5]
    adversarial = [q for q in asked if int(q["category"]) == 5]
    return [
        Roc("abstention_roc", "Abstention: categories 1-4 against adversarial 5",
            "ROC of recall's confidence for 'the conversation holds the answer' (1-4 positive, "
            "adversarial category 5 negative); the dot is `found`.",
            [q["confidence"] for q in answerable], [q["confidence"] for q in adversarial],
            operating_point([(int(q["category"]) != 5, bool(q["found"])) for q in asked]),
            "found = true"),
        Histogram("latency", "Recall latency per question", "Recall latency per question, "
                  "answerable (1-4) and adversarial (5), p50 (solid) and p95 (dashed) marked.",
                  "ms", {"categories 1-4": [q["ms"] for q in answerable],
                         "category 5": [q["ms"] for q in adversarial]}),
    ]  # fmt: skip


# -- attribution ----------------------------------------------------------------------------


def attribution(report: Mapping[str, Any]) -> Page:
    held = report["leave_one_package_out"]
    groups = [*held, "mean"]
    mean = report["leave_one_package_out_mean"]
    styles = report.get("by_style", {})
    shipped = report.get("shipped_defaults", {})
    figures: list[Figure] = [
        Bars("held_out", "Citation precision and recall, held out", "Leave-one-package-out "
             "citation precision and recall of `attribute` per package and their mean.",
             "rate", groups, {k: [*(h[k] for h in held.values()), mean[k]]
                              for k in ("precision", "recall")}),
        Bars("by_style", "Per answer style (in sample)", "In-sample citation precision and "
             "recall of single-claim answers per answer style.", "rate", list(styles),
             {k: [s[k] for s in styles.values()] for k in ("precision", "recall")}),
    ]  # fmt: skip
    rows = [[name, b.get("precision"), b.get("recall"), b.get("cited_mean"), b.get("loaded_mean")]
            for name, b in [*held.items(), ("held-out mean", mean),
                            ("in sample", report.get("in_sample", {})),
                            ("shipped defaults", shipped)]]  # fmt: skip
    table = Table("Citation quality", ["", "precision", "recall", "cited", "loaded"], rows)
    notes = (f"Fitted: weights {report.get('weights')}, bias {report.get('bias')}, "
             f"threshold {report.get('threshold')}.",)  # fmt: skip
    return Page("memserver eval attribution", tuple(figures), (table,), notes)


# -- scale ----------------------------------------------------------------------------------


def scale(rows: Sequence[Mapping[str, Any]]) -> Page:
    """`rows`: the JSON list `benchmarks/scale.py` prints, one row per corpus size."""
    rows = sorted(rows, key=lambda r: r["tokens"])

    def curve(get: Any) -> list[tuple[float, float]]:
        return [(r["tokens"], get(r)) for r in rows]

    figures: list[Figure] = [
        Lines("latency_growth", "Recall latency against corpus size", "Recall p50 and p95 "
              "(warm server) against the corpus's tokens, log-scaled.", "tokens", "ms",
              {"p50": curve(lambda r: r["server"]["recall_p50_ms"]),
               "p95": curve(lambda r: r["server"]["recall_p95_ms"])}, log_x=True, log_y=True),
        Lines("rss_growth", "Memory against corpus size", "Peak RSS of indexing and RSS of "
              "the warm server against the corpus's tokens, log-scaled.", "tokens", "MB",
              {"index peak RSS": curve(lambda r: r["index"]["peak_rss_mb"]),
               "server RSS": curve(lambda r: r["server"]["server_rss_mb"])},
              log_x=True, log_y=True),
        Lines("disk_growth", "Index size against corpus size", "The index's size on disk "
              "against the corpus's tokens, log-scaled.", "tokens", "MB",
              {"disk": curve(lambda r: r["disk_mb"])}, log_x=True, log_y=True),
        Lines("index_growth", "Index time against corpus size", "Wall seconds of a full "
              "`memserver index` and of its embedding phase against tokens, log-scaled.",
              "tokens", "seconds", {"wall": curve(lambda r: r["index"]["wall_s"]),
                                    "embedding": curve(lambda r: r["index"]["embed_s"])},
              log_x=True, log_y=True),
    ]  # fmt: skip
    table = Table("Rows", ["tokens", "files", "chunks", "index s", "peak RSS MB", "disk MB",
                           "server RSS MB", "p50 ms", "p95 ms"],
                  [[r["tokens"], r["corpus"]["files"], r["index"]["chunks"], r["index"]["wall_s"],
                    r["index"]["peak_rss_mb"], r["disk_mb"], r["server"]["server_rss_mb"],
                    r["server"]["recall_p50_ms"], r["server"]["recall_p95_ms"]]
                   for r in rows])  # fmt: skip
    return Page("memserver scale benchmark", tuple(figures), (table,))


def scale_report(rows: Sequence[Mapping[str, Any]], out: Path, command: str) -> Written:
    """The scale benchmark's report folder, for `benchmarks/scale.py --report DIR`."""
    return write_report(out, scale(rows), command=command, data=list(rows))
