"""What the code graph's tags add to the keyword phase: tag extraction against chunking.

Usage: python benchmarks/graph_speed.py TREE [TREE ...] [--repeat 3] [--index] [--json]

For each tree, the files `memserver index` would take (indexers.walk) are read once, then
timed in-process (CPU seconds of this process, best of --repeat runs each: the machine's
other work moves wall-clock times around far more):

- chunk:          FileChunker.chunk on every file (the chunking half of the keyword phase)
- chunk+tags:     FileChunker.chunk, then indexers.tagfile.tag_file (tags with their own
                  parse, as the indexer makes them in a worker process or, on small runs,
                  in its own)
- tags (reparse): extract_tags on every file with its own parse, for comparison
- parse:          the tree-sitter parse alone

Each run gets a fresh token counter (the one `memserver.tokens.default_counter()` returns
memoises counts, which would flatter whichever run comes second). The overhead is
(chunk+tags - chunk) / chunk. With --index, the keyword phase itself is measured too:
`memserver index --embedder none` into a temporary index dir (the tree is only read), whose
report gives `seconds_to_search` (walk, chunk, LanceDB rows, tantivy, manifest; wall-clock,
best of --repeat cold runs); the graph's share is then (chunk+tags - chunk) /
seconds_to_search. Prints a table, or JSON; with --report DIR also a report folder (the
seconds per tree as a figure, the table beside it; needs matplotlib).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from indexers.chunking import CODE_LANGUAGES, FileChunker
from indexers.tagfile import tag_file
from indexers.treesitter.tags import extract_tags, parse
from indexers.walk import walk
from memserver.core.types import ChunkOptions
from memserver.tokens import Cl100kCounter


def files_of(tree: Path) -> list[tuple[str, str, str]]:
    """(path, text, language) of every file the walk keeps."""
    out = []
    for source in walk(tree).files:
        text = Path(source.abs_path).read_text(encoding="utf-8", errors="replace")
        out.append((source.path, text, source.language))
    return out


def best(repeat: int, run: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        started = time.process_time()
        run()
        times.append(time.process_time() - started)
    return min(times)


def keyword_phase(tree: Path) -> float:
    """`seconds_to_search` of a cold `memserver index --embedder none` of the tree."""
    with tempfile.TemporaryDirectory() as index_dir:
        cmd = [sys.executable, "-m", "memserver", "index", str(tree), "--index-dir",
               index_dir, "--embedder", "none", "--json"]  # fmt: skip
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    report = json.loads(out[out.index("{") : out.rindex("}") + 1])
    return float(report["seconds_to_search"])


def measure(tree: Path, repeat: int, index: bool) -> dict[str, Any]:
    files = files_of(tree)
    code = [(p, t, lang) for p, t, lang in files if lang in CODE_LANGUAGES]
    options = ChunkOptions()

    def chunk_all() -> None:
        chunker = FileChunker(options, Cl100kCounter())
        for path, text, language in files:
            chunker.chunk(path, text, language)

    def chunk_and_tag_all() -> None:
        chunker = FileChunker(options, Cl100kCounter())
        for path, text, language in files:
            chunker.chunk(path, text, language)
            tag_file(path, text, language, options.max_parse_bytes)

    def tags_all() -> None:
        for path, text, language in code:
            extract_tags(path, text, language)

    def parse_all() -> None:
        for _path, text, language in code:
            parse(text, language)

    tags_all()  # compile the queries and load the grammars outside the timings
    chunk_all()
    chunk_s = best(repeat, chunk_all)
    both_s = best(repeat, chunk_and_tag_all)
    tags_s = best(repeat, tags_all)
    parse_s = best(repeat, parse_all)
    counts = [extract_tags(p, t, lang) for p, t, lang in code]
    phase = min(keyword_phase(tree) for _ in range(repeat)) if index else 0.0
    return {
        "tree": tree.name,
        "files": len(files),
        "code_files": len(code),
        "bytes": sum(len(t.encode("utf-8", "replace")) for _p, t, _l in files),
        "definitions": sum(len(t.definitions) for t in counts),
        "references": sum(len(t.references) for t in counts),
        "chunk_s": round(chunk_s, 3),
        "chunk_and_tags_s": round(both_s, 3),
        "tags_reparse_s": round(tags_s, 3),
        "parse_s": round(parse_s, 3),
        "overhead": round((both_s - chunk_s) / chunk_s, 4) if chunk_s else 0.0,
        "keyword_phase_s": round(phase, 3),
        "share_of_keyword_phase": round((both_s - chunk_s) / phase, 4) if phase else None,
    }


def save_report(results: list[dict[str, Any]], out: Path) -> None:
    from memserver.eval.report import Bars, Page, Table, write_report

    trees = [r["tree"] for r in results]
    timed = {"chunk": "chunk_s", "chunk+tags": "chunk_and_tags_s",
             "tags (own parse)": "tags_reparse_s", "parse": "parse_s"}  # fmt: skip
    series: dict[str, list[float | None]] = {k: [r[v] for r in results] for k, v in timed.items()}
    if any(r["keyword_phase_s"] for r in results):
        series["keyword phase (index)"] = [r["keyword_phase_s"] or None for r in results]
    figure = Bars("seconds", "Tags against chunking, per tree", "CPU seconds (best of the "
                  "runs) to chunk every file, to chunk and tag it from one parse, to tag it "
                  "with its own parse and to parse alone; with --index, the wall seconds of "
                  "the keyword phase of `memserver index`.", "seconds", trees, series)  # fmt: skip
    keys = ["files", "definitions", "references", *timed.values(), "overhead",
            "keyword_phase_s", "share_of_keyword_phase"]  # fmt: skip
    table = Table("Per tree", ["tree", *keys], [[r["tree"], *(r[k] for k in keys)]
                                                for r in results])  # fmt: skip
    command = " ".join(["python", *sys.argv])
    page = Page("memserver graph speed benchmark", (figure,), (table,))
    written = write_report(out, page, command=command, data=results)
    print(f"report: {written.index}", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trees", nargs="+", type=Path, help="source trees (e.g. the DEV corpora)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (best is kept)")
    parser.add_argument(
        "--index", action="store_true", help="also time the keyword phase of `memserver index`"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--report", type=Path, help="also write a report folder here")
    args = parser.parse_args(argv)
    results = [measure(tree, max(1, args.repeat), args.index) for tree in args.trees]
    if args.report:
        save_report(results, args.report)
    if args.json:
        print(json.dumps(results, indent=2))
        return 0
    print(
        f"{'tree':<12}{'files':>6}{'defs':>7}{'refs':>8}{'chunk s':>9}{'chunk+tags s':>14}"
        f"{'tags(own parse) s':>19}{'parse s':>9}{'vs chunk':>10}{'keyword s':>11}{'vs kw':>8}"
    )
    for r in results:
        share = r["share_of_keyword_phase"]
        print(
            f"{r['tree']:<12}{r['files']:>6}{r['definitions']:>7}{r['references']:>8}"
            f"{r['chunk_s']:>9.3f}{r['chunk_and_tags_s']:>14.3f}{r['tags_reparse_s']:>19.3f}"
            f"{r['parse_s']:>9.3f}{r['overhead']:>10.1%}{r['keyword_phase_s']:>11.3f}"
            f"{(f'{share:.1%}' if share is not None else '-'):>8}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
