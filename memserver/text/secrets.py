"""Secrets out of notes and indexed code before anything stores, embeds or sends them.

One detector set, two callers:

- `Scrubber.scrub(note)` replaces each secret (and, unless turned off, e-mail addresses
  and phone numbers) with `[REDACTED:<kind>]`;
- `mask_code(text, language)` replaces only the secret *value* in a file with
  `«secret:<kind>»`, keeping every line and the rest of each line (a PEM block keeps its
  BEGIN/END lines), so line numbers, spans and the code around the value stay as written.

The detectors (`secretscan`, behind a trigger-word prefilter fast enough for every indexed
file): provider token formats (AWS, GitHub, Stripe, Slack, Google, JWT, …); values assigned
to secret-named keys in any language or config format (`secretkeys` judges the key and the
value); passwords in connection strings, on command lines and in prose ("my password is
hunter2"); bearer headers; PEM private key blocks. Notes also get Yelp's detect-secrets
plugins (too slow for every line of a code base), e-mail addresses and phone numbers.
This module is the sole detect-secrets and phonenumbers importer.

What code memory needs is left alone: git SHAs, UUIDs, hex digests, lockfile integrity
hashes, base64 data not assigned to a secret-named key, env var *names*, placeholders,
hex colours, versions and paths. Entropy alone never flags a value: only a value assigned
to a secret-named key, or in a provider's format, is a secret.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from typing import Any

from memserver.text.secretkeys import FORMAT, PLACEHOLDER
from memserver.text.secretscan import Redaction, detect, merge
from memserver.text.terms import splice

__all__ = ["Redaction", "Scrubber", "mask_code", "masked_counts"]


# Where a bare word after `password =` is the password itself: config formats, shell,
# Dockerfiles. Elsewhere (code, Markdown, text) it is more likely a name
# (`password = read_password()`), and a bare value must look like a credential.
_LITERAL_LANGUAGES = frozenset({"yaml", "toml", "bash", "json"})
_LITERAL_FILES = re.compile(
    r"(?i)(?:^|/)(?:dockerfile|containerfile)[^/]*$|(?:^|/)\.env[^/]*$|(?:^|/)[._]?netrc$"
    r"|\.(?:ini|cfg|conf|properties|env|tfvars|hcl|tf|service|sh)$"
)


# -------------------------------------------------------------------- code


def mask_code(text: str, language: str = "", path: str = "") -> tuple[str, list[Redaction]]:
    """`text` with each secret value replaced by `«secret:<kind>»`, and what was replaced.

    Only values go; every line stays (the masked text has as many lines, and each line
    keeps the code around its value). `language` (a name from `indexers.languages`) and
    `path` say whether a bare word after `password =` is the password itself (a config
    file, a script, a Dockerfile) or more likely a name (code, prose).
    """
    literal = language in _LITERAL_LANGUAGES or bool(path and _LITERAL_FILES.search(path))
    spans = merge(detect(text, code=not literal))
    if not spans:
        return text, []
    return splice(text, ((r.start, r.end, f"«secret:{r.kind}»") for r in spans)), spans


def masked_counts(spans: list[Redaction]) -> tuple[tuple[str, int], ...]:
    """(kind, count) pairs, by kind: what an index may keep about what it masked."""
    return tuple(sorted(Counter(r.kind for r in spans).items()))


# -------------------------------------------------------------------- notes

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
# notes name what they redact with the coarser kinds they always had
_NOTE_KINDS = {
    "aws-access-key": "aws_key", "aws-secret-key": "aws_key", "private-key": "private_key",
    "jwt": "jwt", "password": "password", "secret": "secret",
}  # fmt: skip
_EMAIL = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][\w.+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"
)
_TOKEN_CHARS = re.compile(r"[^\s\"'`,;()<>\[\]{}]+")


def _note_kind(kind: str) -> str:
    if kind in _NOTE_KINDS:
        return _NOTE_KINDS[kind]
    return "token" if kind.endswith(("-token", "-webhook")) else "api_key"


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
        found = [(_note_kind(k), s, e, p) for k, s, e, p in detect(text, code=True,
                                                                    whole_pem=True)]  # fmt: skip
        ours = [(s, e) for _, s, e, _ in found]
        found += (  # a plugin's span is widened to its token: ours, where we have one, are exact
            (r.kind, r.start, r.end, 4) for r in self._plugins(text)
            if not any(s < r.end and r.start < e for s, e in ours)
        )  # fmt: skip
        if self.emails:
            for m in _EMAIL.finditer(text):
                if not m.group().lower().startswith("git@") and not _in_url(text, m.start()):
                    found.append(("email", *m.span(), 5))
        if self.phones:
            found += ((r.kind, r.start, r.end, 5) for r in self._phones(text))
        return merge(found)

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
                    if PLACEHOLDER.match(value) or FORMAT.fullmatch(value):
                        continue  # postgres://{user}:{password}@{host}: a template
                    span = _plugin_span(line, value, secret.type)
                    if span is not None:
                        kind = _plugin_kind(secret.type)
                        found.append(Redaction(kind, offset + span[0], offset + span[1]))
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


def _in_url(text: str, at: int) -> bool:
    """An address inside a URL is its user and host (`postgres://app:pw@db/app`)."""
    begin = max(text.rfind(" ", 0, at), text.rfind("\n", 0, at), 0)
    return "://" in text[begin:at]


def _plugin_span(line: str, value: str, detector: str) -> tuple[int, int] | None:
    """Where a plugin's secret sits: the whole token around it (a plugin may report only a
    prefix), except a URL's password, which goes alone (user, host and database stay)."""
    if "basic auth" in detector.lower():
        at = line.find(f":{value}@")
        return None if at < 0 else (at + 1, at + 1 + len(value))
    at = line.find(value)
    if at < 0:
        return None
    for m in _TOKEN_CHARS.finditer(line):
        if m.start() <= at < m.end():
            return m.start(), max(m.end(), at + len(value))
    return None


def _plugin_kind(detector_type: str) -> str:
    name = detector_type.lower()
    if "private key" in name:
        return "private_key"
    if "basic auth" in name:
        return "password"
    if "json web token" in name:
        return "jwt"
    return "token" if "token" in name else "api_key"
