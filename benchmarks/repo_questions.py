"""Recall latency on written questions over an index that is already built.

Usage: python benchmarks/repo_questions.py ROOT --index-dir DIR --questions FILE [--json]
       python benchmarks/repo_questions.py ROOT --index-dir DIR --issues FILE.jsonl [--json]

FILE holds one question per line (`#` lines are comments), e.g.
benchmarks/data/django_questions.txt for a Django source tree; `--issues` takes whole task
descriptions instead, the `problem_statement` of each line of a SWE-bench-format file
(each asked as it is, against whatever tree ROOT holds). In this process, the way
the server does it: the index is opened, one recall of another question warms the engine
(model, views), then every question is asked once with the product's defaults. Reported:
what the index holds (files, chunks, memories, vectors still missing), recall p50 / p95 /
max in milliseconds, how many answers say `found`, the mean tokens per answer, and this
process's peak RSS.
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path)
    ap.add_argument("--index-dir", type=Path, required=True)
    given = ap.add_mutually_exclusive_group(required=True)
    given.add_argument("--questions", type=Path)
    given.add_argument("--issues", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    from memserver.engine import Engine

    if args.issues is not None:
        lines = args.issues.read_text(encoding="utf-8").splitlines()
        questions = [json.loads(line)["problem_statement"] for line in lines if line.strip()]
    else:
        questions = [
            line.strip()
            for line in args.questions.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
    engine = Engine(args.root, args.index_dir)
    store = engine.open_store()
    status = engine.status(store)
    recaller = engine.recaller(store=store)
    started = time.perf_counter()
    recaller.recall("where is the entry point")  # not one of the questions: none is asked twice
    warm_up = time.perf_counter() - started
    times, found, tokens = [], 0, []
    for q in questions:
        t = time.perf_counter()
        result = recaller.recall(q)
        times.append((time.perf_counter() - t) * 1000)
        found += bool(result.found)
        tokens.append(result.tokens)
    times.sort()
    out = {
        "files": status.files,
        "chunks": status.chunks,
        "memories": status.memories,
        "unembedded_chunks": status.unembedded_chunks,
        "embedder": status.embedder,
        "questions": len(questions),
        "first_recall_s": round(warm_up, 3),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(times[min(len(times) - 1, round(0.95 * (len(times) - 1)))], 1),
        "max_ms": round(times[-1], 1),
        "found": found,
        "mean_tokens": round(statistics.mean(tokens)),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(out, indent=1 if args.json else None))


if __name__ == "__main__":
    main()
