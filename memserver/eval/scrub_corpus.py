"""The planted corpus of `memserver eval scrub`: secrets in the providers' shapes, harmless
high-entropy tokens, and the lines of each language that carry them.

Every value comes from a seeded RNG. A planted line records its value, its kind and its
file, so the benchmark can look for exactly that value in everything the index keeps.
"""

from __future__ import annotations

import base64
import random
import shutil
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

_ALNUM = string.ascii_letters + string.digits
_UPPER = string.ascii_uppercase + string.digits
_HEX = "0123456789abcdef"
_B64URL = _ALNUM + "-_"
_SYMBOLS = "!%^&*~+"
_WORDS = ("correct horse battery staple orbit lantern maple quartz ember velvet cobalt "
          "harbor tundra pixel meadow saffron").split()  # fmt: skip


def r_(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _with_digit(rng: random.Random, alphabet: str, n: int) -> str:
    """A random string that has a digit and a letter (as generated keys and passwords do)."""
    while True:
        value = r_(rng, alphabet, n)
        if any(c.isdigit() for c in value) and any(c.isalpha() for c in value):
            return value


def uuid(rng: random.Random) -> str:
    return "-".join(r_(rng, _HEX, n) for n in (8, 4, 4, 4, 12))


def b64(rng: random.Random, size: int) -> str:
    return base64.b64encode(rng.randbytes(size)).decode()


def integrity(rng: random.Random) -> str:
    return rng.choice(["sha512-" + b64(rng, 64), "sha256-" + b64(rng, 32), "sha1-" + b64(rng, 20)])


def survives(value: str, text: str) -> bool:
    """The value, or enough of it to recover (its middle), is still in `text`."""
    return value in text or (len(value) > 12 and value[4:-4] in text)


# (kind, maker): the providers' documented shapes
SECRET_MAKERS: dict[str, Callable[[random.Random], str]] = {
    "aws-access-key": lambda rng: "AKIA" + _with_digit(rng, _UPPER, 16),
    "aws-secret-key": lambda rng: _with_digit(rng, _ALNUM + "/+", 40),
    "github-token": lambda rng: rng.choice([
        rng.choice(["ghp_", "gho_", "ghs_"]) + _with_digit(rng, _ALNUM, 36),
        "github_pat_" + _with_digit(rng, _ALNUM, 22) + "_" + _with_digit(rng, _ALNUM, 59)]),
    "stripe-key": lambda rng: rng.choice(["sk_live_", "rk_live_"]) + _with_digit(rng, _ALNUM, 24),
    "slack-token": lambda rng: (f"{rng.choice(['xoxb', 'xoxp'])}-{r_(rng, string.digits, 12)}-"
                                f"{r_(rng, string.digits, 13)}-{_with_digit(rng, _ALNUM, 24)}"),
    "jwt": lambda rng: ("eyJ" + r_(rng, _B64URL, 30) + ".eyJ" + r_(rng, _B64URL, 40) + "."
                        + r_(rng, _B64URL, 43)),
    "google-api-key": lambda rng: "AIza" + _with_digit(rng, _B64URL, 35),
    "openai-key": lambda rng: "sk-proj-" + _with_digit(rng, _B64URL, 48),
    "anthropic-key": lambda rng: "sk-ant-api03-" + _with_digit(rng, _B64URL, 90),
    "gitlab-token": lambda rng: "glpat-" + _with_digit(rng, _B64URL, 20),
    "npm-token": lambda rng: "npm_" + _with_digit(rng, _ALNUM, 36),
    "password": lambda rng: _with_digit(rng, _ALNUM + _SYMBOLS, rng.randint(10, 20)),
    "secret": lambda rng: rng.choice([_with_digit(rng, _ALNUM, rng.randint(24, 40)),
                                      _with_digit(rng, _HEX, 32), _with_digit(rng, _HEX, 40)]),
}  # fmt: skip
PROVIDER_KINDS = tuple(k for k in SECRET_MAKERS if k not in ("password", "secret"))


def note_secret(rng: random.Random) -> tuple[str, str]:
    """(kind, value) for the notes run: every shape, passphrases and AWS secret keys too."""
    kind = rng.choice([*SECRET_MAKERS, "passphrase", "password", "secret"])
    if kind == "passphrase":
        return kind, " ".join(w.capitalize() for w in rng.sample(_WORDS, 4))
    return kind, SECRET_MAKERS[kind](rng)


# -------------------------------------------------------------------- planting


@dataclass(frozen=True, slots=True)
class Planted:
    kind: str
    value: str
    path: str
    line: str


@dataclass
class Plan:
    files: dict[str, str] = field(default_factory=dict)  # path → language
    secrets: list[Planted] = field(default_factory=list)
    harmless: list[Planted] = field(default_factory=list)


def copy_tree(repo: Path, root: Path) -> int:
    """Copy the files the walk would index (no index folders, virtualenvs or VCS data)."""
    from indexers.walk import walk

    walked = walk(repo, ignore_dirs=[str(repo / ".memserver")])
    for f in walked.files:
        target = root / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(f.abs_path, target)
    return len(walked.files)


# names of secret-bearing keys: password-named, secret-named, and a provider's usual name
_PASSWORD_NAMES = ("password db_password admin_password smtp_password mysql_root_password "
                   "redis_pwd passwd db_pass").split()  # fmt: skip
_SECRET_NAMES = (
    "api_key client_secret auth_token access_token secret_key webhook_secret "
    "signing_key private_token service_token encryption_key app_secret"
).split()
_PROVIDER_NAMES = {
    "aws-access-key": "aws_access_key_id", "aws-secret-key": "aws_secret_access_key",
    "github-token": "github_token", "stripe-key": "stripe_key", "slack-token": "slack_bot",
    "jwt": "session_jwt", "google-api-key": "maps_key", "openai-key": "openai",
    "anthropic-key": "anthropic", "gitlab-token": "gitlab_ci", "npm-token": "npm_publish",
}  # fmt: skip


def _name(rng: random.Random, kind: str) -> str:
    if kind in ("password", "passphrase"):
        return rng.choice(_PASSWORD_NAMES)
    if kind == "secret":
        return rng.choice(_SECRET_NAMES)
    # provider formats are found by shape; an AWS secret key by shape on an AWS line
    return _PROVIDER_NAMES[kind] if kind == "aws-secret-key" or rng.random() < 0.7 else "value"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w.capitalize() for w in rest)


# Each language: (path template, comment prefix, secret line makers, harmless line makers).
# A maker takes (name, value) and returns one line; `{}`-free so values go in verbatim.
Line = Callable[[str, str], str]
_PY: list[Line] = [
    lambda n, v: f'{n.upper()} = "{v}"',
    lambda n, v: f'CONFIG = {{"{n}": "{v}", "region": "eu-west-1"}}',
    lambda n, v: f'client = connect(host="db.internal", {n}="{v}")',
    lambda n, v: f"# {n}: {v}",
    lambda n, v: f'    fixture = {{"user": "ci", "{n}": "{v}"}}',
]
_JS: list[Line] = [
    lambda n, v: f"const {_camel(n)} = '{v}';",
    lambda n, v: f'export const settings = {{ {_camel(n)}: "{v}", retries: 3 }};',
    lambda n, v: f"// {n.upper()}={v}",
    lambda n, v: f'process.env.{n.upper()} = "{v}";',
]
_TS: list[Line] = [lambda n, v: f'const {_camel(n)}: string = "{v}";', *_JS[1:3]]
_GO: list[Line] = [
    lambda n, v: f'const {_camel(n)} = "{v}"',
    lambda n, v: f'var {_camel(n)} string = "{v}"',
    lambda n, v: f'\t{_camel(n)[0].upper() + _camel(n)[1:]}: "{v}",',
    lambda n, v: f'\tos.Setenv("{n.upper()}", "{v}")',
    lambda n, v: f"// {n}: {v}",
]
_RUST: list[Line] = [
    lambda n, v: f'const {n.upper()}: &str = "{v}";',
    lambda n, v: f'    let {n} = "{v}";',
    lambda n, v: f'static {n.upper()}: &str = "{v}";',
    lambda n, v: f"// {n} = {v}",
]
_YAML: list[Line] = [
    lambda n, v: f"  {n}: {v}",
    lambda n, v: f'  {n}: "{v}"',
    lambda n, v: f"        - name: {n.upper()}\n          value: {v}",
    lambda n, v: f"# {n}: {v}",
]
_JSON: list[Line] = [lambda n, v: f'  "{_camel(n)}": "{v}",', lambda n, v: f'  "{n}": "{v}",']
_TOML: list[Line] = [lambda n, v: f'{n} = "{v}"']
_INI: list[Line] = [lambda n, v: f"{n} = {v}", lambda n, v: f"{n}={v}"]
_PROPS: list[Line] = [lambda n, v: f"app.{n.replace('_', '.')}={v}"]
_SH: list[Line] = [
    lambda n, v: f"export {n.upper()}={v}",
    lambda n, v: f'{n.upper()}="{v}"',
]
_DOCKER: list[Line] = [
    lambda n, v: f"ENV {n.upper()}={v}",
    lambda n, v: f"ENV {n.upper()} {v}",
    lambda n, v: f"ARG {n.upper()}={v}",
]
_MD: list[Line] = [
    lambda n, v: f"Set `{n.upper()}={v}` before the first deploy.",
    lambda n, v: f'    {n} = "{v}"',
]
# shapes only a password takes: URLs, command lines, prose
_PASSWORD_LINES: dict[str, list[Line]] = {
    "python": [lambda n, v: f'DATABASE_URL = "postgresql://app:{v}@db.internal:5432/app"'],
    "javascript": [lambda n, v: f"const url = 'mongodb://svc:{v}@mongo.internal:27017/app';"],
    "go": [lambda n, v: f'\tdsn := "postgres://app:{v}@db:5432/app?sslmode=disable"'],
    "yaml": [lambda n, v: f"  url: redis://:{v}@cache.internal:6379/0"],
    "bash": [lambda n, v: f"mysql -u root -p{v} shop < dump.sql",
             lambda n, v: f"curl -u admin:{v} https://ci.example.com/api/json",
             lambda n, v: f"psql 'postgresql://app:{v}@db/app' -c 'select 1'"],
    "markdown": [lambda n, v: f"my password is {v}",
                 lambda n, v: f"machine api.example.com login deploy password {v}",
                 lambda n, v: f"Connect with `mysql -h db -u ops -p{v}`."],
}  # fmt: skip
_PHRASE_LINES: dict[str, list[Line]] = {
    "python": [lambda n, v: f'{n.upper()} = "{v}"'],
    "markdown": [lambda n, v: f'The admin password is "{v}".'],
    "yaml": [lambda n, v: f'  {n}: "{v}"'],
}
# harmless tokens, in lines that must stay as they are
_HARMLESS_MAKERS: dict[str, Callable[[random.Random], str]] = {
    "git-sha": lambda rng: r_(rng, _HEX, 40),
    "short-sha": lambda rng: r_(rng, _HEX, rng.choice([7, 12])),
    "uuid": uuid,
    "sha256": lambda rng: r_(rng, _HEX, 64),
    "sha512": lambda rng: r_(rng, _HEX, 128),
    "integrity": integrity,
    "base64": lambda rng: b64(rng, rng.randint(16, 90)),
    "env-name": lambda rng: rng.choice(["ANTHROPIC", "STRIPE", "GITHUB", "DB"]) + "_"
    + rng.choice(["API_KEY", "TOKEN", "PASSWORD", "SECRET"]),
    "placeholder": lambda rng: rng.choice(["${DB_PASSWORD}", "<token>", "changeme", "xxxx",
                                           "${API_KEY}", "<your-api-key>"]),
}  # fmt: skip
_HARMLESS_LINES: dict[str, list[Line]] = {  # n is the harmless kind
    "git-sha": [lambda n, v: f'COMMIT = "{v}"', lambda n, v: f"# fixed in {v}",
                lambda n, v: f'  "rev": "{v}",'],
    "short-sha": [lambda n, v: f"# see {v} for the revert"],
    "uuid": [lambda n, v: f'REQUEST_ID = "{v}"', lambda n, v: f"  id: {v}",
             lambda n, v: f'TOKEN_CACHE_KEY = "{v}"'],
    "sha256": [lambda n, v: f'expected_digest = "{v}"', lambda n, v: f"  checksum: sha256:{v}",
               lambda n, v: f'token_sha256 = "{v}"'],
    "sha512": [lambda n, v: f'ARCHIVE_SHA512 = "{v}"', lambda n, v: f"# sha512 {v}"],
    "integrity": [lambda n, v: f'  "integrity": "{v}",', lambda n, v: f"  integrity: {v}"],
    "base64": [lambda n, v: f'PAYLOAD_B64 = "{v}"', lambda n, v: f'  "data": "{v}",',
               lambda n, v: f'    expected = b64decode("{v}")'],
    "env-name": [lambda n, v: f'API_KEY_ENV = "{v}"', lambda n, v: f'  env_var: "{v}"'],
    "placeholder": [lambda n, v: f'password = "{v}"', lambda n, v: f"  token: {v}",
                    lambda n, v: f'api_key = "{v}"'],
}  # fmt: skip
_LANGUAGES: dict[str, tuple[str, list[Line]]] = {
    "python": ("src/planted/settings_{i}.py", _PY),
    "python-test": ("tests/planted/test_fixtures_{i}.py", _PY),
    "javascript": ("web/src/config{i}.js", _JS),
    "typescript": ("web/src/api/client{i}.ts", _TS),
    "go": ("cmd/server{i}/main.go", _GO),
    "rust": ("crates/core{i}/src/lib.rs", _RUST),
    "yaml": ("deploy/values-{i}.yaml", _YAML),
    "json": ("config/appsettings.{i}.json", _JSON),
    "toml": ("config/app{i}.toml", _TOML),
    "ini": ("config/db{i}.ini", _INI),
    "properties": ("src/main/resources/application-{i}.properties", _PROPS),
    "bash": ("scripts/bootstrap{i}.sh", _SH),
    "dockerfile": ("docker/api{i}/Dockerfile", _DOCKER),
    "markdown": ("docs/ops/runbook-{i}.md", _MD),
}
_PER_FILE = 24  # planted lines per file


def plant(root: Path, rng: random.Random, n_secrets: int, n_harmless: int) -> Plan:
    """Write planted files under `root` (round-robin over languages) and a few private key
    files, and return what went where."""
    plan = Plan()
    entries = [("secret", kind) for kind in _spread(rng, n_secrets)]
    entries += [("harmless", kind) for kind in _spread(rng, n_harmless, _HARMLESS_MAKERS)]
    rng.shuffle(entries)
    languages = list(_LANGUAGES)
    files: dict[str, list[str]] = {}
    for i, (what, kind) in enumerate(entries):
        lang = languages[(i // _PER_FILE) % len(languages)]
        template, makers = _LANGUAGES[lang]
        path = template.format(i=i // (_PER_FILE * len(languages)))
        plan.files[path] = lang
        lines = files.setdefault(path, [])
        if what == "secret":
            value, line = _secret_line(rng, kind, lang, makers)
            plan.secrets.append(Planted(kind, value, path, line))
        else:
            value = _HARMLESS_MAKERS[kind](rng)
            line = rng.choice(_HARMLESS_LINES[kind])(kind, value)
            plan.harmless.append(Planted(kind, value, path, line))
        lines.append(line)
    for path, lines in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for i in range(max(1, n_secrets // 100)):  # private keys: their files are never indexed
        body = [b64(rng, 48) for _ in range(6)]
        path = f"docs/keys/example-{i}.txt"
        pem = ["-----BEGIN RSA PRIVATE KEY-----", *body, "-----END RSA PRIVATE KEY-----"]
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("\n".join(["Example key:", *pem, ""]), encoding="utf-8")
        plan.files[path] = "text"
        plan.secrets.append(Planted("private-key", body[2], path, body[2]))
    return plan


def _spread(rng: random.Random, n: int, kinds: Iterable[str] | None = None) -> list[str]:
    """`n` kinds, every kind about equally often."""
    names = list(kinds) if kinds is not None else [*SECRET_MAKERS, "passphrase"]
    out = [names[i % len(names)] for i in range(n)]
    rng.shuffle(out)
    return out


def _secret_line(rng: random.Random, kind: str, lang: str, makers: list[Line]) -> tuple[str, str]:
    name = _name(rng, kind)
    base = "python" if lang == "python-test" else lang
    if kind == "passphrase":
        value = " ".join(w.capitalize() for w in rng.sample(_WORDS, 4))
        return value, rng.choice(_PHRASE_LINES.get(base, _PHRASE_LINES["python"]))(name, value)
    value = SECRET_MAKERS[kind](rng)
    if kind == "password" and base in _PASSWORD_LINES and rng.random() < 0.5:
        return value, rng.choice(_PASSWORD_LINES[base])(name, value)
    if kind == "aws-secret-key" and rng.random() < 0.3:
        return value, f"{_comment(base)} AWS secret access key: {value}"
    return value, rng.choice(makers)(name, value)


def _comment(lang: str) -> str:
    return {"javascript": "//", "typescript": "//", "go": "//", "rust": "//", "json": "//",
            "ini": ";", "markdown": "Note:"}.get(lang, "#")  # fmt: skip
