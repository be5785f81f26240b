"""A small project with notes in every state the review page shows, for the UI tests
(fast, through Starlette's test client), the browser tests and the service tests.

Built with the hashing embedder (deterministic; near-duplicates score 1.0):

- a note about `apply_discount` that turned stale when its code changed (the edit is
  indexed, so the note's cited chunk is closed and the file on disk differs);
- two notes saying "The deploy script lives in ops/deploy.sh." (a consolidation merge);
- two notes giving `STAGING_DB` different ports (a contradiction);
- a note whose email address was redacted;
- a note scoped to user=dana;
- a note about the nightly export, to forget and erase.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from memserver.core.requests import Note

DAY = [datetime(2025, m, 3, tzinfo=UTC) for m in (1, 2, 3, 4)]

BILLING = '''"""Prices and invoices."""


def apply_discount(price: float, rate: float) -> float:
    """Take a discount off a price; the rate is capped at half the price."""
    rate = min(rate, 0.5)
    return round(price * (1 - rate), 2)


def format_invoice(lines: list[tuple[str, float]]) -> str:
    """One line per item and a total."""
    body = "\\n".join(f"{name}: {amount:.2f}" for name, amount in lines)
    return body + f"\\ntotal: {sum(a for _, a in lines):.2f}"
'''

RETRY = '''def backoff_delays(attempts: int, base: float = 0.5) -> list[float]:
    """Waits between attempts, doubling each time."""
    return [base * 2**i for i in range(attempts)]
'''

STALE_TEXT = "`apply_discount` caps the discount rate at 0.5 of the price."
ERASE_TEXT = "The nightly billing export runs from cron at 02:00 on the reporting host."


@dataclass(frozen=True)
class Scenario:
    root: Path
    index_dir: Path
    stale_memory: str
    stale_note: str
    merge_members: tuple[str, ...]
    contradiction: tuple[str, str]  # (older, newer)
    redacted_note: str
    scoped_memory: str
    erase_note: str
    erase_memories: tuple[str, ...]


def build(base: Path, embedder: str = "hashing") -> Scenario:
    from memserver.engine import Engine

    root = base / "shop"
    (root / "src").mkdir(parents=True)
    (root / "src" / "billing.py").write_text(BILLING)
    (root / "src" / "retry.py").write_text(RETRY)
    (root / "README.md").write_text("# Shop\n\nPrices, invoices and retries.\n")
    index_dir = base / "index"
    engine = Engine(root, index_dir, embedder_flag=embedder, env={})
    engine.index()
    svc = engine.memory_service(actor="test")
    stale = svc.remember(Note(STALE_TEXT, paths=("src/billing.py",), event_time=DAY[0]))
    first = svc.remember(Note("The deploy script lives in ops/deploy.sh. Ask Dana before a "
                              "release.", event_time=DAY[0]))  # fmt: skip
    second = svc.remember(Note("The deploy script lives in ops/deploy.sh. We run it weekly.",
                               event_time=DAY[1]))  # fmt: skip
    older = svc.remember(Note("`STAGING_DB` listens on port 5433.", event_time=DAY[0]))
    newer = svc.remember(Note("`STAGING_DB` listens on port 6543.", event_time=DAY[2]))
    redacted = svc.remember(Note("Send the release notes to ops-team@example.com first.",
                                 event_time=DAY[1]))  # fmt: skip
    scoped = svc.remember(Note("Dana prefers squash merges for billing changes.",
                               event_time=DAY[1], scope=(("user", "dana"),)))  # fmt: skip
    erase = svc.remember(Note(ERASE_TEXT, event_time=DAY[3]))
    # the cited code changes: the next index run closes its chunk and the note turns stale
    (root / "src" / "billing.py").write_text(BILLING.replace("min(rate, 0.5)", "min(rate, 0.4)")
                                             .replace("half the price", "40 percent"))  # fmt: skip
    engine.index()
    store = engine.open_store()
    deploy = [m for m in (*first.memory_ids, *second.memory_ids)
              if "ops/deploy.sh" in store.memories.get([m])[m].text
              and "Dana" not in store.memories.get([m])[m].text
              and "weekly" not in store.memories.get([m])[m].text]  # fmt: skip
    [stale_memory] = stale.memory_ids
    [old_port] = older.memory_ids
    [new_port] = newer.memory_ids
    return Scenario(
        root, index_dir, stale_memory, stale.note_id, tuple(sorted(deploy)),
        (old_port, new_port), redacted.note_id, scoped.memory_ids[0], erase.note_id,
        tuple(erase.memory_ids),
    )  # fmt: skip
