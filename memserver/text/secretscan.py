"""Where secrets sit in a text: the trigger-word prefilter and the detectors behind it.

Indexing scans every file, so a text is scanned in two steps: a few `str.find` calls for
trigger words over the lower-cased text pick the candidate lines (no detector fires on a
line without one), and only those lines meet the detectors. PEM blocks, which span lines,
have their own search. `detect` returns (kind, start, end, priority) spans; `merge` makes
them non-overlapping.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memserver.text.secretkeys import (
    PASSWORD,
    SECRET,
    code_ish,
    key_class,
    mixed,
    random_looking,
    value_is_secret,
)

__all__ = ["Found", "Redaction", "candidate_lines", "detect", "line_secrets", "merge"]


@dataclass(frozen=True, slots=True)
class Redaction:
    kind: str  # code: aws-access-key, github-token, password, …; notes: api_key, token, …
    start: int
    end: int


Found = tuple[str, int, int, int]  # kind, start, end, priority (lower wins a tie)

# -------------------------------------------------------------------- trigger words

# a hit of any of these (in the lower-cased text) makes its line a candidate
_NEEDLES = (
    "pwd", "secret", "token", "credential", "bearer", "authoriz", "mysql", "redis-cli", "curl",
    "docker login", "akia", "github_pat_", "glpat-", "xox", "xapp-", "hooks.slack.com", "aiza",
    "sk-", "hf_", "npm_", "pypi-", "eyj",
)  # fmt: skip
_KEY_QUALIFIER = re.compile(
    r"(?:api|aws|secret|private|access|signing|encryption|master|consumer|app|license|licence|"
    r"client|account|service|auth|shared|hmac|storage|subscription|admin|deploy|webhook|"
    r"write|read)[_.\- ]?$"
)
_PASS_ALONE = re.compile(r"pass[ \t]*[:=]")
_BASIC = re.compile(r"basic[ \t]+[a-z0-9+/]{12}")
_URL_AUTH = re.compile(r"://[^\s/@:]{0,256}:[^\s/@]{1,256}@")


def _pass_hit(low: str, text: str, i: int) -> bool:
    """password, passwd, passphrase; `db_pass`, `dbPass`, `--pass`, `sshpass`; not `pass`."""
    if low.startswith(("passw", "passphrase", "passcode"), i) or low.startswith("sshpass", i - 3):
        return True
    before = low[i - 1] if i else " "
    if before in "_-." or (before.isalnum() and text[i] == "P"):
        return True
    return not before.isalnum() and _PASS_ALONE.match(low, i) is not None


_CHECKED: tuple[tuple[str, Callable[[str, str, int], bool]], ...] = (
    ("pass", _pass_hit),
    ("key", lambda low, _text, i: _KEY_QUALIFIER.search(low, max(0, i - 16), i) is not None),
    ("basic", lambda low, _text, i: _BASIC.match(low, i) is not None),
    ("gh", lambda low, _text, i: low[i + 3 : i + 4] == "_"),
    ("k_", lambda low, _text, i: low.startswith(("live_", "test_"), i + 2)),
    ("://", lambda low, _text, i: _URL_AUTH.match(low, i) is not None),
)
_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}


def candidate_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line holding a trigger word, in order."""
    low = text.lower()
    if len(low) != len(text):  # a few characters lower-case to two: keep offsets exact
        low = text.translate(_ASCII_LOWER)
    lines: dict[int, int] = {}
    for needle in _NEEDLES:
        _scan(low, text, needle, None, lines)
    for needle, check in _CHECKED:
        _scan(low, text, needle, check, lines)
    return sorted(lines.items())


def _scan(
    low: str, text: str, needle: str, check: Callable[[str, str, int], bool] | None,
    lines: dict[int, int],
) -> None:  # fmt: skip
    i = low.find(needle)
    while i >= 0:
        if check is not None and not check(low, text, i):
            i = low.find(needle, i + 1)
            continue
        start = low.rfind("\n", 0, i) + 1
        end = low.find("\n", i)
        end = len(low) if end < 0 else end
        lines[start] = end
        i = low.find(needle, end)


# -------------------------------------------------------------------- provider formats


# (kind, what the lower-cased line must hold, pattern, check): the whole match is the secret
_PROVIDERS: tuple[tuple[str, str, re.Pattern[str], Callable[[str], bool] | None], ...] = (
    ("anthropic-key", "sk-", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), mixed),
    ("openai-key", "sk-", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"),
     mixed),
    ("stripe-key", "k_", re.compile(r"\b[rsp]k_(?:live|test)_[A-Za-z0-9]{16,}"), None),
    ("google-api-key", "aiza", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), None),
    ("huggingface-token", "hf_", re.compile(r"\bhf_[A-Za-z0-9]{30,}"), mixed),
    ("github-token", "gh", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"), None),
    ("github-token", "github_pat_", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{40,}"), None),
    ("gitlab-token", "glpat-", re.compile(r"\bglpat-[A-Za-z0-9_-]{20,}"), None),
    ("slack-token", "xox", re.compile(r"\bxox[abposre]-[A-Za-z0-9-]{10,}"), mixed),
    ("slack-token", "xapp-", re.compile(r"\bxapp-\d-[A-Za-z0-9-]{10,}"), None),
    ("slack-webhook", "hooks.slack.com",
     re.compile(r"(?<=hooks\.slack\.com/services/)T\w+/B\w+/\w+"), None),
    ("npm-token", "npm_", re.compile(r"\bnpm_[A-Za-z0-9]{30,}"), None),
    ("pypi-token", "pypi-", re.compile(r"\bpypi-[A-Za-z0-9_-]{40,}"), None),
    ("aws-access-key", "a", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), None),
    ("jwt", "eyj", re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),
     None),
)  # fmt: skip
# a 40-character AWS secret access key, on a line that speaks of AWS or a secret
_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AUTH_HEADER = re.compile(
    r"\b([Bb]earer|BEARER|[Bb]asic|BASIC|Token)[ \t]+([A-Za-z0-9._~+/-]{16,}=*)"
)
# Lengths are bounded (and possessive where a cut value would be wrong) so that no line,
# however long or repetitive, costs more than linear time.
_URL_PASSWORD = re.compile(
    r"\b[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/@\"'<>]{0,256}:([^\s@/\"'<>]{1,256})@"
)
_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(.{0,16384}?)"
    r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)", re.S,
)  # fmt: skip
_PEM_LINE = re.compile(r"[A-Za-z0-9+/=]{16,}|[A-Za-z-]+: .*")  # base64, or Proc-Type: headers
_BASE64_RUN = re.compile(r"[A-Za-z0-9+/=]{16,}")

# name = value, name: value, name := value, name => value, with an optional type before `=`
_NAME = re.compile(r"(?<![\w$.\-])[A-Za-z_$][\w$.\-]*")
_NAME_HINTS = ("pass", "pwd", "secret", "token", "key", "cred")
# after a name: a closing quote or subscript, a type (`: &str`, Go's ` string`), the operator
_ASSIGN = re.compile(
    r"(?P<kq>[\"'`]?\]?)"
    r"(?P<type>(?:[ \t]*:[ \t]*[&\w<>\[\]., *']{1,40}?|[ \t]+[\w.*\[\]]{1,30}?)"
    r"(?=[ \t]*=(?![=>]|~[ \t])))?"  # `=~ /re/` matches; `X=~s3cret` assigns
    r"[ \t]*(?P<op>:=|=>|\?=|=(?![=>]|~[ \t])|:(?![:=]))[ \t]*"
    r"(?:[rbuf]?(?P<q>[\"'`])(?P<qv>(?:\\.|(?!(?P=q))[^\\\n]){0,4096}+)(?P=q)"
    r"|(?P<bv>[^\s\"'`,;()\[\]{}<>]{1,1024}+)(?![^\s\"'`,;()\[\]{}<>])"
    r"(?P<tail>[ \t]*[(\[]|::)?)"
)
# ("API_KEY", "value"): Setenv, define, setProperty, headers.set
_PAIR = re.compile(
    r"[\"'`](?P<key>[A-Za-z_$][\w$.\-]*)[\"'`][ \t]*,[ \t]*[rbuf]?"
    r"(?P<q>[\"'`])(?P<qv>(?:\\.|(?!(?P=q))[^\\\n]){0,4096}+)(?P=q)"
)
# Dockerfile `ENV KEY value`, csh `setenv KEY value`
_SPACED = re.compile(
    r"^[ \t]*(?:ENV|ARG|setenv)[ \t]+(?P<key>[A-Za-z_][\w.\-]*)[ \t]+"
    r"(?:(?P<q>[\"'])(?P<qv>[^\"'\n]*)(?P=q)|(?P<bv>[^\s=\"'][^\s]*))"
)
_NETRC = re.compile(r"(?:^|[ \t])(?:machine|login)[ \t]+\S+[ \t]")
_NETRC_PASSWORD = re.compile(r"(?:^|[ \t])(?P<key>password|passwd|account)[ \t]+(?P<bv>\S+)")
# Kubernetes / compose / ECS env lists: `name: DB_PASSWORD` then `value: …`
_NAME_VALUE = re.compile(
    r"\bname[\"']?[ \t]*[:=][ \t]*[\"']?(?P<key>[A-Za-z_][\w.\-]*)[\"']?[ \t]*,?\s*"
    r"[\"']?value[\"']?[ \t]*[:=][ \t]*"
    r"(?:(?P<q>[\"'])(?P<qv>[^\"'\n]*)(?P=q)|(?P<bv>[^\s\"',;}]+))"
)
# `my password is hunter2`, `the admin password is "…"`, `api key: 5f4d…`
_PROSE = re.compile(
    r"(?i)\b(?P<key>pass(?:word|wd|phrase|code)|pwd|token|secret|(?:api|access|auth|bearer|bot"
    r"|deploy|refresh|session|secret|service|app|client|admin|root|master|ci)[ _-]?(?:token|key"
    r"|secret))s?(?:[ \t]+(?:for|of|on|to)[ \t]+(?:the[ \t]+)?[\w.@:/-]{1,100})?"
    r"(?:[ \t]+(?:is|was|are|becomes|(?:is[ \t]+)?set[ \t]+to|(?:would|will)[ \t]+be)"
    r"(?:[ \t]+(?:now|still))?[ \t]+|[ \t]*[:=][ \t]*)"
    r"(?:(?P<q>[\"'`])(?P<qv>(?:(?!(?P=q))[^\n]){1,80})(?P=q)|“(?P<cv>[^”\n]{1,80})”"
    r"|(?P<bv>[^\s\"'`“]+))"
)
_CLI = (  # command lines with a password argument: (what the line must hold, pattern)
    ("mysql", re.compile(r"\bmysql(?:dump|admin|import|sh|slap|check)?\b[^\n]{0,300}?[ \t]-p"
                         r"(?:(?P<q>[\"'])(?P<qv>[^\"'\n]+)(?P=q)|(?P<bv>[^\s\"'-]\S*))")),
    ("sshpass", re.compile(r"\bsshpass[ \t]+-p[ \t]*(?P<bv>[^\s\"'-]\S*)")),
    ("redis-cli", re.compile(r"\bredis-cli\b[^\n]{0,300}?[ \t]-a[ \t]+(?P<bv>[^\s\"'-]\S*)")),
    ("docker", re.compile(r"\bdocker[ \t]+login\b[^\n]{0,300}?[ \t]-p[ \t]+(?P<bv>[^\s\"'-]\S*)")),
    ("curl", re.compile(
        r"\bcurl\b[^\n]{0,400}?[ \t](?:-u|--user)[ \t]+[\"']?[^\s:\"']+:(?P<bv>[^\s\"'@]+)")),
)  # fmt: skip
_LONG_OPTION = re.compile(
    r"(?<![\w-])--(?P<key>[A-Za-z][\w-]*)(?:=|[ \t]+)"
    r"(?:(?P<q>[\"'])(?P<qv>[^\"'\n]+)(?P=q)|(?P<bv>[^\s\"'-]\S*))"
)  # fmt: skip


def _value_span(m: re.Match[str]) -> tuple[int, int, str, bool]:
    if "q" in m.re.groupindex and m.group("q") is not None:
        return (*m.span("qv"), m.group("qv"), True)
    if "cv" in m.re.groupindex and m.group("cv") is not None:
        return (*m.span("cv"), m.group("cv"), True)
    return (*m.span("bv"), m.group("bv"), False)


def _kind(cls: int) -> str:
    return "password" if cls == PASSWORD else "secret"


# -------------------------------------------------------------------- one line


def _assignments(line: str, code: bool) -> Iterator[Found]:
    """Every name on the line that speaks of a secret, and the value assigned to it (names
    inside a string count too: "Server=db;Password=…")."""
    for name in _NAME.finditer(line):
        key = name.group()
        low = key.lower()
        if not any(h in low for h in _NAME_HINTS) or not (cls := key_class(key)):
            continue
        m = _ASSIGN.match(line, name.end())
        if m is None or (m.group("type") and (m.group("kq") or not code)):
            continue  # `type="password" name=…` is HTML, not a typed declaration
        if "]" in m.group("kq") and m.group("op") != "=":
            continue  # `input[type=password]:focus`, `token[1:]`
        start, end, value, quoted = _value_span(m)
        code_tail = not quoted and m.group("tail") is not None
        if not code_tail and value_is_secret(key, value, quoted, code, cls):
            yield _kind(cls), start, end, 2


def _keyed(line: str, code: bool) -> Iterator[Found]:
    """The other shapes of a secret-named key and its value."""
    matches: list[re.Match[str]] = []
    if "," in line:
        matches += _PAIR.finditer(line)
    if "--" in line:
        matches += _LONG_OPTION.finditer(line)
    if line.lstrip().startswith(("ENV", "ARG", "setenv")):
        matches += _SPACED.finditer(line)
    if _NETRC.search(line):
        matches += _NETRC_PASSWORD.finditer(line)
    for m in matches:
        key = m.group("key")
        cls = key_class(key)
        start, end, value, quoted = _value_span(m)
        as_code = code or m.re is not _SPACED
        if m.re is _PAIR:  # ("token", "session") may be a list of names: judge it as code
            quoted = False
        if cls and value_is_secret(key, value, quoted, as_code, cls):
            yield _kind(cls), start, end, 2


def _spoken(line: str) -> Iterator[Found]:
    """Prose and command lines: `my password is hunter2`, `mysql -pRootPass99`."""
    for m in _PROSE.finditer(line):
        start, end, value, quoted = _value_span(m)
        if not quoted:
            trimmed = value.rstrip(".,;:!?)]}")
            end -= len(value) - len(trimmed)
            value = trimmed
        cls = max(SECRET, key_class(m.group("key").replace(" ", "_")))
        if value_is_secret(m.group("key"), value, quoted, True, cls):
            yield _kind(cls), start, end, 3
    low = line.lower()
    for needle, pattern in _CLI:
        if needle not in low:
            continue
        for m in pattern.finditer(line):
            start, end, value, quoted = _value_span(m)
            if not quoted:  # `mysql -pS3cret`.: the quote and the full stop stay
                trimmed = value.rstrip("`'\".,;)")
                end -= len(value) - len(trimmed)
                value = trimmed
            if not code_ish(value, "password"):
                yield "password", start, end, 1


def _formats(line: str) -> Iterator[Found]:
    low = line.lower()
    for kind, needle, pattern, check in _PROVIDERS:
        if needle not in low:
            continue
        for m in pattern.finditer(line):
            if check is None or check(m.group()):
                yield kind, m.start(), m.end(), 0
    if "aws" in low or "secret" in low:
        for m in _AWS_SECRET.finditer(line):
            v = m.group()
            if v.lower() != v != v.upper() and (mixed(v) or "/" in v or "+" in v):
                yield "aws-secret-key", m.start(), m.end(), 0
    for m in _URL_PASSWORD.finditer(line) if "://" in line else ():
        if not code_ish(m.group(1), "password"):
            yield "password", *m.span(1), 1
    if "bearer" not in low and "basic" not in low and "Token" not in line:
        return
    for m in _AUTH_HEADER.finditer(line):
        value = m.group(2)
        if any(c.isdigit() for c in value) or value.endswith("=") or random_looking(value):
            yield ("password" if m.group(1).lower() == "basic" else "secret"), *m.span(2), 1


def line_secrets(line: str, code: bool) -> Iterator[Found]:
    yield from _formats(line)
    yield from _assignments(line, code)
    yield from _keyed(line, code)
    yield from _spoken(line)


def _following(text: str, start: int, end: int, code: bool) -> Iterator[Found]:
    """`name: DB_PASSWORD` with its `value:` on the next line (Kubernetes, compose, ECS)."""
    if "name" not in text[start:end]:
        return
    nxt = text.find("\n", end + 1)
    region = text[start : len(text) if nxt < 0 else nxt]
    for m in _NAME_VALUE.finditer(region):
        key = m.group("key")
        cls = key_class(key)
        s, e, value, quoted = _value_span(m)
        if cls and value_is_secret(key, value, quoted, code, cls):
            yield _kind(cls), start + s, start + e, 2


def _pem_blocks(text: str, whole: bool) -> Iterator[Found]:
    """Private key blocks: the base64 of their body, line by line (BEGIN/END lines kept;
    one line for a key in a JSON string), or `whole` blocks."""
    if "-----BEGIN" not in text:
        return
    for m in _PEM.finditer(text):
        runs = []
        pos = m.start(1)
        for part in m.group(1).split("\n"):
            stripped = part.strip()
            if stripped and m.end(1) == len(text) and not _PEM_LINE.fullmatch(stripped):
                break  # no END line: the key ends where its base64 does
            runs += [(pos + r.start(), pos + r.end()) for r in _BASE64_RUN.finditer(part)]
            pos += len(part) + 1
        if whole and runs:
            yield "private-key", m.start(), m.end(), 0
        elif not whole:  # code that merely names the markers has no key material: no runs
            yield from (("private-key", start, end, 0) for start, end in runs)


def detect(text: str, *, code: bool, whole_pem: bool = False) -> list[Found]:
    found: list[Found] = list(_pem_blocks(text, whole_pem))
    for start, end in candidate_lines(text):
        line = text[start:end]
        found += ((k, start + s, start + e, p) for k, s, e, p in line_secrets(line, code))
        found += _following(text, start, end, code)
    return found


def merge(found: list[Found]) -> list[Redaction]:
    """Overlapping spans become one, named by the earliest-starting (then surest) kind."""
    out: list[Redaction] = []
    for kind, start, end, _ in sorted(found, key=lambda f: (f[1], f[3], -f[2])):
        if out and start < out[-1].end:
            last = out[-1]
            out[-1] = Redaction(last.kind, last.start, max(last.end, end))
        else:
            out.append(Redaction(kind, start, end))
    return out
