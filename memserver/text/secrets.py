"""Secrets and personal data out of a note before anything stores or embeds it.

Three detectors, merged: Yelp's detect-secrets plugins for provider token formats
(its hits are widened to the whole token, since a plugin may report only a prefix),
our own table for what it misses (assignments of secret-named keys, bearer headers,
passwords in connection strings, PEM private key blocks, newer provider prefixes),
and personal data: e-mail addresses, and phone numbers through `phonenumbers`.

What code memory needs is left alone: git SHAs, UUIDs, paths, versions, hex colours
and plain numbers carry no credential shape, and entropy-only detectors (which flag
exactly those) are not used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from memserver.text.terms import splice

__all__ = ["Redaction", "Scrubber"]

# detect-secrets plugins by class name; the entropy and public-IP detectors are left
# out on purpose (they flag SHAs, UUIDs and addresses that notes legitimately keep).
_PLUGINS = (
    "AWSKeyDetector", "ArtifactoryDetector", "AzureStorageKeyDetector", "BasicAuthDetector",
    "CloudantDetector", "DiscordBotTokenDetector", "GitHubTokenDetector", "GitLabTokenDetector",
    "IbmCloudIamDetector", "IbmCosHmacDetector", "JwtTokenDetector", "MailchimpDetector",
    "NpmDetector", "OpenAIDetector", "PrivateKeyDetector", "PypiTokenDetector",
    "SendGridDetector", "SlackDetector", "SoftlayerDetector", "SquareOAuthDetector",
    "StripeDetector", "TelegramBotTokenDetector", "TwilioKeyDetector",
)  # fmt: skip

_SECRET_KEY = (
    r"(?:secret|passw(?:or)?d|passwd|pwd|token|api[_-]?key|apikey|access[_-]?key|"
    r"private[_-]?key|client[_-]?secret|auth[_-]?key|credentials?)"
)
# (kind, pattern, group holding the secret)
_PATTERNS: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("private_key", re.compile(
        r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY"
        r"(?: BLOCK)?-----|\Z)", re.S), 0),
    ("api_key", re.compile(r"\bsk-(?:ant-|proj-|live-)?[A-Za-z0-9_-]{20,}"), 0),
    ("api_key", re.compile(r"\b(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"), 0),
    ("api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"), 0),
    ("api_key", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), 0),
    ("token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), 0),
    ("token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}"), 0),
    ("token", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), 0),
    ("token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), 0),
    ("token", re.compile(r"\bnpm_[A-Za-z0-9]{30,}"), 0),
    ("token", re.compile(r"\bpypi-[A-Za-z0-9_-]{40,}"), 0),
    ("aws_key", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b"), 0),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), 0),
    ("auth_header", re.compile(
        r"(?i)\b(?:authorization\s*[:=]\s*)?(?:bearer|basic|token)\s+"
        r"([A-Za-z0-9._~+/=-]{16,})"), 1),
    ("password", re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:([^\s@/]+)@"), 1),
    ("secret", re.compile(
        rf"(?i)[\w.-]*{_SECRET_KEY}[\w.-]*[\"']?\s*(?::|=|:=|=>)\s*([\"']?)"
        r"([^\s\"',;()\[\]{}<>]{8,})"), 2),
)  # fmt: skip
_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][\w.+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
)
_TOKEN_CHARS = re.compile(r"[^\s\"'`,;()<>\[\]{}]+")
_PLACEHOLDER = re.compile(
    r"(?i)^(?:<.*>|\$\{?.*|%\(.*|\{\{.*|x{4,}|\*{3,}|changeme|example.*|"
    r"your[_-].*|none|null|true|false|undefined|redacted.*|\[redacted.*)$"
)

_WORDS_CASED = re.compile(r"^[a-z]*(?:[A-Z][a-z]+)+$|^[A-Z]+$|^[a-z]+$")


@dataclass(frozen=True, slots=True)
class Redaction:
    kind: str  # api_key, token, password, private_key, jwt, email, phone, ...
    start: int
    end: int


def _looks_like_value(value: str, quoted: bool) -> bool:
    """A secret-named assignment's value, not code: `token = self.next()` is not a secret.

    A quoted literal is a secret unless it is a placeholder; a bare word needs a
    credential's shape (digits or symbols mixed in, or a long mixed-case run).
    """
    if _PLACEHOLDER.match(value) or value.startswith(("self.", "os.", "env.")):
        return False
    if quoted:
        return " " not in value
    has_digit = any(ch.isdigit() for ch in value)
    has_alpha = any(ch.isalpha() for ch in value)
    if value.isidentifier() and not has_digit:
        if "_" in value or _WORDS_CASED.match(value):
            return False  # a variable name: `password = userPassword`
        upper = sum(ch.isupper() for ch in value)
        lower = sum(ch.islower() for ch in value)
        return upper >= 3 and lower >= 3  # random mixed case
    is_path = "/" in value and not has_digit
    dotted_name = re.fullmatch(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+", value) is not None
    return has_alpha and not is_path and not dotted_name


@cache
def _detect_secrets() -> Any:
    """(scan_line, settings context factory), or None when detect-secrets is unusable."""
    try:
        from detect_secrets.core.scan import scan_line
        from detect_secrets.settings import transient_settings
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    config = {"plugins_used": [{"name": n} for n in _PLUGINS], "filters_used": []}
    return scan_line, lambda: transient_settings(config)


class Scrubber:
    def __init__(self, *, emails: bool = True, phones: bool = True, region: str = "US") -> None:
        self.emails = emails
        self.phones = phones
        self.region = region

    def find(self, text: str) -> list[Redaction]:
        """Non-overlapping spans to redact, in order."""
        found: list[Redaction] = []
        for kind, pattern, group in _PATTERNS:
            for m in pattern.finditer(text):
                start, end = m.span(group)
                if kind == "secret" and not _looks_like_value(m.group(2), quoted=bool(m.group(1))):
                    continue
                found.append(Redaction(kind, start, end))
        found.extend(self._plugins(text))
        if self.emails:
            for m in _EMAIL.finditer(text):
                if not m.group().lower().startswith("git@"):
                    found.append(Redaction("email", *m.span()))
        if self.phones:
            found.extend(self._phones(text))
        return _merge(found)

    def scrub(self, text: str) -> tuple[str, list[Redaction]]:
        """The text with every secret replaced by `[REDACTED:<kind>]`, and what was replaced."""
        spans = self.find(text)
        return splice(text, ((r.start, r.end, f"[REDACTED:{r.kind}]") for r in spans)), spans

    def _plugins(self, text: str) -> list[Redaction]:
        tools = _detect_secrets()
        if tools is None:
            return []
        scan_line, settings = tools
        found = []
        offset = 0
        with settings():
            for line in text.splitlines(keepends=True):
                for secret in scan_line(line.rstrip("\n")):
                    value = secret.secret_value or ""
                    at = line.find(value) if value else -1
                    if at < 0:
                        continue
                    for m in _TOKEN_CHARS.finditer(line):  # widen to the whole token
                        if m.start() <= at < m.end():
                            start, end = m.start(), max(m.end(), at + len(value))
                            found.append(
                                Redaction(_kind(secret.type), offset + start, offset + end)
                            )
                            break
                offset += len(line)
        return found

    def _phones(self, text: str) -> list[Redaction]:
        import phonenumbers

        found = []
        matcher = phonenumbers.PhoneNumberMatcher(
            text, self.region, leniency=phonenumbers.Leniency.VALID
        )
        for m in matcher:
            raw = m.raw_string
            # a formatted number, not a bare digit run (ids, timestamps, counts)
            if raw.startswith("+") or re.search(r"\d[\s.\-)]\s*\d", raw):
                found.append(Redaction("phone", m.start, m.end))
        return found


def _kind(detector_type: str) -> str:
    name = detector_type.lower()
    if "private key" in name:
        return "private_key"
    if "basic auth" in name:
        return "password"
    if "json web token" in name:
        return "jwt"
    return "token" if "token" in name else "api_key"


def _merge(spans: list[Redaction]) -> list[Redaction]:
    """Overlapping spans become one (the earliest-starting kind names it)."""
    out: list[Redaction] = []
    for r in sorted(spans, key=lambda r: (r.start, -r.end)):
        if out and r.start < out[-1].end:
            last = out[-1]
            out[-1] = Redaction(last.kind, last.start, max(last.end, r.end))
        else:
            out.append(r)
    return out
