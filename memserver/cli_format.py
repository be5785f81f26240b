"""Human-readable output of the CLI (rich), kept apart from the command wiring.

Everything shown here that came from the indexed tree (file text, paths, symbols, git
branch names) is untrusted: an ESC or C1 byte in it would reach the terminal and could
clear it, retitle the window or rewrite what was printed before. So it goes through
`visible()` (controls shown as `\\x1b`), and through `safe()` where it is interpolated into
rich markup (which would otherwise read `[link=…]` in a file name as markup).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from memserver.core import render
from memserver.core.types import IndexReport, RecallResult

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

visible = render.visible  # control characters a terminal would act on, shown as \\xNN


def safe(text: object) -> str:
    """`visible()` for a value interpolated into rich markup."""
    return escape(visible(str(text)))


class RichProgress:
    """A progress bar per phase on stderr (only used when stderr is a terminal)."""

    def __init__(self) -> None:
        self._bar: Progress | None = None
        self._task: Any = None

    def start(self, phase: str, total: int) -> None:
        self.finish()
        self._bar = Progress(
            TextColumn("{task.description:>10}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=err,
            transient=True,
        )
        self._bar.start()
        self._task = self._bar.add_task(phase, total=total)

    def advance(self, n: int = 1) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, n)

    def finish(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _reasons(skipped: dict[str, str]) -> Counter[str]:
    return Counter(reason.split(":")[0].split(" (")[0] for reason in skipped.values())


def masked_summary(masked: dict[str, dict[str, int]]) -> str:
    """Kinds and counts, never values: `3 values in 2 files (aws-access-key 1, password 2)`."""
    by_kind: Counter[str] = Counter()
    for counts in masked.values():
        by_kind.update(counts)
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(by_kind.items()))
    files = len(masked)
    return f"{sum(by_kind.values())} values in {files} file{'s' * (files != 1)} ({kinds})"


def print_index_report(r: IndexReport) -> None:
    out.print(f"[bold]indexed[/] {safe(r.root)} → {safe(r.index_dir)}")
    out.print(
        f"  files: {r.files_indexed} indexed, {r.files_unchanged} unchanged, "
        f"{r.files_removed} removed, {r.files_skipped} skipped"
    )
    out.print(
        f"  chunks: +{r.chunks_added} −{r.chunks_removed} = {r.chunks_total} current, "
        f"{r.tokens:,} tokens in new/changed files"
    )
    emb = (
        f"{r.chunks_embedded} chunks and {r.memories_embedded} memories embedded with "
        f"{r.embedder} ({r.texts_embedded} texts through the model, "
        f"{r.chunks_reused + r.memories_reused} vectors reused)"
        if r.embedder != "none"
        else "BM25 only"
    )
    out.print(
        f"  vectors: {emb}"
        + (
            f", {r.chunks_unembedded} still pending (run `memserver index` again to finish)"
            if r.chunks_unembedded
            else ""
        )
    )
    if r.chunks_embedded_again:
        out.print(
            f"  {r.chunks_embedded_again} chunks embedded again: what the model reads of a "
            "chunk changed since they were embedded"
        )
    if r.vectors_pending:
        out.print(f"  [yellow]vectors pending:[/] {safe(r.vectors_pending)}")
    out.print(
        f"  time: {r.seconds:.1f}s (searchable by keyword after {r.seconds_to_search:.1f}s, "
        f"embedding {r.seconds_embedding:.1f}s)"
    )
    if r.masked:
        paths = sorted(r.masked)
        shown = ", ".join(paths[:5]) + (f" … (+{len(paths) - 5})" if len(paths) > 5 else "")
        out.print(f"  secrets masked: {masked_summary(r.masked)}: {shown}", markup=False)
    if r.recut:
        out.print("  every file cut again: the chunker, its [chunking] settings or the code "
                  "graph's extraction changed since the index was built", markup=False)  # fmt: skip
    if r.repaired:
        out.print(f"  [yellow]repaired {r.repaired} entries (left by an interrupted run, "
                  "or missing from an index an older memserver wrote)[/]")  # fmt: skip
    if r.keyword_rewritten:
        kind = "indexes" if len(r.keyword_rewritten) > 1 else "index"
        out.print(f"  {' and '.join(r.keyword_rewritten)} {kind} written again: half of the "
                  "documents were old versions of changed or removed files")  # fmt: skip
    if r.skipped:
        summary = ", ".join(f"{n} {safe(why)}" for why, n in _reasons(r.skipped).most_common())
        out.print(f"  skipped: {summary}  (see --dry-run or --json for each path)")
    for path, why in sorted(r.parse_fallbacks.items()):
        out.print(f"  [yellow]line windows for {safe(path)}[/]: {safe(why)}")


def dry_run_summary(engine: Any) -> dict[str, Any]:
    walked = engine.walk()
    by_lang: Counter[str] = Counter(f.language for f in walked.files)
    return {
        "root": str(engine.root),
        "index_dir": str(engine.index_dir),
        "files": [{"path": f.path, "language": f.language, "bytes": f.size} for f in walked.files],
        "skipped": {s.path: s.reason for s in walked.skipped},
        "totals": {
            "files": len(walked.files),
            "bytes": sum(f.size for f in walked.files),
            "skipped": len(walked.skipped),
            "by_language": dict(by_lang.most_common()),
            "skipped_by_reason": dict(_reasons({s.path: s.reason for s in walked.skipped})),
        },
    }


def print_dry_run(summary: dict[str, Any]) -> None:
    for f in summary["files"]:
        out.print(f"  index  {safe(f['path'])}  [dim]({f['language']}, {f['bytes']:,} B)[/]")
    for path, why in sorted(summary["skipped"].items()):
        out.print(f"  [dim]skip   {safe(path)}  — {safe(why)}[/]")
    t = summary["totals"]
    langs = ", ".join(f"{n} {safe(lang)}" for lang, n in t["by_language"].items())
    out.print(f"[bold]would index {t['files']} files ({t['bytes']:,} bytes)[/]: {langs}")
    out.print(
        f"[bold]would skip {t['skipped']}[/]: "
        + ", ".join(f"{n} {safe(why)}" for why, n in t["skipped_by_reason"].items())
    )


def print_recall(result: RecallResult, explain: bool = False) -> None:
    """The answer as an agent reads it (`core.render`), within the budget, with control
    characters of the files shown, never sent to the terminal."""
    text = visible(render.recall_text(result, explain))
    out.print(text, markup=False, highlight=False, soft_wrap=True)


def print_plain(text: str) -> None:
    """An answer as an agent reads it (outline, symbol, …), control characters shown."""
    out.print(visible(text), markup=False, highlight=False, soft_wrap=True)


def print_status(info: dict[str, Any]) -> None:
    table = Table(show_header=False, box=None)
    git = info["git"]
    rows = [
        ("root", info["root"]),
        ("index", info["index_dir"]),
        ("files", str(info["files"])),
        ("chunks", str(info["chunks"])),
        ("memories", f"{info.get('memories', 0)} active, {info.get('stale_memories', 0)} stale"),
        ("notes", f"{info.get('notes', 0)} notes, {info.get('turns', 0)} conversation turns"),
        ("reranker", info.get("reranker", "")),
        ("embedder", f"{info['embedder']} (dim {info['dim']})"),
        ("indexed at", info["indexed_at"] or "never finished"),
        (
            "git",
            f"indexed {git['indexed_branch'] or '-'}@{git['indexed_commit'][:10] or '-'}, "
            f"tree {git['head_branch'] or '-'}@{git['head_commit'][:10] or '-'}",
        ),
    ]
    if info["unembedded_chunks"]:
        rows.append(("pending", f"{info['unembedded_chunks']} chunks without vectors"))
    if info.get("masked"):
        paths = sorted(info["masked"])
        shown = ", ".join(paths[:10]) + (f" … (+{len(paths) - 10})" if len(paths) > 10 else "")
        rows.append(("secrets", f"{masked_summary(info['masked'])} masked: {shown}"))
    for k, v in rows:
        table.add_row(k, safe(v))
    out.print(table)
    if info["up_to_date"]:
        out.print("[green]the index matches the working tree[/]")
        return
    for key, label in (
        ("stale_files", "changed"),
        ("new_files", "new"),
        ("removed_files", "deleted"),
    ):
        paths = info[key]
        if paths:
            shown = ", ".join(safe(p) for p in paths[:10])
            shown += f" … (+{len(paths) - 10})" if len(paths) > 10 else ""
            out.print(f"[yellow]{len(paths)} {label} since indexing[/]: {shown}")
    if info["interrupted"]:
        out.print("[yellow]the last index run was interrupted[/]")
    if info.get("rechunk"):
        out.print("[yellow]the index was cut by another chunker version or [chunking] settings[/]")
    out.print("run `memserver index` to bring it up to date")


def print_eval(report: dict[str, Any]) -> None:
    cols = ["recall@1", "recall@5", "recall@10", "mrr@10", "abstain", "false_abstain",
            "p50_ms", "p95_ms", "tokens_mean"]  # fmt: skip
    table = Table("run", "package", *cols)
    runs = [("full", report)] + [(f"-{k}", v) for k, v in report.get("ablations", {}).items()]
    for name, r in runs:
        for pkg, row in [*r["packages"].items(), ("macro", r["macro"])]:
            table.add_row(safe(name), safe(pkg),
                          *(f"{row[c]:.3f}" if c in row else "" for c in cols))  # fmt: skip
    out.print(table)
    if "calibration" in report:
        out.print_json(data=report["calibration"])
