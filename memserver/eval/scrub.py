"""A planted-secret corpus for the scrubber: random secrets in many formats, inside
ordinary sentences, next to harmless code-ish tokens (SHAs, UUIDs, paths, versions,
colours) and real source lines. Reports secrets leaked and harmless tokens redacted.

Secrets are generated from a seeded RNG in the providers' documented shapes, so no
real credential is involved and the set is not a fixed list the scrubber could fit.
"""

from __future__ import annotations

import random
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from memserver.text.secrets import Scrubber

_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"


def _r(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(rng: random.Random, n: int) -> str:
    return _r(rng, _ALNUM + "-_", n)


def _secret(rng: random.Random) -> tuple[str, str]:
    """(kind, secret value) in a random provider format."""
    makers: list[tuple[str, Callable[[], str]]] = [
        ("openai", lambda: "sk-proj-" + _b64url(rng, 48)),
        ("anthropic", lambda: "sk-ant-api03-" + _b64url(rng, 90)),
        ("github", lambda: rng.choice("pousr").join(["gh", "_"]) + _r(rng, _ALNUM, 36)),
        ("gitlab", lambda: "glpat-" + _b64url(rng, 20)),
        (
            "slack",
            lambda: (
                f"xoxb-{_r(rng, string.digits, 12)}-{_r(rng, string.digits, 13)}-"
                + _r(rng, _ALNUM, 24)
            ),
        ),
        ("aws_id", lambda: "AKIA" + _r(rng, _UPPER, 16)),
        ("stripe", lambda: "sk_live_" + _r(rng, _ALNUM, 24)),
        ("google", lambda: "AIza" + _b64url(rng, 35)),
        (
            "jwt",
            lambda: "eyJ" + _b64url(rng, 30) + ".eyJ" + _b64url(rng, 40) + "." + _b64url(rng, 43),
        ),
        ("hf", lambda: "hf_" + _r(rng, _ALNUM, 34)),
        ("npm", lambda: "npm_" + _r(rng, _ALNUM, 36)),
        ("password", lambda: _r(rng, _ALNUM + "!#%^&*", rng.randint(10, 20))),
        ("generic", lambda: _r(rng, _ALNUM, rng.randint(24, 40))),
    ]
    kind, make = rng.choice(makers)
    return kind, make()


def _context(rng: random.Random, kind: str, value: str) -> str:
    """A sentence a developer might paste into a note, carrying the secret."""
    if kind == "password":
        user = rng.choice(["admin", "app", "postgres", "svc_ci"])
        host = rng.choice(["db.internal", "localhost", "10.0.3.7", "pg.example.com"])
        return rng.choice([
            f"Staging DB is postgres://{user}:{value}@{host}:5432/app, do not share.",
            f"Set DB_PASSWORD={value} before running the migrations.",
            f'the config has password: "{value}" for the {user} account',
            f"mysql://{user}:{value}@{host}/shop is the replica URL",
        ])  # fmt: skip
    if kind == "generic":
        return rng.choice([
            f"export SERVICE_API_KEY={value}",
            f'client_secret = "{value}"',
            f"Use Authorization: Bearer {value} for the internal API.",
            f"access_token: {value}",
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
        lambda: _r(rng, _HEX, 40),  # git SHA
        lambda: _r(rng, _HEX, rng.choice([7, 8, 12])),  # short SHA
        lambda: "-".join(_r(rng, _HEX, n) for n in (8, 4, 4, 4, 12)),  # UUID
        lambda: "#" + _r(rng, "0123456789ABCDEFabcdef", rng.choice([3, 6])),  # colour
        lambda: f"{rng.randint(0, 20)}.{rng.randint(0, 30)}.{rng.randint(0, 99)}",  # version
        lambda: "/".join(["src", rng.choice(["api", "core", "ui"]), rng.choice(
            ["client.py", "retry_policy.ts", "handlers/auth.go", "db/pool.rs"])]),
        lambda: f"{rng.choice(['token', 'secret', 'key'])}_{rng.choice(['count', 'len', 'ttl'])}",
        lambda: str(rng.randint(10, 10**9)),
        lambda: f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        lambda: f"localhost:{rng.randint(1024, 65535)}",
    ]  # fmt: skip
    return rng.choice(makers)()


@dataclass
class ScrubReport:
    secrets: int = 0
    leaked: int = 0
    harmless_tokens: int = 0
    harmless_redacted: int = 0
    leaked_examples: list[str] = field(default_factory=list)
    redacted_examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "secrets": self.secrets, "leaked": self.leaked,
            "harmless_tokens": self.harmless_tokens,
            "harmless_redacted": self.harmless_redacted,
            "harmless_redacted_rate": self.harmless_redacted / max(1, self.harmless_tokens),
            "leaked_examples": self.leaked_examples[:10],
            "redacted_examples": self.redacted_examples[:10],
        }  # fmt: skip


def run(
    n_secrets: int, n_harmless: int, code_lines: Iterable[str] = (), seed: int = 0
) -> ScrubReport:
    rng = random.Random(seed)
    scrubber = Scrubber()
    report = ScrubReport()
    for _ in range(n_secrets):
        kind, value = _secret(rng)
        note = _context(rng, kind, value)
        clean, _ = scrubber.scrub(note)
        report.secrets += 1
        if value in clean or (len(value) > 12 and value[4:-4] in clean):
            report.leaked += 1
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
