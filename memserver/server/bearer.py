"""Bearer tokens for the HTTP transports, and the scope each one pins.

A token is a shared secret, so it must be long enough not to be guessed: at least
`TOKEN_MIN` visible ASCII characters, no whitespace anywhere (a padded or blank value is
almost always a quoting mistake, and spaces cannot be sent in a bearer header). One rule
for `MEMSERVER_TOKEN` and for every token of a `--tokens` file.

A tokens file maps tokens to the scope their caller is pinned to (JSON or TOML):
`{"<token>": {"user": "alice"}}`. The verifier compares a request's token with every
listed one in constant time and puts the scope into the SDK's `AccessToken`; a tool
handler reads it back with `current_token_scope()` (the SDK runs each handler in the
context of the HTTP request that carried it).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import re
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken

from memserver.core.errors import ConfigError, MemserverError
from memserver.core.requests import Scope, check_scope

__all__ = [
    "TOKEN_MIN",
    "BearerTokens",
    "check_token",
    "current_token_scope",
    "load_token_file",
    "scope_from_pairs",
]

logger = logging.getLogger("memserver.server")

TOKEN_MIN = 32
_TOKEN = re.compile(rf"[\x21-\x7e]{{{TOKEN_MIN},4096}}")
_SCOPE_CLAIM = "memserver_scope"
MAKE_TOKEN = "python3 -c 'import secrets; print(secrets.token_urlsafe(32))'"


def check_token(token: str, where: str = "MEMSERVER_TOKEN") -> str:
    """`token` if it is a usable secret; a ConfigError naming `where` and the fix if not."""
    if _TOKEN.fullmatch(token):
        return token
    if not token.strip():
        problem = "is blank"
    elif token != token.strip():
        problem = "starts or ends with whitespace"
    elif len(token) < TOKEN_MIN:
        problem = f"is too short ({len(token)} characters)"
    else:
        problem = "holds whitespace, control or non-ASCII characters (or is over 4096)"
    raise ConfigError(
        f"the token in {where} {problem}: tokens must be at least {TOKEN_MIN} visible ASCII "
        "characters with no whitespace",
        hint=f"make one with {MAKE_TOKEN}, e.g. export MEMSERVER_TOKEN=$({MAKE_TOKEN}), and "
        "give clients the header 'Authorization: Bearer <token>'",
    )


def scope_from_pairs(pairs: Iterable[tuple[str, Any]], where: str) -> Scope:
    """Checked scope keys (user, session, agent), each given once, values non-blank strings."""
    items = list(pairs)
    keys = [k for k, _ in items]
    for key, value in items:
        if keys.count(key) > 1:
            raise ConfigError(f"{where}: scope key {key!r} is given twice", hint="give it once")
        if not isinstance(value, str):
            raise ConfigError(
                f"{where}: scope {key} must be a string, not {type(value).__name__}",
                hint=f'e.g. {{"{key}": "alice"}}',
            )
    try:
        return check_scope(items)
    except MemserverError as err:
        raise ConfigError(f"{where}: {err.message}", hint=err.hint) from err


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:  # json.loads would keep the last silently
            raise ValueError(f"a key is listed twice ({_fingerprint(key)[:16]}…)")
        seen[key] = value
    return seen


def _parse(path: Path, text: str) -> Any:
    as_json = path.suffix.lower() == ".json" or (
        path.suffix.lower() != ".toml" and text.lstrip().startswith("{")
    )
    if as_json:
        return json.loads(text, object_pairs_hook=_no_duplicates)
    return tomllib.loads(text)


def load_token_file(path: str | Path) -> dict[str, Scope]:
    """token → the scope it pins, from a JSON or TOML file; every entry checked."""
    path = Path(path).expanduser()
    hint = (
        'write {"<token>": {"user": "alice"}, ...} (JSON), or "<token>" = { user = "alice" } '
        "(TOML), one entry per token"
    )
    try:
        text = path.read_text(encoding="utf-8")
        data = _parse(path, text)
    except OSError as exc:
        raise ConfigError(f"cannot read the tokens file {path}: {exc.strerror}", hint=hint) from exc
    except (ValueError, tomllib.TOMLDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise ConfigError(f"the tokens file {path} is not valid: {exc}", hint=hint) from exc
    if not isinstance(data, dict) or not data:
        raise ConfigError(f"the tokens file {path} lists no tokens", hint=hint)
    table: dict[str, Scope] = {}
    for number, (token, scope) in enumerate(data.items(), 1):
        where = f"{path} (token {number})"
        check_token(token, where)
        if not isinstance(scope, dict):
            raise ConfigError(f"{where}: the scope must be a table of keys", hint=hint)
        table[token] = scope_from_pairs(scope.items(), where)
    if path.stat().st_mode & 0o077:
        logger.warning("the tokens file %s is readable by other users: chmod 600 it", path)
    return table


def _fingerprint(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class BearerTokens:
    """The SDK's token verifier over a table token → pinned scope (None: not pinned).

    Digests are compared, every one of them, so neither a token's length nor its place in
    the table shows in the time an answer takes. Each token is its own client (id from its
    digest), so the SDK keeps one token's sessions away from another's.
    """

    def __init__(self, table: Mapping[str, Scope | None]) -> None:
        self._table = [
            (hashlib.sha256(t.encode()).digest(), f"memserver-{_fingerprint(t)[:12]}", s)
            for t, s in table.items()
        ]

    async def verify_token(self, token: str) -> AccessToken | None:
        given = hashlib.sha256(token.encode()).digest()
        found: tuple[str, Scope | None] | None = None
        for digest, client_id, scope in self._table:
            if hmac.compare_digest(given, digest):
                found = (client_id, scope)
        if found is None:
            return None
        client_id, scope = found
        claims = None if scope is None else {_SCOPE_CLAIM: scope}
        return AccessToken(token=token, client_id=client_id, scopes=[], claims=claims)


def current_token_scope() -> Scope | None:
    """The scope the bearer token of the current request pins, or None when it pins none
    (stdio, no token, or the single MEMSERVER_TOKEN). An empty tuple pins project-wide."""
    token = get_access_token()
    if token is None or not token.claims or _SCOPE_CLAIM not in token.claims:
        return None
    return tuple((str(k), str(v)) for k, v in token.claims[_SCOPE_CLAIM])
