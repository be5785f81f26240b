"""The secret detectors: every shape they must mask, every shape they must keep, the
prefilter they run behind, and the two formats (notes and code)."""

from __future__ import annotations

import random

import pytest

from memserver.eval import scrub_corpus as corpus
from memserver.text.secrets import Scrubber, mask_code
from memserver.text.secretscan import candidate_lines, line_secrets

RNG = random.Random(5)
AKIA = "AKIA" + "Q7DL2XVB9TMK4PWC"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYz9EXAMPLEK"
GHP = "ghp_" + "Q7dL2xVb9TmK4pWc8RnZ3fHs6YjA1gEu5iOk"
PAT = "github_pat_" + "11ABCDEFG0123456789abc_" + "x9" * 29 + "Z"
STRIPE = "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc"
RK = "rk_live_" + "51Hb4kLmQ9xW2vR7tY1uI8oP"
SLACK = "xoxb-123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvW1"
JWT = corpus.SECRET_MAKERS["jwt"](RNG)
GOOGLE = "AIza" + "SyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"
HEX32 = "5f4dcc3b5aa765d61d8327deb882cf99"


def masked(text: str, language: str = "python", path: str = "") -> str:
    return mask_code(text, language, path)[0]


# -------------------------------------------------------------------- what goes


@pytest.mark.parametrize(
    ("language", "line", "secret", "kind"),
    [
        ("python", f'AWS_ACCESS_KEY_ID = "{AKIA}"', AKIA, "aws-access-key"),
        ("python", f'aws_secret_access_key = "{AWS_SECRET}"', AWS_SECRET, "aws-secret-key"),
        ("python", f"# AWS secret key {AWS_SECRET} (staging)", AWS_SECRET, "aws-secret-key"),
        ("python", f'token = "{GHP}"', GHP, "github-token"),
        ("python", f"export GH={PAT}", PAT, "github-token"),
        ("javascript", f"const key = '{STRIPE}';", STRIPE, "stripe-key"),
        ("typescript", f'const restricted: string = "{RK}";', RK, "stripe-key"),
        ("go", f'\tbot := "{SLACK}"', SLACK, "slack-token"),
        ("rust", f'const SESSION: &str = "{JWT}";', JWT, "jwt"),
        ("json", f'{{"maps": "{GOOGLE}"}}', GOOGLE, "google-api-key"),
        ("python", 'DSN = "postgresql://app:S3cr3tPw@db.internal:5432/app"', "S3cr3tPw",
         "password"),
        ("python", 'password = "hunter2x"', "hunter2x", "password"),
        ("python", 'conn = "Server=db;User Id=sa;Password=Secr3t!;"', "Secr3t!", "password"),
        ("python", 'client_secret: str = "Zk3LmQ9xW2vR7tY1uI8oP5aS"', "Zk3LmQ9xW2vR7tY1uI8oP5aS",
         "secret"),
        ("python", 'connect(host="db", db_password="pa55-w0rd")', "pa55-w0rd", "password"),
        ("javascript", "export const cfg = { apiKey: 'x9Lk2Mn8Pq4Rs6Tv' };", "x9Lk2Mn8Pq4Rs6Tv",
         "secret"),
        ("go", 'var dbPassword string = "Tr0ub4dor&3"', "Tr0ub4dor&3", "password"),
        ("go", '\tos.Setenv("API_KEY", "k3J9sLm2Qx8Vb7Nz4Rt6Yp1W")', "k3J9sLm2Qx8Vb7Nz4Rt6Yp1W",
         "secret"),
        ("go", '\tPassword: "pa55w0rd!",', "pa55w0rd!", "password"),
        ("rust", 'const API_TOKEN: &str = "q8Wz3Lk9Pm2Xv7Rt4Yb6Nc1D";', "q8Wz3Lk9Pm2Xv7Rt4Yb6Nc1D",
         "secret"),
        ("java", 'private static final String API_KEY = "AbC123xyz789QwErTy456";',
         "AbC123xyz789QwErTy456", "secret"),
        ("php", "define('DB_PASSWORD', 'wpS3cretPass');", "wpS3cretPass", "password"),
        ("yaml", "  password: swordfish", "swordfish", "password"),
        ("yaml", f"  api_key: {HEX32}", HEX32, "secret"),
        ("toml", 'token = "f8a7c6e5d4b3a2918273645546372819"', "f8a7c6e5d4b3a2918273645546372819",
         "secret"),
        ("text", "db.password=Sup3r$ecret", "Sup3r$ecret", "password"),
        ("text", "app.passwd=9%WP%h8Y!xGWWNCj%sA", "9%WP%h8Y!xGWWNCj%sA", "password"),
        ("bash", "export DB_PASSWORD=hunter2secret", "hunter2secret", "password"),
        ("bash", "mysql -u root -pRootPassNote99 shop", "RootPassNote99", "password"),
        ("bash", "curl -u admin:Adm1nPass https://ci.example.com", "Adm1nPass", "password"),
        ("bash", "redis-cli -h cache -a R3disPass9 ping", "R3disPass9", "password"),
        ("bash", "deploy --api-key=Qz8Lm3Kx9Wv2Rt7Y", "Qz8Lm3Kx9Wv2Rt7Y", "secret"),
        ("markdown", "machine api.example.com login bob password b0bsPassw0rd", "b0bsPassw0rd",
         "password"),
        ("markdown", "my password is hunter2", "hunter2", "password"),
        ("markdown", 'the admin password is "Correct Horse Battery Staple"',
         "Correct Horse Battery Staple", "password"),
        ("markdown", f"api key: {HEX32}", HEX32, "secret"),
        ("python", 'auth = {"Authorization": "Bearer abcDEF1234567890ghiJKL"}',
         "abcDEF1234567890ghiJKL", "secret"),
    ],
)  # fmt: skip
def test_each_secret_shape_is_masked_in_place(
    language: str, line: str, secret: str, kind: str
) -> None:
    text, found = mask_code(line, language)
    assert secret not in text and f"«secret:{kind}»" in text, text
    assert text == line.replace(secret, f"«secret:{kind}»")  # only the value went
    assert [r.kind for r in found] == [kind]


@pytest.mark.parametrize(
    ("path", "text", "secret"),
    [
        ("Dockerfile", "FROM python:3.12\nENV DB_PASSWORD hunter2secret\n", "hunter2secret"),
        ("docker/api/Dockerfile", "ARG NPM_TOKEN=s3cr3tNpmValue42\n", "s3cr3tNpmValue42"),
        ("config/db.ini", "[db]\npassword = s3cret-Pw\n", "s3cret-Pw"),
        ("app.properties", "spring.datasource.password: Pa55word\n", "Pa55word"),
        ("k8s/deploy.yaml", "env:\n  - name: DB_PASSWORD\n    value: s3cr3t-pass\n",
         "s3cr3t-pass"),
    ],
)  # fmt: skip
def test_config_files_take_bare_values_literally(path: str, text: str, secret: str) -> None:
    out, found = mask_code(text, "yaml" if path.endswith(".yaml") else "text", path)
    assert secret not in out and len(found) == 1
    assert out.count("\n") == text.count("\n")


def test_a_private_key_keeps_its_lines_and_markers() -> None:
    body = [corpus.b64(RNG, 48) for _ in range(3)]
    text = "\n".join(["key = '''", "-----BEGIN RSA PRIVATE KEY-----", *body,
                      "-----END RSA PRIVATE KEY-----", "'''", "x = 1"])  # fmt: skip
    out, found = mask_code(text, "python")
    assert out.splitlines() == [
        "key = '''", "-----BEGIN RSA PRIVATE KEY-----", *["«secret:private-key»"] * 3,
        "-----END RSA PRIVATE KEY-----", "'''", "x = 1",
    ]  # fmt: skip
    assert [r.kind for r in found] == ["private-key"] * 3
    escaped = f'{{"key": "-----BEGIN PRIVATE KEY-----\\n{body[0]}\\n-----END PRIVATE KEY-----\\n"}}'
    assert body[0][2:-2] not in masked(escaped, "json")


def test_masking_keeps_every_line_and_the_code_around_the_value() -> None:
    lines = [f'KEY_{i} = "{corpus.SECRET_MAKERS["github-token"](RNG)}"  # note {i}'
             for i in range(50)]  # fmt: skip
    lines[10:10] = ["def f(x):", "    return x", ""]
    text = "\n".join(lines) + "\n"
    out, found = mask_code(text, "python")
    assert out.count("\n") == text.count("\n") and len(found) == 50
    for before, after in zip(text.splitlines(), out.splitlines(), strict=True):
        if "=" in before:
            assert after.split('"')[0] == before.split('"')[0]  # `KEY_i = ` stays
            assert after.endswith(before.rsplit('"', 1)[1])  # and the comment after it


# -------------------------------------------------------------------- what stays

SHA = "3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a3f"
UUID = "123e4567-e89b-12d3-a456-426614174000"
SHA256 = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"


@pytest.mark.parametrize(
    ("language", "line"),
    [
        ("python", f'COMMIT = "{SHA}"'),
        ("python", f"# fixed in {SHA[:12]}"),
        ("python", f'REQUEST_ID = "{UUID}"'),
        ("python", f'TOKEN_CACHE_KEY = "{UUID}"'),
        ("python", f'expected_digest = "{SHA256}"'),
        ("python", f'token_sha256 = "{SHA256}"'),
        ("yaml", f"  password_hash_sha256: {SHA256}"),
        ("python", f'ARCHIVE_SHA512 = "{SHA256 * 2}"'),
        ("json", '  "integrity": "sha512-' + corpus.b64(RNG, 64) + '",'),
        ("yaml", "  integrity: sha1-" + corpus.b64(RNG, 20)),
        ("python", f'PAYLOAD_B64 = "{corpus.b64(RNG, 60)}"'),
        ("json", f'  "data": "{corpus.b64(RNG, 30)}",'),
        ("python", 'API_KEY_ENV = "ANTHROPIC_API_KEY"'),
        ("python", 'api_key = os.environ["ANTHROPIC_API_KEY"]'),
        ("yaml", "  password: ${DB_PASSWORD}"),
        ("yaml", "  token: <token>"),
        ("python", 'api_key = "changeme"'),
        ("python", 'secret = "xxxx"'),
        ("python", 'password = "%(password)s"'),
        ("python", "token = '%HOMEPATH%\\' + token[2:]"),
        ("python", 'color = "#1e90ff"'),
        ("toml", 'version = "2.14.3"'),
        ("python", 'TOKEN_FILE = "/run/secrets/token"'),
        ("python", "password = read_password()"),
        ("python", "self.password = password"),
        ("python", "def login(password: str, token: Token | None = None) -> None:"),
        ("python", "token_count = len(tokens)"),
        ("python", 'eos_token = "</s>"; unk_token = "[UNK]"'),
        ("python", 'parser.add_argument("--password", help="the password to use")'),
        ("rust", 'let token: String = env::var("TOKEN")?;'),
        ("python", "# the password is hashed with bcrypt"),
        ("markdown", "The token is valid for one hour."),
        ("python", "INTERNAL_RESET_SESSION_TOKEN = '_password_reset_token'"),
        ("python", "fields = ('email', 'password1', 'password2')"),
        ("text", "input[type=password]:focus { outline: none; }"),
        ("text", '<input type="password" name="password1" required>'),
        ("python", 'HEADER = "-----BEGIN PRIVATE KEY-----"'),
        ("bash", "deploy --token TOKEN --password-file /run/secrets/pw"),
        ("javascript", "const klass = 'sk-circle-bounce-delay-animation';"),
    ],
)  # fmt: skip
def test_code_memory_tokens_are_kept(language: str, line: str) -> None:
    assert mask_code(line, language) == (line, [])


# -------------------------------------------------------------------- the prefilter


def test_no_detector_fires_on_a_line_the_prefilter_passes_over() -> None:
    """Every planted shape, in every language's lines, makes its line a candidate: the
    prefilter can only save time, never hide a secret."""
    rng = random.Random(9)
    plan_lines = []
    for kind in [*corpus.SECRET_MAKERS, "passphrase"] * 12:
        for lang in corpus._LANGUAGES:
            _, line = corpus._secret_line(rng, kind, lang, corpus._LANGUAGES[lang][1])
            plan_lines += line.splitlines()
    for line in plan_lines:
        for code in (True, False):
            if any(True for _ in line_secrets(line, code)):
                assert candidate_lines(line), line


def test_offsets_survive_text_whose_lower_case_is_longer() -> None:
    text = "İstanbul İzmir\n" * 3 + f'token = "{GHP}"\n'
    out, _ = mask_code(text, "python")
    assert out == text.replace(GHP, "«secret:github-token»")


# -------------------------------------------------------------------- notes


def test_notes_keep_their_redaction_format_and_kinds() -> None:
    text = (
        f"The CI token is {GHP}. AWS secret key: {AWS_SECRET}.\n"
        "my password is hunter2, and mysql -pRootPassNote99 works.\n"
        'the admin password is "Correct Horse Battery Staple"\n'
        f"api key: {HEX32}\n"
        "DSN postgresql://app:Sup3rS3cret@db.internal:5432/app"
    )
    clean, found = Scrubber().scrub(text)
    for secret in (GHP, AWS_SECRET, "hunter2", "RootPassNote99", "Correct Horse", HEX32,
                   "Sup3rS3cret"):  # fmt: skip
        assert secret not in clean
    assert "[REDACTED:token]" in clean and "[REDACTED:aws_key]" in clean
    assert "postgresql://app:[REDACTED:password]@db.internal:5432/app" in clean
    assert {r.kind for r in found} == {"token", "aws_key", "password", "secret"}


def test_a_template_url_is_not_a_password() -> None:
    text = 'url = f"postgres://{user}:{password}@{host}/app"'
    assert Scrubber(emails=False, phones=False).scrub(text) == (text, [])


@pytest.mark.parametrize(
    "line",
    ["password=" * 20000, 'password="' * 20000, "a" * 100000 + "://x:y@",
     ("mysql " * 5000) + "x" * 10000, "token:" * 30000],
)  # fmt: skip
def test_no_line_costs_more_than_linear_time(line: str) -> None:
    """A repetitive line once took 339 s (every name's value scanned to the line's end)."""
    import time

    started = time.perf_counter()
    out, _ = mask_code(line, "python")
    assert time.perf_counter() - started < 5 and out.count("\n") == 0
