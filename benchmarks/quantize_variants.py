"""int8 variants of the embedding model against fp32: cosine, speed-up, file size.

Usage:
  python benchmarks/quantize_variants.py CORPUS [CORPUS ...] [--variants dyn dyn-pc ...]
      [--texts 2000] [--speed-texts 300] [--threads 1] [--cache DIR] [--json]

Set FASTEMBED_CACHE_PATH (the fp32 model; only read) and HF_HUB_OFFLINE=1.
Each variant of `memserver.embed.quantize.VARIANTS` is built from the cached
fp32 model into --cache (default: the per-user cache, `quantize.user_cache()`;
a copy already there is reused) and loaded by fastembed through its registered
model name, exactly as memserver would load it.

Texts: the corpora are re-chunked with memserver's own chunker
(`indexers.walk` + `indexers.chunking.FileChunker`, default options) and each
chunk is given to the model as the indexer does (path, header, symbol, code;
clipped at 2,000 characters). A seeded sample of --texts of them is the
comparison set; the static (QDQ) variant is calibrated on other chunks.

Per variant: cosine of each text's vector with the fp32 vector (min, p1, mean),
and speed: fp32 and the variant embed the same --speed-texts texts (sorted by
length, batch 16) batch by batch, alternating, so both see the same machine
load; speed-up = fp32 seconds / variant seconds, in wall time and in this
process's CPU time (steadier on a shared machine with one ONNX thread). The
fp32-copy control shows how large the noise is. A variant is a candidate when
min cosine ≥ 0.99 or p1 ≥ 0.995, and its speed-up ≥ 1.1.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

BATCH = 16


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def chunk_texts(root: Path) -> list[str]:
    """What the indexer would embed for each file chunk of `root`."""
    from indexers.chunking import FileChunker
    from indexers.walk import walk
    from memserver.core.types import ChunkOptions
    from memserver.tokens import default_counter

    chunker = FileChunker(ChunkOptions(), default_counter())
    out = []
    for f in walk(root).files:
        text = Path(f.abs_path).read_text(encoding="utf-8", errors="replace")
        for d in chunker.chunk(f.path, text, f.language).chunks:
            parts = (d.path, d.header, d.symbol, d.text)
            out.append("\n".join(p for p in parts if p)[:2000])
    return out


def embed(model: Any, texts: list[str]) -> np.ndarray:
    return np.asarray(list(model.embed(texts, batch_size=BATCH)), dtype=np.float32)


def by_length(texts: list[str]) -> list[str]:
    return sorted(texts, key=len)


def speed(fp32: Any, variant: Any, texts: list[str]) -> dict[str, float]:
    """Both models on the same batches, alternating in random order, so load changes hit
    both alike; wall seconds and this process's CPU seconds (with one ONNX thread, CPU
    time is what contention from other processes disturbs least)."""
    wall = {"fp32": 0.0, "var": 0.0}
    cpu = {"fp32": 0.0, "var": 0.0}
    ordered = by_length(texts)
    rng = random.Random(1)
    for i in range(0, len(ordered), BATCH):
        block = ordered[i : i + BATCH]
        pair = [(fp32, "fp32"), (variant, "var")]
        rng.shuffle(pair)  # neither always goes first
        for model, which in pair:
            w, c = time.perf_counter(), time.process_time()
            embed(model, block)
            wall[which] += time.perf_counter() - w
            cpu[which] += time.process_time() - c
    return {"fp32_s": round(wall["fp32"], 2), "variant_s": round(wall["var"], 2),
            "speedup": round(wall["fp32"] / wall["var"], 3),
            "cpu_speedup": round(cpu["fp32"] / cpu["var"], 3)}  # fmt: skip


def cosines(ref: np.ndarray, got: np.ndarray) -> dict[str, float]:
    cos = (ref * got).sum(axis=1) / (np.linalg.norm(ref, axis=1) * np.linalg.norm(got, axis=1))
    return {"min": round(float(cos.min()), 5), "p1": round(float(np.percentile(cos, 1)), 5),
            "mean": round(float(cos.mean()), 5)}  # fmt: skip


def main() -> None:
    from fastembed import TextEmbedding

    from memserver.embed import quantize

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpora", nargs="+", type=Path)
    ap.add_argument("--variants", nargs="*", default=list(quantize.VARIANTS))
    ap.add_argument("--texts", type=int, default=2000)
    ap.add_argument("--speed-texts", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--cache", type=Path, default=None, help="where the copies go")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    source = os.environ.get("FASTEMBED_CACHE_PATH")
    if not source:
        sys.exit("set FASTEMBED_CACHE_PATH to the fastembed cache holding the fp32 model")
    cache = (args.cache or quantize.user_cache()).resolve()
    if cache == Path(source).resolve():
        sys.exit("--cache must not be the fp32 model's cache: it is only read")

    pool = [t for root in args.corpora for t in chunk_texts(root)]
    rng = random.Random(15)
    rng.shuffle(pool)
    texts, calibration = pool[: args.texts], pool[args.texts :]
    speed_texts = texts[: args.speed_texts]
    log(f"{len(pool)} chunks; comparing on {len(texts)}, {len(calibration)} left to calibrate")
    fp32 = TextEmbedding(quantize.BASE_MODEL, cache_dir=source, threads=args.threads)
    started = time.perf_counter()
    ref = embed(fp32, texts)
    log(f"fp32: {len(texts)} texts in {time.perf_counter() - started:.1f} s")
    fp32_bytes = quantize.base_snapshot([source]).joinpath("model.onnx").stat().st_size
    rows = []
    for name in args.variants:
        started = time.perf_counter()
        built = quantize.build(name, [source], cache, calibration=calibration)
        build_s = time.perf_counter() - started
        quantize.register(name)
        model = TextEmbedding(built.model_name, cache_dir=str(built.cache_dir),
                              threads=args.threads, local_files_only=True)  # fmt: skip
        cos = cosines(ref, embed(model, texts))
        fast = speed(fp32, model, speed_texts)
        size = int(built.recipe["bytes"])  # the graph and its weights file
        ok = (
            quantize.VARIANTS[name].method != "none"
            and (cos["min"] >= 0.99 or cos["p1"] >= 0.995)
            and min(fast["speedup"], fast["cpu_speedup"]) >= 1.1
        )
        row = {"variant": name, "cosine": cos, **fast, "mb": round(size / 1e6, 1),
               "size_ratio": round(size / fp32_bytes, 3), "build_s": round(build_s, 1),
               "candidate": ok, "loadavg": round(os.getloadavg()[0], 2),
               "recipe": quantize.VARIANTS[name].note}  # fmt: skip
        rows.append(row)
        log(f"{name}: cos min {cos['min']} p1 {cos['p1']} mean {cos['mean']}, "
            f"×{fast['speedup']}, {row['mb']} MB")  # fmt: skip
        del model
    out = {"texts": len(texts), "speed_texts": len(speed_texts), "threads": args.threads,
           "batch": BATCH, "fp32_mb": round(fp32_bytes / 1e6, 1), "cache": str(cache),
           "variants": rows}  # fmt: skip
    if args.json:
        print(json.dumps(out, indent=1))
        return
    print(f"{len(texts)} DEV chunk texts; speed on {len(speed_texts)}, threads={args.threads}, "
          f"batch {BATCH}; fp32 model {out['fp32_mb']} MB\n")  # fmt: skip
    print("| variant | cos min | cos p1 | cos mean | speed-up wall | CPU | MB | candidate | load |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---:|")
    for r in rows:
        c = r["cosine"]
        print(f"| {r['variant']} | {c['min']} | {c['p1']} | {c['mean']} | ×{r['speedup']} | "
              f"×{r['cpu_speedup']} | "
              f"{r['mb']} | {'yes' if r['candidate'] else 'no'} | {r['loadavg']} |")  # fmt: skip


if __name__ == "__main__":
    main()
