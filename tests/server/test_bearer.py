"""Bearer tokens: the length rule, the tokens file, `--scope`, and the scope each request's
token pins, read back in a tool handler over real HTTP."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from click.testing import CliRunner
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from memserver.core.errors import ConfigError
from memserver.server import transports
from memserver.server.app import build_server
from memserver.server.bearer import check_token, current_token_scope, load_token_file
from memserver.server.cli_command import serve_command
from tests.server.httpkit import ThreadedServer, free_port

ALICE = "alice-token-" + "a" * 32
BOB = "bob-token-" + "b" * 32
PLAIN = "plain-token-" + "p" * 32


@pytest.mark.parametrize(
    "token, problem",
    [
        ("a", "too short (1 characters)"),
        (" ", "blank"),
        ("\t\n", "blank"),
        ("x" * 31, "too short (31 characters)"),
        (" " + "x" * 40, "whitespace"),
        ("x" * 40 + "\n", "whitespace"),
        ("x" * 20 + " " + "x" * 20, "whitespace"),
        ("é" * 40, "non-ASCII"),
    ],
)
def test_weak_or_padded_tokens_are_refused_with_a_way_to_make_one(token: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        check_token(token)
    assert problem in caught.value.message
    assert "secrets.token_urlsafe(32)" in caught.value.hint


def test_a_long_visible_token_is_accepted() -> None:
    assert check_token("x" * 32) == "x" * 32


def run_serve(*args: str, env: dict[str, str | None] | None = None) -> Any:
    return CliRunner().invoke(
        serve_command(), list(args), env={"MEMSERVER_TOKEN": None, **(env or {})}
    )


@pytest.mark.parametrize("token", ["a", " ", "short-token-0123456789"])
def test_allow_remote_refuses_a_weak_token(tmp_path: Path, token: str) -> None:
    result = run_serve(
        "--root", str(tmp_path), "--transport", "http", "--host", "0.0.0.0", "--allow-remote",
        env={"MEMSERVER_TOKEN": token},
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert "MEMSERVER_TOKEN" in result.stderr and "secrets.token_urlsafe(32)" in result.stderr


# -- the tokens file ------------------------------------------------------------------------


def test_tokens_file_in_json_and_toml(tmp_path: Path) -> None:
    as_json = tmp_path / "tokens.json"
    as_json.write_text(json.dumps({ALICE: {"user": "alice"}, BOB: {"user": "bob", "agent": "ci"},
                                   PLAIN: {}}))  # fmt: skip
    as_toml = tmp_path / "tokens.toml"
    as_toml.write_text(
        f'"{ALICE}" = {{ user = "alice" }}\n\n["{BOB}"]\nuser = "bob"\nagent = "ci"\n'
    )
    assert load_token_file(as_json) == {
        ALICE: (("user", "alice"),), BOB: (("agent", "ci"), ("user", "bob")), PLAIN: (),
    }  # fmt: skip
    assert load_token_file(as_toml) == {
        ALICE: (("user", "alice"),),
        BOB: (("agent", "ci"), ("user", "bob")),
    }


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"short": {"user": "alice"}}', "(token 1) is too short (5 characters)"),
        (
            json.dumps({ALICE: {"user": "a"}, " " + BOB: {}}),
            "(token 2) starts or ends with whitespace",
        ),
        (f'{{"{ALICE}": {{"user": "a"}}, "{ALICE}": {{"user": "b"}}}}', "listed twice"),
        (json.dumps({ALICE: {"team": "x"}}), "unknown scope key 'team'"),
        (json.dumps({ALICE: {"user": 7}}), "scope user must be a string"),
        (json.dumps({ALICE: {"user": " "}}), "scope user is empty"),
        (json.dumps({ALICE: "alice"}), "must be a table"),
        ("{}", "lists no tokens"),
        ("[1, 2]", "lists no tokens"),
        ("{not json", "is not valid"),
    ],
)
def test_tokens_file_errors_name_the_entry_and_never_the_token(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_token_file(path)
    assert message in str(caught.value)
    assert ALICE not in str(caught.value) and BOB not in str(caught.value)


def test_serve_checks_tokens_and_scope_flags_before_starting(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tiny": {"user": "alice"}}))
    root = ("--root", str(tmp_path))
    http = ("--transport", "http")
    cases = [
        (run_serve(*root, *http, "--tokens", str(tokens)), "is too short (4 characters)"),
        (run_serve(*root, "--tokens", str(tokens)), "--tokens is for --transport http"),
        (run_serve(*root, *http, "--tokens", str(tokens), env={"MEMSERVER_TOKEN": PLAIN}),
         "cannot be combined"),
        (run_serve(*root, *http, "--tokens", str(tokens), "--scope", "user=a"),
         "cannot be combined"),
        (run_serve(*root, "--scope", "team=x"), "unknown scope key 'team'"),
        (run_serve(*root, "--scope", "user"), "write KEY=VALUE"),
        (run_serve(*root, "--scope", "user=a", "--scope", "user=b"), "given twice"),
        (run_serve(*root, *http, "--allowed-host", "a:b:c"), "--allowed-host 'a:b:c'"),
    ]  # fmt: skip
    for result, message in cases:
        assert result.exit_code == 2 and message in result.stderr, result.stderr


# -- the scope of the request's token, read in a tool handler over real HTTP ---------------


@contextmanager
def serve_scoped(tmp_path: Path, transport: str) -> Iterator[str]:
    tokens = {ALICE: (("user", "alice"),), BOB: (("agent", "ci"), ("user", "bob")), PLAIN: ()}
    server = build_server(tmp_path, None, token="x" * 40, tokens=tokens, env={})

    @server.tool(name="whoami")
    def whoami() -> dict[str, Any]:  # a probe for this test only
        scope = current_token_scope()
        return {"scope": None if scope is None else [list(p) for p in scope]}

    port = free_port()
    options = transports.HttpOptions("127.0.0.1", port)
    with ThreadedServer(transports.http_app(server, transport, options), options):
        yield f"http://127.0.0.1:{port}/{'mcp' if transport == 'http' else 'sse'}"


@pytest.fixture(params=["http", "sse"])
def scoped_server(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    with serve_scoped(tmp_path, request.param) as url:
        yield url


async def whoami(url: str, token: str) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    with anyio.fail_after(30):
        if url.endswith("/sse"):
            async with Client(sse_client(url, headers=headers), mode="legacy") as client:
                first = await client.call_tool("whoami", {})
                second = await client.call_tool("whoami", {})
        else:
            async with (
                httpx2.AsyncClient(headers=headers) as http,
                Client(streamable_http_client(url, http_client=http)) as client,
            ):
                first = await client.call_tool("whoami", {})
                second = await client.call_tool("whoami", {})
    assert first.structured_content == second.structured_content
    return first.structured_content["scope"]


@pytest.mark.anyio
async def test_each_request_sees_the_scope_of_its_own_token(scoped_server: str) -> None:
    assert await whoami(scoped_server, ALICE) == [["user", "alice"]]
    assert await whoami(scoped_server, BOB) == [["agent", "ci"], ["user", "bob"]]
    assert await whoami(scoped_server, PLAIN) == []  # pinned to project-wide items only
    assert await whoami(scoped_server, "x" * 40) is None  # MEMSERVER_TOKEN pins nothing


@pytest.mark.anyio
async def test_one_tokens_session_is_closed_to_another_token(tmp_path: Path) -> None:
    with serve_scoped(tmp_path, "http") as url:
        await _try_each_others_session(url)


async def _try_each_others_session(scoped_server: str) -> None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}}  # fmt: skip
    accept = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient(timeout=30) as http:
        alice = {**accept, "Authorization": f"Bearer {ALICE}"}
        opened = await http.post(scoped_server, json=init, headers=alice)
        session = opened.headers["mcp-session-id"]
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        as_bob = await http.post(scoped_server, json=ping, headers={
            **accept, "Authorization": f"Bearer {BOB}", "mcp-session-id": session})  # fmt: skip
        as_alice = await http.post(scoped_server, json=ping, headers={
            **accept, "Authorization": f"Bearer {ALICE}", "mcp-session-id": session})  # fmt: skip
    assert opened.status_code == 200 and as_alice.status_code == 200
    assert as_bob.status_code in (403, 404), as_bob.text


def test_the_tokens_file_warns_when_others_can_read_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({ALICE: {"user": "alice"}}))
    os.chmod(path, 0o600)
    load_token_file(path)
    assert "readable by other users" not in caplog.text
    os.chmod(path, 0o644)
    load_token_file(path)
    assert "readable by other users" in caplog.text


# -- the token's scope is the caller's boundary: recall and remember over real HTTP ---------


async def _call(url: str, token: str, tool: str, args: dict[str, Any]) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    with anyio.fail_after(60):
        async with (
            httpx2.AsyncClient(headers=headers) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            return await client.call_tool(tool, args)


@pytest.mark.anyio
async def test_a_tokens_scope_bounds_what_its_caller_remembers_and_recalls(
    tmp_path: Path,
) -> None:
    from memserver.engine import Engine
    from tests.conftest import SAMPLE, write_tree

    root = write_tree(tmp_path / "repo", SAMPLE)
    Engine(root, None, embedder_flag="hashing", env={}).index()
    tokens = {ALICE: (("user", "alice"),), BOB: (("user", "bob"),)}
    server = build_server(root, None, tokens=tokens, env={})
    port = free_port()
    options = transports.HttpOptions("127.0.0.1", port)
    url = f"http://127.0.0.1:{port}/mcp"
    with ThreadedServer(transports.http_app(server, "http", options), options):
        stored = await _call(url, ALICE, "remember", {"text": "The quokkabridge flag is on."})
        note = stored.structured_content["note_id"]
        for token, sees in ((ALICE, True), (BOB, False)):
            found = await _call(url, token, "recall", {"query": "quokkabridge flag"})
            ids = {e["id"] for e in found.structured_content["evidence"]}
            assert (note in ids) == sees
        # bob cannot widen his scope by asking for alice's
        widened = await _call(
            url, BOB, "recall", {"query": "quokkabridge", "scope": {"user": "alice"}}
        )
        assert widened.is_error and "pins user=bob" in widened.content[0].text
