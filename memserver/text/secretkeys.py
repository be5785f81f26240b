"""Is a key the name of a secret, and is the value assigned to it one?

A key names a secret by its last word (`db_password`, `apiKey`, `SECRET_KEY`,
`STRIPE_TOKEN_PROD`), or only mentions one (`token_cache_key`, `password_reset_timeout`),
or neither. A value named so is a secret unless it is a reference, a template, a
placeholder or a name (`${DB_PASSWORD}`, `%(password)s`, `changeme`, `ANTHROPIC_API_KEY`,
`read_password()`); one that is only mentioned must look machine-made, and ids and
digests (UUIDs, SHAs) never do.
"""

from __future__ import annotations

import math
import re
from collections import Counter

__all__ = [
    "FORMAT", "MENTIONS", "NONE", "PASSWORD", "PLACEHOLDER", "SECRET", "code_ish", "key_class",
    "mixed", "random_looking", "value_is_secret",
]  # fmt: skip

# what a key says of its value, in increasing order of certainty
NONE, MENTIONS, SECRET, PASSWORD = 0, 1, 2, 3


def mixed(value: str) -> bool:
    """A random token has a digit or both cases (`sk-circle-bounce` has neither)."""
    return any(c.isdigit() for c in value) or (value.lower() != value != value.upper())


_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_PASSWORDS = frozenset({"password", "passwd", "pwd", "passphrase", "pass", "passcode", "pw"})
_SECRETS = frozenset({"secret", "token", "apikey", "credential", "credentials", "creds"})
_GLUED = ("password", "passwd", "passphrase", "secret", "token", "apikey", "accesskey",
          "secretkey", "privatekey", "authkey")  # fmt: skip
_QUALIFIERS = frozenset(
    "api aws secret private access signing encryption master consumer app license licence client"
    " account service auth shared hmac storage subscription admin deploy webhook".split()
)
# words after the secret word that still name its value (`TOKEN_PROD`, `api_key_b64`)
_VALUE_SUFFIXES = frozenset(
    "value val str string bytes b64 base64 hex raw plain plaintext literal live prod production"
    " staging stage dev development test testing local ci old new current next previous"
    " primary secondary backup default override encoded".split()
)


# a key ending in one of these is about the secret, not the secret (`token_sha256`)
_ABOUT = frozenset(
    "id ids uuid guid sha sha1 sha256 sha512 md5 hash hashed digest checksum sum integrity etag"
    " commit rev revision fingerprint version name names env var type kind field label header"
    " url uri endpoint path file dir length len count ttl timeout expiry prefix suffix format"
    " pattern regex class mode example sample placeholder public".split()
)


def key_class(key: str) -> int:
    """What a key name says of its value: NONE; MENTIONS a secret (`token_value_hash`: only
    a random-looking value counts); names a SECRET; names a PASSWORD (any value counts, a
    passphrase too)."""
    words = [w.lower() for w in _WORDS.findall(key)]
    while len(words) > 1 and (words[-1] in _VALUE_SUFFIXES or words[-1].isdigit()):
        words.pop()
    if not words:
        return NONE
    last = words[-1]
    if last in _PASSWORDS or last.endswith(("password", "passwd", "passphrase")):
        return PASSWORD
    if last in _SECRETS or last.endswith(_GLUED):
        return SECRET
    if last == "key" and len(words) > 1 and words[-2] in _QUALIFIERS:
        return SECRET
    secretish = [
        w for i, w in enumerate(words)
        if w in _PASSWORDS or w in _SECRETS or w.endswith(_GLUED)
        or (w == "key" and i and words[i - 1] in _QUALIFIERS)
    ]  # fmt: skip
    return MENTIONS if secretish and last not in _ABOUT else NONE


# -------------------------------------------------------------------- values

# ids and digests: a key that only mentions a secret (`token_cache_key`) keeps them
_ID_SHAPE = re.compile(r"^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|"
                       r"[0-9a-f]{40}|[0-9a-f]{64}|[0-9a-f]{128})$", re.I)  # fmt: skip
PLACEHOLDER = re.compile(
    r"(?i)^(?:<[^<>]*>|\$\{?[\w.:-]*\}?|%s|\[[A-Z_]+\]|x{3,}|\*{3,}|\.{3,}|…|#+|•+|-+|"
    r"change[_-]?me|replace[_-]?me|example\S*|your[_-].*|my[_-]?(?:password|secret|token|key)|"
    r"none|null|nil|true|false|yes|no|on|off|undefined|empty|redacted.*|\[redacted.*|"
    r"dummy|fake|test|todo|fixme|placeholder|sample|secret|password|passwd|pass|token|pwd|"
    r"api[_-]?key)$|.*(?:\$\{|\{\{|%\(|«secret:|\[REDACTED)"
)
# templates and patterns: `%s`, `%(name)s`, `{name}`, Windows' `%VAR%`, a regex
FORMAT = re.compile(
    r"^%[-#0 +]*\d*[sdrfx]$|%\(\w+\)[sdr]|\{[\w.\[\]!:]*\}|^%[A-Z_][A-Z0-9_]*%"
    r"|\(\?|\[\^|\.\*|\\[dswb]"
)
_NAME_DIGITS = re.compile(r"^[A-Za-z]+(?:[_-][A-Za-z]+)*\d*$")
_NAME_LIKE = re.compile(r"^[_-]?[A-Za-z]+(?:[_-][A-Za-z]+)*$")  # `_password_reset_token`
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|^[A-Z]+$")
_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:(?:\.|::)[A-Za-z_]\w*)+$")
_PATHLIKE = re.compile(
    r"^(?:\.{0,2}/|~/|[A-Za-z]:\\)[\w.\-/\\]*$|^[a-z][a-z0-9+.-]*://[^@]*$"
    r"|\.(?:txt|json|pem|key|crt|ya?ml|env|cfg|conf|ini|toml|py|js|ts|sh)$"
)
_WORDISH = re.compile(r"[a-z]{4,}|[A-Z][a-z]{3,}")
_CASED_WORDS = re.compile(r"^[a-z]*(?:[A-Z][a-z]+)+$|^[A-Z]+$|^[a-z]+$")
_SYMBOLS = frozenset("!@#$%^&*~+=/")
_BARE_CODE = re.compile(r"^[A-Za-z0-9][\w+/=.@!#$%^&*~?-]*$")
_PHRASE_STARTS = ("enter ", "your ", "the ", "please ", "confirm ", "new ", "invalid ",
                  "wrong ", "incorrect ", "type ", "a ", "an ")  # fmt: skip


def _entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def random_looking(value: str) -> bool:
    """A machine-made token: long, a digit among letters, few word-like runs, high entropy."""
    if len(value) < 16 or any(c.isspace() for c in value) or _ENV_NAME.match(value):
        return False
    if not any(c.isdigit() for c in value) or not any(c.isalpha() for c in value):
        return False
    words = sum(len(w) for w in _WORDISH.findall(value))
    return words * 2 < len(value) and _entropy(value) >= 3.0


def code_ish(value: str, key: str) -> bool:
    """A reference, template or stand-in rather than a value."""
    return bool(
        PLACEHOLDER.match(value) or _ENV_NAME.match(value) or _DOTTED.match(value)
        or (_PATHLIKE.search(value) and not random_looking(value.replace("/", "")))
        or FORMAT.search(value)
        or value.lower() == key.lower().strip("$") or len(set(value)) == 1
        or (_NAME_LIKE.match(value) and key_class(value))  # a name: "_password_reset_token"
        or (_NAME_DIGITS.match(value) and key_class(value) >= SECRET)  # "password2", "new_token"
    )  # fmt: skip


def _bare_secret(value: str, cls: int, code: bool) -> bool:
    """An unquoted value: in code it must look like a credential, not a name."""
    if value.isdigit():
        return cls == PASSWORD and len(value) >= 4
    if not value[0].isalnum():  # `&args`, `*ptr`, YAML's `!Ref`, `&anchor`, `|`: not values
        return len(value) >= 6 and mixed(value) and any(c.isalpha() for c in value)
    if code and not _BARE_CODE.match(value):
        return False
    if not code:
        return True
    if value.isidentifier():
        if "_" in value or _CASED_WORDS.match(value):  # a name: `password = userPassword`
            return random_looking(value)
        if not any(c.isdigit() for c in value):
            return sum(c.isupper() for c in value) >= 3 and sum(c.islower() for c in value) >= 3
    return any(c.isalpha() for c in value) and (mixed(value) or any(c in _SYMBOLS for c in value))


def value_is_secret(key: str, value: str, quoted: bool, code: bool, cls: int) -> bool:
    """Is `value`, assigned to `key` (of `key_class` `cls`), a secret? `code`: a bare value
    is more likely a name than a literal (code, prose) than in a config file."""
    value = value.strip()
    if len(value) < 3 or cls == NONE or (not quoted and value.endswith(":")):
        return False
    if cls == MENTIONS:
        return random_looking(value) and not _ID_SHAPE.match(value)
    if code_ish(value, key):
        return False
    if any(c.isspace() for c in value):  # a passphrase, or a sentence about one
        low = value.lower()
        return (
            quoted and cls == PASSWORD and len(value.split()) <= 6
            and not low.startswith(_PHRASE_STARTS) and not value.endswith((".", ":", "?", "!"))
        )  # fmt: skip
    return quoted or _bare_secret(value, cls, code)
