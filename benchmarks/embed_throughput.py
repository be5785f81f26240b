"""Tokens embedded per second: the model alone, memserver's embedder, and `memserver index`.

Usage:
  python benchmarks/embed_throughput.py CORPUS [CORPUS ...] [--work DIR] [--sample 600]
      [--batch-sizes 1 4 16 64 256] [--threads 1 2] [--index-dir DIR] [--json]
      [--model NAME]   (default sentence-transformers/all-MiniLM-L6-v2; an int8 copy's
                        name, e.g. memserver's default, measures that copy throughout)

Set FASTEMBED_CACHE_PATH (and HF_HUB_OFFLINE=1) first. Per corpus:

1. `memserver index CORPUS` cold into a fresh index (or, with --index-dir, an
   index already built from CORPUS, read as it is), in a subprocess: its
   `seconds_embedding` and wall time.
2. The texts memserver embedded, read from the index's `chunks` and `memories`
   tables (read-only): a file chunk as `memserver.text.passages.embed_text`
   builds it (name line, header, the first `[embedding] max_chars` of code),
   clipped as FastEmbedder clips it, a memory as its text. Model tokens are counted with
   the model's own tokenizer (`tokenizer.json` from the fastembed cache),
   special tokens included, truncated at 256 like fastembed does. Reported:
   model tokens embedded per source token (the model tokenizer over the whole
   text of every indexed file, no truncation), for chunks and for memories,
   and how many tokens truncation drops.
3. On a seeded sample of those texts (chunks and memories in their index
   proportions), in this process: fastembed's `TextEmbedding` directly, for each
   ONNX thread count (`threads=`) and batch size, with the texts in sample order
   and sorted by token length; then memserver's `FastEmbedder` (its own
   length-sorted, token-budget batching) at the same thread counts; and two
   one-thread sessions side by side (sorted batches of 16 dealt out in turn).

tokens/s is real (unpadded) model tokens over wall seconds of the embedding call,
per CPU-s the same over this process's CPU seconds (all threads: with one thread it
shows the work itself, least disturbed by other processes; with two it shows the
cost of the second thread); `padding` is padded tokens / real tokens. The index's
own rate is all its embedded tokens over its `seconds_embedding` (which includes
reading and writing vectors). Issue 15's target: index rate ≥ 0.9 × the best model-alone
rate. One measurement per cell, on whatever else the machine is doing: compare
cells of one run, and record `loadavg`.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from memserver.config import EmbeddingSettings
from memserver.embed.fastembed import LABEL_CHARS
from memserver.store.chunks import chunks_from_table
from memserver.text.passages import embed_text

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256
MAX_CHARS = EmbeddingSettings.max_chars  # [embedding] max_chars: of a chunk's code
CLIP = MAX_CHARS + LABEL_CHARS  # FastEmbedder clips every document to this
SOURCE_SUFFIXES = {".py", ".go", ".java", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".rs"}


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def cache_dir() -> Path:
    raw = os.environ.get("FASTEMBED_CACHE_PATH")
    if not raw:
        sys.exit("set FASTEMBED_CACHE_PATH (and HF_HUB_OFFLINE=1) to the offline model cache")
    return Path(raw).resolve()


def tokenizer_file() -> Path:
    found = sorted(cache_dir().glob("models--*--all-MiniLM-L6-v2-onnx/snapshots/*/tokenizer.json"))
    if not found:
        sys.exit(f"no all-MiniLM-L6-v2 tokenizer.json under {cache_dir()}")
    return found[0]


class Counter:
    """Model tokens per text, with and without fastembed's truncation."""

    def __init__(self) -> None:
        from tokenizers import Tokenizer

        self._full = Tokenizer.from_file(str(tokenizer_file()))
        self._full.no_truncation()
        self._full.no_padding()

    def counts(self, texts: Sequence[str], special: bool = True) -> list[int]:
        out: list[int] = []
        for i in range(0, len(texts), 512):
            encs = self._full.encode_batch(list(texts[i : i + 512]), add_special_tokens=special)
            out += [len(e.ids) for e in encs]
        return out


def truncated(counts: Sequence[int]) -> list[int]:
    return [min(MAX_TOKENS, n) for n in counts]


# -- the index ---------------------------------------------------------------------------


def run_index(root: Path, index_dir: Path) -> dict[str, Any]:
    exe = Path(sys.executable).parent / "memserver"
    cmd = [str(exe) if exe.exists() else "memserver", "index", str(root), "--index-dir",
           str(index_dir), "--embedder", MODEL, "--json"]  # fmt: skip
    # only the index settings under test (MEMSERVER_INDEX_*) reach it
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MEMSERVER_") or k.startswith("MEMSERVER_INDEX_")}  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if proc.returncode:
        sys.exit(f"memserver index failed:\n{proc.stderr[-2000:]}")
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), **json.loads(proc.stdout)}


def chunk_texts(table: Any) -> list[str]:
    """What memserver's indexer hands the embedder for each chunk of an Arrow table."""
    return [embed_text(c, MAX_CHARS)[:CLIP] for c in chunks_from_table(table)]


def embedded_texts(index_dir: Path) -> dict[str, list[str]]:
    import lancedb

    where = index_dir / "lance" if (index_dir / "lance").is_dir() else index_dir
    db = lancedb.connect(str(where))
    table = db.open_table("chunks").to_arrow().drop_columns(["vector"])
    current = pc.and_(pc.is_null(table.column("valid_to")), table.column("embedded"))
    chunks = chunk_texts(table.filter(current))
    mrows = db.open_table("memories").to_arrow().select(["text", "status", "embedded"])
    memories = [r["text"][:CLIP] for r in mrows.to_pylist() if r["embedded"]]
    return {"chunks": chunks, "memories": memories}


def source_texts(root: Path) -> list[str]:
    out = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in SOURCE_SUFFIXES:
            out.append(path.read_text(encoding="utf-8", errors="replace"))
    return out


def token_accounting(counter: Counter, root: Path, texts: dict[str, list[str]]) -> dict[str, Any]:
    source = sum(counter.counts(source_texts(root), special=False))
    out: dict[str, Any] = {"source_model_tokens": source}
    total = 0
    for view, items in texts.items():
        full = counter.counts(items)
        kept = sum(truncated(full))
        total += kept
        out[view] = {
            "texts": len(items),
            "model_tokens_embedded": kept,
            "per_source_token": round(kept / max(1, source), 3),
            "mean_tokens": round(kept / max(1, len(items)), 1),
            "truncated_texts": sum(1 for n in full if n > MAX_TOKENS),
            "tokens_dropped_by_truncation": sum(full) - kept,
        }
    out["total_embedded"] = total
    out["embedded_per_source_token"] = round(total / max(1, source), 3)
    return out


# -- in-process measurements -------------------------------------------------------------


def sample(texts: dict[str, list[str]], n: int, seed: int = 15) -> list[str]:
    rng = random.Random(seed)
    total = sum(len(v) for v in texts.values())
    out: list[str] = []
    for items in texts.values():
        take = min(len(items), round(n * len(items) / max(1, total)))
        out += rng.sample(items, take)
    rng.shuffle(out)
    return out


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[float, float]:
    """Wall and CPU seconds (this process, all threads) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    fn(*args, **kwargs)
    return time.perf_counter() - wall, time.process_time() - cpu


def embed_all(model: Any, texts: list[str], batch: int) -> None:
    for _ in model.embed(texts, batch_size=batch):  # a generator: drain it
        pass


def padding(counts: Sequence[int], batch: int) -> float:
    padded = sum(max(counts[i : i + batch]) * len(counts[i : i + batch])
                 for i in range(0, len(counts), batch))  # fmt: skip
    return round(padded / max(1, sum(counts)), 3)


def text_embedding(threads: int) -> Any:
    """fastembed's own `TextEmbedding` for MODEL (an int8 copy through `embed.quantize`)."""
    from fastembed import TextEmbedding

    from memserver.embed import quantize

    if quantize.variant_of(MODEL) is not None:
        return quantize.load(MODEL, threads=threads, source_cache=cache_dir())
    return TextEmbedding(MODEL, cache_dir=str(cache_dir()), threads=threads)


def model_alone(texts: list[str], counts: list[int], threads: Sequence[int],
                batches: Sequence[int]) -> list[dict[str, Any]]:  # fmt: skip
    tokens = sum(counts)
    order = sorted(range(len(texts)), key=lambda i: counts[i])
    by_len = [texts[i] for i in order]
    by_len_counts = [counts[i] for i in order]
    rows = []
    for t in threads:
        model = text_embedding(t)
        list(model.embed(texts[:8], batch_size=8))  # session warm-up
        for b in batches:
            for name, items, cnt in (("as sampled", texts, counts),
                                     ("sorted by length", by_len, by_len_counts)):  # fmt: skip
                load = os.getloadavg()[0]
                s, cpu = timed(embed_all, model, items, b)
                rows.append({"threads": t, "batch": b, "order": name, "seconds": round(s, 2),
                             "tokens_per_s": round(tokens / s),
                             "tokens_per_cpu_s": round(tokens / cpu),
                             "texts_per_s": round(len(items) / s, 1),
                             "padding": padding(cnt, b), "loadavg": round(load, 2)})  # fmt: skip
                log(f"  model alone threads={t} batch={b} {name}: {tokens / s:.0f} tokens/s")
        del model
    return rows


def parallel_sessions(texts: list[str], counts: list[int], sessions: int = 2,
                      batch: int = 16) -> dict[str, Any]:  # fmt: skip
    """`sessions` one-thread ONNX sessions embedding sorted batches side by side from Python
    threads (onnxruntime releases the GIL): both cores busy without intra-op syncing."""
    from concurrent.futures import ThreadPoolExecutor

    order = sorted(range(len(texts)), key=lambda i: counts[i])
    batches = [[texts[i] for i in order[j : j + batch]] for j in range(0, len(order), batch)]
    models = [text_embedding(1) for _ in range(sessions)]
    for m in models:
        embed_all(m, texts[:8], 8)

    def work(k: int) -> None:
        for b in batches[k::sessions]:
            embed_all(models[k], b, batch)

    def run() -> None:
        with ThreadPoolExecutor(sessions) as pool:
            list(pool.map(work, range(sessions)))

    load = os.getloadavg()[0]
    s, cpu = timed(run)
    tokens = sum(counts)
    log(f"  {sessions} sessions x 1 thread, batch {batch}: {tokens / s:.0f} tokens/s")
    return {"sessions": sessions, "batch": batch, "seconds": round(s, 2),
            "tokens_per_s": round(tokens / s), "tokens_per_cpu_s": round(tokens / cpu),
            "loadavg": round(load, 2)}  # fmt: skip


def memserver_embedder(texts: list[str], counts: list[int],
                       threads: Sequence[int]) -> list[dict[str, Any]]:  # fmt: skip
    from memserver.embed.fastembed import FastEmbedder

    tokens = sum(counts)
    rows = []
    # threads 0: ONNX Runtime decides; sessions 2: `[embedding] sessions = 2`, one thread each
    for t, n in [(0, 1), *((t, 1) for t in threads), (0, 2)]:
        emb = FastEmbedder(EmbeddingSettings(model=MODEL, threads=t, sessions=n,
                                             cache_dir=str(cache_dir())))  # fmt: skip
        emb.embed_documents(texts[:64])  # loads every session
        load = os.getloadavg()[0]
        s, cpu = timed(emb.embed_documents, texts)
        rows.append({"threads": t, "sessions": n, "batch_tokens": emb.settings.batch_tokens,
                     "seconds": round(s, 2), "tokens_per_s": round(tokens / s),
                     "tokens_per_cpu_s": round(tokens / cpu),
                     "loadavg": round(load, 2)})  # fmt: skip
        log(f"  FastEmbedder threads={t} sessions={n}: {tokens / s:.0f} tokens/s")
    return rows


# -- one corpus ---------------------------------------------------------------------------


def bench(root: Path, args: argparse.Namespace, counter: Counter) -> dict[str, Any]:
    if args.index_dir:
        index_dir, indexed = args.index_dir.resolve(), None
    else:
        index_dir = args.work / f"{root.name}.index"
        shutil.rmtree(index_dir, ignore_errors=True)
        log(f"{root.name}: memserver index (cold)")
        indexed = run_index(root, index_dir)
    texts = embedded_texts(index_dir)
    accounting = token_accounting(counter, root, texts)
    out: dict[str, Any] = {"package": root.name, "tokens": accounting}
    if indexed:
        emb_s = float(indexed["seconds_embedding"])
        out["index"] = {
            "wall_s": indexed["wall_s"],
            "seconds_embedding": emb_s,
            "chunks_embedded": indexed["chunks_embedded"],
            "memories_embedded": indexed.get("memories_embedded"),
            "tokens_per_s_embedding": round(accounting["total_embedded"] / max(1e-9, emb_s)),
            "tokens_per_s_wall": round(accounting["total_embedded"] / indexed["wall_s"]),
            # over all the CPU the whole run used (walk, chunking, stores too): the rate
            # least moved by other load, against the model's own per CPU second below
            "cpu_s": indexed["cpu_s"],
            "tokens_per_cpu_s": round(accounting["total_embedded"] / max(1e-9, indexed["cpu_s"])),
        }
    picked = sample(texts, args.sample)
    counts = truncated(counter.counts(picked))
    out["sample"] = {"texts": len(picked), "model_tokens": sum(counts),
                     "mean_tokens": round(statistics.mean(counts), 1)}  # fmt: skip
    log(f"{root.name}: {len(picked)} sampled texts, {sum(counts)} model tokens")
    out["model_alone"] = model_alone(picked, counts, args.threads, args.batch_sizes)
    out["fastembedder"] = memserver_embedder(picked, counts, args.threads)
    out["parallel_sessions"] = parallel_sessions(picked, counts)
    best = max(out["model_alone"], key=lambda r: r["tokens_per_s"])
    out["best_model_alone"] = best
    if indexed:
        out["index_over_best_model_alone"] = round(
            out["index"]["tokens_per_s_embedding"] / best["tokens_per_s"], 3
        )
        best_cpu = max(out["model_alone"], key=lambda r: r["tokens_per_cpu_s"])
        out["index_over_best_model_alone_per_cpu_s"] = round(
            out["index"]["tokens_per_cpu_s"] / best_cpu["tokens_per_cpu_s"], 3
        )
    return out


def markdown(r: dict[str, Any]) -> str:
    tok = r["tokens"]
    lines = [f"### {r['package']}", ""]
    lines.append(
        f"source: {tok['source_model_tokens']} model tokens; embedded: {tok['total_embedded']} "
        f"(**{tok['embedded_per_source_token']} per source token**)"
    )
    for view in ("chunks", "memories"):
        v = tok[view]
        lines.append(
            f"- {view}: {v['texts']} texts, {v['model_tokens_embedded']} tokens "
            f"({v['per_source_token']} per source token, mean {v['mean_tokens']}), "
            f"{v['truncated_texts']} truncated at {MAX_TOKENS} "
            f"(dropping {v['tokens_dropped_by_truncation']} tokens)"
        )
    if "index" in r:
        ix = r["index"]
        lines.append(
            f"- memserver index: {ix['tokens_per_s_embedding']} tokens/s over its "
            f"{ix['seconds_embedding']} s of embedding ({ix['tokens_per_s_wall']} over "
            f"{ix['wall_s']} s wall); **{r['index_over_best_model_alone']} × the best "
            "model-alone rate** (target ≥ 0.9)"
        )
    s = r["sample"]
    lines += ["", f"sample: {s['texts']} texts, {s['model_tokens']} tokens "
              f"(mean {s['mean_tokens']})",
              "", "| embedder | threads | batch | order | tokens/s | per CPU-s | padding | load |",
              "|---|---:|---:|---|---:|---:|---:|---:|"]  # fmt: skip
    for m in r["model_alone"]:
        lines.append(f"| TextEmbedding | {m['threads']} | {m['batch']} | {m['order']} | "
                     f"{m['tokens_per_s']} | {m['tokens_per_cpu_s']} | {m['padding']} | "
                     f"{m['loadavg']} |")  # fmt: skip
    for m in r["fastembedder"]:
        name = "FastEmbedder" if m["sessions"] == 1 else f"FastEmbedder, {m['sessions']} sessions"
        lines.append(f"| {name} | {m['threads'] or 'default'} | ≤{m['batch_tokens']} tok "
                     f"| sorted by length | {m['tokens_per_s']} | {m['tokens_per_cpu_s']} | | "
                     f"{m['loadavg']} |")  # fmt: skip
    p = r.get("parallel_sessions")
    if p:
        lines.append(f"| {p['sessions']} × TextEmbedding in parallel | 1 each | {p['batch']} | "
                     f"sorted by length | {p['tokens_per_s']} | {p['tokens_per_cpu_s']} | | "
                     f"{p['loadavg']} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    global MODEL
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpora", nargs="+", type=Path)
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--index-dir", type=Path, default=None,
                    help="an index built from the one corpus: skip indexing")  # fmt: skip
    ap.add_argument("--sample", type=int, default=600, help="texts per in-process measurement")
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[1, 4, 16, 64, 256])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--model", default=MODEL, help="the embedding model (an int8 copy's name too)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    MODEL = args.model
    if args.index_dir and len(args.corpora) != 1:
        sys.exit("--index-dir goes with exactly one corpus")
    counter = Counter()
    with tempfile.TemporaryDirectory(prefix="embed-throughput-") as tmp:
        args.work = (args.work or Path(tmp)).resolve()
        args.work.mkdir(parents=True, exist_ok=True)
        results = [bench(root.resolve(), args, counter) for root in args.corpora]
    out = {"cpus": os.cpu_count(), "model": MODEL, "corpora": results}
    print(json.dumps(out, indent=1) if args.json else "\n\n".join(map(markdown, results)))


if __name__ == "__main__":
    main()
