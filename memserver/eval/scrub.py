"""`memserver eval scrub`: planted secrets must not survive, harmless tokens must.

Notes (`run`): random secrets in many formats inside sentences a developer might paste,
next to harmless code-ish tokens (SHAs, UUIDs, paths, versions, colours) and real source
lines, through the notes scrubber.

Code (`run_code`): secrets planted across Python, JS/TS, Go, Rust, YAML, JSON, TOML/INI,
properties, shell, Dockerfiles and Markdown (comments, literals, config maps, test
fixtures) in a copy of a real repository, beside harmless high-entropy tokens (git SHAs,
UUIDs, sha256/512 digests, lockfile integrity hashes, base64 test data, env var names,
placeholders). The copy is indexed by the real pipeline; then every way out of the index
is searched for each secret: every stored chunk and memory, `recall` (keyword arms) and
the keyword index, each chunk read by id (what `memserver://chunk/{id}` serves), status,
and the bytes of every file under the index folder.

Secrets come from a seeded RNG in the providers' documented shapes, so no real
credential is involved and the set is not a fixed list the detectors could fit.
"""

from __future__ import annotations

import random
import shutil
import string
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memserver.eval import scrub_corpus as corpus
from memserver.text.secrets import Scrubber
from memserver.text.terms import query_terms

_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
r_ = corpus.r_


def _context(rng: random.Random, kind: str, value: str) -> str:
    """A sentence a developer might paste into a note, carrying the secret."""
    user = rng.choice(["admin", "app", "postgres", "svc_ci"])
    host = rng.choice(["db.internal", "localhost", "10.0.3.7", "pg.example.com"])
    if kind == "password":
        return rng.choice([
            f"Staging DB is postgres://{user}:{value}@{host}:5432/app, do not share.",
            f"Set DB_PASSWORD={value} before running the migrations.",
            f'the config has password: "{value}" for the {user} account',
            f"mysql://{user}:{value}@{host}/shop is the replica URL",
            f"my password is {value}",
            f"run mysql -u {user} -p{value} shop to get in",
        ])  # fmt: skip
    if kind == "passphrase":
        return f'the {user} password is "{value}"'
    if kind == "aws-secret-key":
        return rng.choice([f"AWS secret key {value} (rotate it)",
                           f"aws_secret_access_key = {value}"])  # fmt: skip
    if kind == "secret":
        return rng.choice([
            f"export SERVICE_API_KEY={value}",
            f'client_secret = "{value}"',
            f"Use Authorization: Bearer {value} for the internal API.",
            f"access_token: {value}",
            f"api key: {value}",
        ])  # fmt: skip
    return rng.choice([
        f"The CI token is {value} (rotate it monthly).",
        f"export TOKEN={value}",
        f"curl -H 'Authorization: Bearer {value}' https://api.example.com/v1/items",
        f"I pasted {value} into the .env file by mistake.",
        f'{{"key": "{value}", "region": "eu-west-1"}}',
        f"remember: {value}",
    ])  # fmt: skip


def _harmless(rng: random.Random) -> str:
    """A code-ish token notes must keep."""
    makers: list[Callable[[], str]] = [
        lambda: r_(rng, _HEX, 40),  # git SHA
        lambda: r_(rng, _HEX, rng.choice([7, 8, 12])),  # short SHA
        lambda: corpus.uuid(rng),
        lambda: "#" + r_(rng, "0123456789ABCDEFabcdef", rng.choice([3, 6])),  # colour
        lambda: f"{rng.randint(0, 20)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}",  # version
        lambda: "/".join(["src", rng.choice(["api", "core", "ui"]), rng.choice(
            ["client.py", "retry_policy.ts", "handlers/auth.go", "db/pool.rs"])]),
        lambda: f"{rng.choice(['token', 'secret', 'key'])}_{rng.choice(['count', 'len', 'ttl'])}",
        lambda: str(rng.randint(10, 10**9)),
        lambda: f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        lambda: f"localhost:{rng.randint(1024, 65535)}",
        lambda: r_(rng, _HEX, 64),  # sha256
        lambda: corpus.integrity(rng),
    ]  # fmt: skip
    return rng.choice(makers)()


def _tally() -> defaultdict[str, dict[str, int]]:
    return defaultdict(lambda: {"planted": 0, "leaked": 0})


@dataclass
class ScrubReport:
    secrets: int = 0
    leaked: int = 0
    harmless_tokens: int = 0
    harmless_redacted: int = 0
    per_kind: defaultdict[str, dict[str, int]] = field(default_factory=_tally)
    leaked_examples: list[str] = field(default_factory=list)
    redacted_examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "secrets": self.secrets, "leaked": self.leaked,
            "kinds": len(self.per_kind), "per_kind": dict(sorted(self.per_kind.items())),
            "harmless_tokens": self.harmless_tokens,
            "harmless_redacted": self.harmless_redacted,
            "harmless_redacted_rate": self.harmless_redacted / max(1, self.harmless_tokens),
            "leaked_examples": self.leaked_examples[:10],
            "redacted_examples": self.redacted_examples[:10],
        }  # fmt: skip


def run(
    n_secrets: int, n_harmless: int, code_lines: Iterable[str] = (), seed: int = 0
) -> ScrubReport:
    """The notes scrubber over planted secrets, harmless tokens and real source lines."""
    rng = random.Random(seed)
    scrubber = Scrubber()
    report = ScrubReport()
    for _ in range(n_secrets):
        kind, value = corpus.note_secret(rng)
        note = _context(rng, kind, value)
        clean, _ = scrubber.scrub(note)
        report.secrets += 1
        report.per_kind[kind]["planted"] += 1
        if corpus.survives(value, clean):
            report.leaked += 1
            report.per_kind[kind]["leaked"] += 1
            report.leaked_examples.append(note)
    for _ in range(n_harmless):
        token = _harmless(rng)
        note = f"{rng.choice(['Fixed in', 'See', 'Bumped to', 'Colour is', 'Moved'])} {token}."
        _check_harmless(scrubber, note, report)
    for line in code_lines:
        _check_harmless(scrubber, line, report)
    return report


def _check_harmless(scrubber: Scrubber, text: str, report: ScrubReport) -> None:
    tokens = text.split()
    report.harmless_tokens += len(tokens)
    spans = scrubber.find(text)
    if not spans:
        return
    hit = 0
    pos = 0
    for tok in tokens:  # count the whitespace tokens a redaction touches
        start = text.index(tok, pos)
        end = pos = start + len(tok)
        if any(s.start < end and start < s.end for s in spans):
            hit += 1
    report.harmless_redacted += hit
    report.redacted_examples.append(text.strip()[:200])


def source_lines(roots: Iterable[Path], limit: int, seed: int = 0) -> list[str]:
    """Non-blank lines from source files under `roots` (real code, no secrets expected)."""
    lines: list[str] = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.suffix not in {".py", ".go", ".js", ".ts", ".md", ".rs", ".java"}:
                continue
            try:
                lines.extend(x for x in path.read_text("utf-8").splitlines() if x.strip())
            except (OSError, UnicodeDecodeError):
                continue
    random.Random(seed).shuffle(lines)
    return lines[:limit]


# -------------------------------------------------------------------- code


@dataclass
class CodeScrubReport:
    repo: str
    files_copied: int = 0
    files_planted: int = 0
    secrets: int = 0
    leaked: int = 0
    per_kind: defaultdict[str, dict[str, int]] = field(default_factory=_tally)
    harmless_tokens: int = 0
    harmless_masked: int = 0
    per_harmless: defaultdict[str, dict[str, int]] = field(
        default_factory=lambda: defaultdict(lambda: {"planted": 0, "masked": 0})
    )
    skipped_by_walk: dict[str, str] = field(default_factory=dict)  # planted files not indexed
    # the checks are not blind: where the same search finds the harmless tokens (stored)
    controls: dict[str, int] = field(default_factory=dict)
    masked_values: int = 0  # what the index run reported
    checks: dict[str, int] = field(default_factory=dict)  # what each leak check looked at
    leaked_examples: list[str] = field(default_factory=list)
    masked_examples: list[str] = field(default_factory=list)
    seconds_index: float = 0.0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "repo": self.repo, "files_copied": self.files_copied,
            "files_planted": self.files_planted, "secrets": self.secrets,
            "leaked": self.leaked, "kinds": len(self.per_kind),
            "per_kind": dict(sorted(self.per_kind.items())),
            "harmless_tokens": self.harmless_tokens, "harmless_masked": self.harmless_masked,
            "harmless_masked_rate": self.harmless_masked / max(1, self.harmless_tokens),
            "per_harmless": dict(sorted(self.per_harmless.items())),
            "skipped_by_walk": dict(sorted(self.skipped_by_walk.items())),
            "masked_values": self.masked_values, "checks": self.checks,
            "controls": self.controls,
            "leaked_examples": self.leaked_examples[:10],
            "masked_examples": self.masked_examples[:10],
            "seconds_index": round(self.seconds_index, 2), "seconds": round(self.seconds, 2),
        }  # fmt: skip


def run_code(
    repo: Path, work: Path, make_engine: Callable[[Path, Path], Any], *,
    n_secrets: int = 480, n_harmless: int = 480, seed: int = 0, recall_each: bool = True,
    log: Callable[[str], None] = lambda _msg: None,
) -> CodeScrubReport:  # fmt: skip
    """Plant into a copy of `repo` under `work`, index it, and look for every secret."""
    started = time.monotonic()
    report = CodeScrubReport(repo=str(repo))
    root, index_dir = work / "repo", work / "index"
    shutil.rmtree(work, ignore_errors=True)
    report.files_copied = corpus.copy_tree(repo, root)
    plan = corpus.plant(root, random.Random(seed), n_secrets, n_harmless)
    report.files_planted = len(plan.files)
    log(f"planted {len(plan.secrets)} secrets and {len(plan.harmless)} harmless tokens in "
        f"{len(plan.files)} files of a copy of {repo} ({report.files_copied} files)")  # fmt: skip
    engine = make_engine(root, index_dir)
    t = time.monotonic()
    indexed = engine.index()
    report.seconds_index = time.monotonic() - t
    report.masked_values = indexed.masked_total
    report.skipped_by_walk = {p: why for p, why in indexed.skipped.items() if p in plan.files}
    log(f"indexed in {report.seconds_index:.1f}s; {indexed.masked_total} values masked")
    exposure = _Exposure(engine, index_dir)
    report.checks = exposure.checks
    for s in plan.secrets:
        report.secrets += 1
        report.per_kind[s.kind]["planted"] += 1
        where = exposure.find(s.value, recall=recall_each)
        if where:
            report.leaked += 1
            report.per_kind[s.kind]["leaked"] += 1
            report.leaked_examples.append(f"{s.kind} in {s.path} ({', '.join(where)}): {s.line}")
    controls: defaultdict[str, int] = defaultdict(int)
    for h in plan.harmless:
        report.harmless_tokens += 1
        report.per_harmless[h.kind]["planted"] += 1
        if h.path not in report.skipped_by_walk and not exposure.stored(h.path, h.value):
            report.harmless_masked += 1
            report.per_harmless[h.kind]["masked"] += 1
            report.masked_examples.append(f"{h.kind} in {h.path}: {h.line}")
        for channel in {w.split()[0] for w in exposure.find(h.value, recall=False)}:
            controls[f"harmless_found_by_{channel}"] += 1
    report.controls = dict(sorted(controls.items()))
    report.seconds = time.monotonic() - started
    return report


class _Exposure:
    """Everything the index would give out, loaded once, searched per secret."""

    def __init__(self, engine: Any, index_dir: Path) -> None:
        import json

        store = engine.open_store()
        self.store = store
        self.recaller = engine.recaller(rerank=False, store=store)
        ids = list(store.chunks.states())
        chunks = [c for c, _ in store.chunks.get(ids).values()]
        memories = list(store.memories.get(list(store.memories.states())).values())
        manifest = store.files.read()
        self.by_path: dict[str, str] = defaultdict(str)
        current = {cid for rec in manifest.values() for cid in rec.chunk_ids}
        for c in chunks:
            if c.id in current:
                self.by_path[c.path] += c.text + "\n"
        self.texts = {
            "chunk": "\n".join(f"{c.path}\n{c.symbol}\n{c.header}\n{c.text}" for c in chunks),
            "memory": "\n".join(f"{m.key}\n{m.text}\n{' '.join(m.entities)}" for m in memories),
            "status": json.dumps(engine.status(store).to_dict()),
        }
        self.files = {
            str(p.relative_to(index_dir)): p.read_bytes()
            for p in sorted(index_dir.rglob("*")) if p.is_file()
        }  # fmt: skip
        self.checks = {
            "chunks_read": len(chunks), "memories_read": len(memories),
            "index_files": len(self.files),
            "index_bytes": sum(len(b) for b in self.files.values()), "recalls": 0,
            "keyword_searches": 0,
        }  # fmt: skip

    def stored(self, path: str, value: str) -> bool:
        return value in self.by_path.get(path, "")

    def find(self, value: str, *, recall: bool) -> list[str]:
        """Where `value` (or a long run of it) can still be read: empty when nowhere."""
        where = [name for name, text in self.texts.items() if corpus.survives(value, text)]
        raw = value.encode("utf-8")
        where += [f"file {n}" for n, data in self.files.items() if raw in data]
        terms = [t for t in query_terms(value) if len(t) >= 12 or (len(t) >= 8 and any(
            c.isdigit() for c in t))]  # fmt: skip
        for term in terms:  # a term only the secret has, in the keyword index
            for view in ("chunk", "memory"):
                self.checks["keyword_searches"] += 1
                hits = self.store.keyword.search([term], 5, view)
                where += [f"keyword {view} {i}" for i, _ in hits]
        if recall:
            self.checks["recalls"] += 1
            result = self.recaller.recall(value, k=10, rerank=False)
            where += [f"recall {e.id}" for e in result.evidence if corpus.survives(value, e.text)]
        return where
