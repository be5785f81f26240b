"""`memserver eval locomo`: turn-level evidence recall and abstention on LoCoMo-format data.

Implements the task of the LoCoMo DEV README: each conversation goes into a fresh
index and scope, turn by turn through the `remember` write path (content
"<speaker>: <text>" plus any image caption, time = the session's date-time,
provenance = the turn's dia_id, kept as the `turn` chunk's symbol). Each turn is
processed on its own; a session's turns share one storage commit
(`MemoryService.remember_many`). Then every
question is recalled verbatim in that scope, asking for 20 results, and scored:
R@k and All@k over the union of the dia_ids the first k results come from, per
category and pooled over categories 1-4; category-5 abstention by recall's own
`found` flag, with the false abstention on 1-4 and the AUROC of `confidence`.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memserver.memory.service import ConversationSummary, MemoryService

K = (5, 10, 20)
_SESSION = re.compile(r"^session_(\d+)$")


def session_time(text: str) -> datetime:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC)


def turns(conversation: Mapping[str, Any]) -> Iterator[tuple[str, str, str, datetime]]:
    """(dia_id, speaker, content, time) in session and turn order."""
    sessions = sorted((int(m.group(1)), key) for key in conversation if (m := _SESSION.match(key)))
    for n, key in sessions:
        when = session_time(conversation[f"session_{n}_date_time"])
        for turn in conversation[key] or ():
            text = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                text += f" [shares image: {turn['blip_caption']}]"
            yield turn["dia_id"], turn["speaker"], text, when


def normalise_evidence(evidence: Sequence[str], known: set[str]) -> set[str]:
    out = set()
    for item in evidence:
        for part in re.split(r"[;,\s]+", str(item)):
            m = re.fullmatch(r"D:?(\d+):0*(\d+)", part.strip())
            if m and f"D{m.group(1)}:{m.group(2)}" in known:
                out.add(f"D{m.group(1)}:{m.group(2)}")
    return out


def auroc(positive: Sequence[float], negative: Sequence[float]) -> float:
    """P(score of an answerable question > score of an adversarial one), ties half."""
    if not positive or not negative:
        return 0.5
    wins = sum((p > n) + 0.5 * (p == n) for p in positive for n in negative)
    return wins / (len(positive) * len(negative))


def ingest(service: MemoryService, conversation: Mapping[str, Any],
           scope: tuple[tuple[str, str], ...]) -> tuple[set[str], ConversationSummary]:  # fmt: skip
    """Remember the turns (low-information ones are dropped by the write path's scoring);
    return the known dia_ids and the ingest summary."""
    from memserver.core.requests import Note

    notes = [Note(text, event_time=when, scope=scope, turn_id=dia_id, speaker=speaker)
             for dia_id, speaker, text, when in turns(conversation)]  # fmt: skip
    return {n.turn_id for n in notes}, service.remember_conversation(notes)


def ask(recaller: Any, qa: Sequence[Mapping[str, Any]], scope: tuple[tuple[str, str], ...],
        known: set[str]) -> list[dict[str, Any]]:  # fmt: skip
    from memserver.core.requests import LIMITS, Filters

    out = []
    for item in qa:
        started = time.perf_counter()
        res = recaller.recall(item["question"], k=max(K), budget_tokens=LIMITS.budget_max,
                              max_files=LIMITS.files_max, filters=Filters(scope=scope))  # fmt: skip
        ms = (time.perf_counter() - started) * 1000
        ranked = [e.symbol for e in res.evidence]  # a turn chunk's symbol is its dia_id
        out.append({
            "category": int(item["category"]),
            "evidence": sorted(normalise_evidence(item.get("evidence") or (), known)),
            "ranked": ranked, "found": bool(res.found), "confidence": float(res.confidence or 0),
            "ms": ms,
        })  # fmt: skip
    return out


def score(results: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    by_cat: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for r in results:
        by_cat[str(r["category"])].append(r)

    def recall_block(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
        rows = [r for r in rows if r["evidence"]]
        block: dict[str, float] = {"questions": len(rows)}
        for k in K:
            rs, alls = [], []
            for r in rows:
                covered = set(r["ranked"][:k])
                e = set(r["evidence"])
                rs.append(len(e & covered) / len(e))
                alls.append(1.0 if e <= covered else 0.0)
            block[f"recall@{k}"] = statistics.mean(rs) if rs else 0.0
            block[f"all@{k}"] = statistics.mean(alls) if alls else 0.0
        return block

    answerable = [r for r in results if r["category"] in (1, 2, 3, 4)]
    adversarial = [r for r in results if r["category"] == 5]
    per_category = {c: recall_block(rows) for c, rows in sorted(by_cat.items()) if c != "5"}
    traps = [r for r in adversarial if r["evidence"]]
    times = sorted(r["ms"] for r in results)

    def share(rows: Sequence[Mapping[str, Any]], test: Callable[[Mapping[str, Any]], bool]
              ) -> float:  # fmt: skip
        return statistics.mean(1.0 if test(r) else 0.0 for r in rows) if rows else 0.0

    cat5 = {
        "questions": len(adversarial),
        "abstain": share(adversarial, lambda r: not r["found"]),
        "false_abstain": share(answerable, lambda r: not r["found"]),
        "auroc": auroc([r["confidence"] for r in answerable],
                       [r["confidence"] for r in adversarial]),
    }  # fmt: skip
    for k in (5, 10):

        def caught(r: Mapping[str, Any], k: int = k) -> bool:
            return bool(set(r["evidence"]) & set(r["ranked"][:k]))

        cat5[f"trap@{k}"] = share(traps, caught)
    return {
        "pooled": recall_block(answerable),
        "per_category": per_category,
        "cat5": cat5,
        "left_out_no_evidence": sum(1 for r in answerable if not r["evidence"]),
        "recall_p50_ms": statistics.median(times) if times else 0.0,
        "recall_p95_ms": times[int(0.95 * (len(times) - 1))] if times else 0.0,
    }


def run(dataset: Path, work: Path, *, make_engine: Callable[[Path, Path], Any],
        log: Callable[[str], None] = lambda _: None, consolidate: bool = False
        ) -> dict[str, Any]:  # fmt: skip
    """Ingest, ask and score; with `consolidate`, also consolidate each conversation after
    the first round of questions and ask again (reported under `consolidated`)."""
    data = json.loads(dataset.read_text(encoding="utf-8"))
    results: list[dict[str, Any]] = []
    after: list[dict[str, Any]] = []
    memories = {"before": 0, "after": 0, "superseded": 0, "contradicted": 0}
    ingest_seconds = 0.0
    turns_stored = turns_seen = 0
    for n_conv, conv in enumerate(data):
        sample = str(conv.get("sample_id") or f"conversation-{n_conv}")
        root = work / sample
        root.mkdir(parents=True, exist_ok=True)
        engine = make_engine(root, work / f"{sample}.index")
        scope = (("session", sample),)
        log(f"{sample}: remembering turns")
        started = time.monotonic()
        known, summary = ingest(engine.memory_service(), conv["conversation"], scope)
        ingest_seconds += time.monotonic() - started
        turns_stored += summary.stored
        turns_seen += summary.turns
        if summary.warning:
            log(f"{sample}: warning: {summary.warning}")
        log(f"{sample}: {summary.stored} of {summary.turns} turns kept in "
            f"{time.monotonic() - started:.0f} s; asking {len(conv['qa'])} questions")  # fmt: skip
        recaller = engine.recaller(rerank=False)
        results += ask(recaller, conv["qa"], scope, known)
        if consolidate:
            done = engine.consolidator().run()
            memories["before"] += done.active_before
            memories["after"] += done.active_after
            memories["superseded"] += done.superseded
            memories["contradicted"] += len(done.contradictions)
            after += ask(recaller, conv["qa"], scope, known)
    report = score(results)
    if consolidate:
        report["consolidated"] = {**score(after), "memories": memories}
    report.update(
        conversations=len(data), turns=turns_seen, turns_stored=turns_stored,
        ingest_seconds=round(ingest_seconds, 1),
        discard_rate=1 - turns_stored / turns_seen if turns_seen else 0.0,
        # per question what a report draws (the gate's ROC, the latency histogram); no text
        questions=[{"category": r["category"], "found": r["found"],
                    "confidence": round(r["confidence"], 4), "ms": round(r["ms"], 2)}
                   for r in results],
    )  # fmt: skip
    return report
