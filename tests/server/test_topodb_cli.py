"""Starting the topodb profile: `mnemodb serve --profile topodb` and the `topodb-mcp` command.

--db is required (TOPODB_DB stands in for it), the database's directory must exist,
--scope / --read-scopes / --spec are checked before anything is served, and every
refusal exits non-zero with a message on stderr and nothing on stdout, which carries
protocol messages only.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from support import RawServer, server_env
from topodb_support import SCOPE_A, TOOL_NAMES, Topo

SERVE = [sys.executable, "-m", "mnemodb", "serve", "--profile", "topodb"]


def topodb_mcp() -> list[str]:
    """The `topodb-mcp` console script (or its entry point when not installed as a script)."""
    script = Path(sys.executable).with_name("topodb-mcp")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from mnemodb.cli.main import topodb_main; sys.exit(topodb_main())"]


def run(
    args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env(env),
        cwd=cwd,
        timeout=60,
        check=False,
    )


def refused(result: subprocess.CompletedProcess[str], *fragments: str) -> None:
    assert result.returncode != 0, result
    assert result.stdout == "", result.stdout
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_db_is_required(tmp_path: Path) -> None:
    result = run(SERVE, cwd=tmp_path)
    refused(result, "--db")
    assert list(tmp_path.iterdir()) == []


def test_topodb_db_stands_in_for_db(tmp_path: Path) -> None:
    db = tmp_path / "from-env.db"
    server = RawServer(SERVE, env={"TOPODB_DB": str(db), "TOPODB_SCOPE": SCOPE_A.lower()}, cwd=tmp_path)
    with Topo(server) as topo:
        server.initialize()
        info = topo.ok("db_info")
        assert info["path"] == str(db)
        assert (info["default_scope"], info["default_read_scopes"]) == (SCOPE_A, [SCOPE_A])
        node = topo.entity("kept in the file TOPODB_DB names")
    assert db.exists()

    # --db wins over TOPODB_DB, --scope over TOPODB_SCOPE.
    other = tmp_path / "from-flag.db"
    env = {"TOPODB_DB": str(db), "TOPODB_SCOPE": SCOPE_A}
    with Topo.start(other, "--scope", "shared", env=env, cwd=tmp_path) as topo:
        info = topo.ok("db_info")
        assert (info["path"], info["default_scope"]) == (str(other), "shared")
        assert topo.node(node, scopes=["shared", SCOPE_A]) is None


def test_missing_parent_directory(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-dir"
    result = run([*SERVE, "--db", str(missing / "agent.db")])
    refused(result, "database parent directory does not exist", str(missing))
    assert not missing.exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--scope", "nope"], 'invalid --scope value "nope" (expected "shared" or a ULID): invalid length'),
        (["--scope", ""], "invalid --scope value"),
        (
            ["--read-scopes", " , "],
            '--read-scopes value " , " is empty; expected a comma-separated list of "shared" or scope ULIDs',
        ),
        (["--read-scopes", ""], "--read-scopes"),
        (["--read-scopes", f"shared,{SCOPE_A},bogus"], '"bogus"'),
    ],
    ids=["bad-scope", "empty-scope", "blank-read-scopes", "empty-read-scopes", "bad-read-scope"],
)
def test_bad_scopes_are_refused(tmp_path: Path, flags: list[str], message: str) -> None:
    db = tmp_path / "agent.db"
    refused(run([*SERVE, "--db", str(db), *flags]), message)
    assert not db.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "reading --spec {spec}: "),
        ("{", "parsing --spec {spec} as IndexSpec JSON: "),
        ('{"equality": []}', "missing field `text`"),
        (
            '{"equality": [{"label": "A", "prop": "b"}, {"label": "A", "prop": "b"}], "text": []}',
            "duplicate index declaration for (A, b)",
        ),
    ],
    ids=["unreadable", "not-json", "missing-text", "duplicate"],
)
def test_bad_specs_are_refused(tmp_path: Path, content: str | None, message: str) -> None:
    spec = tmp_path / "spec.json"
    if content is not None:
        spec.write_text(content)
    db = tmp_path / "agent.db"
    refused(run([*SERVE, "--db", str(db), "--spec", str(spec)]), message.format(spec=spec))
    assert not db.exists()


def test_the_same_pair_in_both_lists_is_a_valid_spec(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    pair = [{"label": "Entity", "prop": "name"}]
    spec.write_text(json.dumps({"equality": pair, "text": pair, "ignored": True}))
    with Topo.start(tmp_path / "agent.db", "--spec", str(spec)) as topo:
        node = topo.entity("Both Lists")
        assert topo.found_ids("find_by_prop", {"label": "Entity", "prop": "name", "value": "Both Lists"}) == [node]
        assert topo.found_ids("search_memories", {"query": "lists"}) == [node]


def test_topodb_only_flags_are_refused_by_other_profiles(tmp_path: Path) -> None:
    result = run(
        [
            sys.executable,
            "-m",
            "mnemodb",
            "serve",
            "--profile",
            "memdb",
            "--db",
            str(tmp_path / "m.db"),
            "--allow-unscoped-changes",
        ]
    )
    refused(result, "--allow-unscoped-changes")


def test_unknown_flag_is_refused(tmp_path: Path) -> None:
    refused(run([*topodb_mcp(), "--db", str(tmp_path / "agent.db"), "--bogus"]), "--bogus")


def test_topodb_mcp_help(tmp_path: Path) -> None:
    result = run([*topodb_mcp(), "--help"], cwd=tmp_path)
    assert result.returncode == 0, result
    assert "--allow-unscoped-changes" in result.stdout
    assert "--db" in result.stdout and "--spec" in result.stdout
    assert list(tmp_path.iterdir()) == []


def test_topodb_mcp_serves_and_stdout_carries_only_protocol_messages(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    server = RawServer([*topodb_mcp(), "--db", str(db), "--allow-unscoped-changes"], cwd=tmp_path)
    topo = Topo(server)
    init = server.initialize()
    assert init["result"]["serverInfo"]["name"] == "topodb-mcp"
    assert [t["name"] for t in server.request("tools/list")["result"]["tools"]] == TOOL_NAMES
    node = topo.entity("stdout check")
    topo.ok("get_node", {"id": node})
    topo.arg_error("get_node", {"bogus": 1})
    topo.error("get_node", {"id": "x"})
    topo.error("nope", {})
    topo.error("submit_batch", {"commands": [{"op": "remove_node", "id": "#0"}]})
    assert topo.ok("db_info")["current_seq"] == 1
    assert server.close() == 0
    # Every line the server wrote was a JSON-RPC message we read as a reply; nothing is left over.
    leftover = []
    while not server._lines.empty():
        line = server._lines.get()
        if line is not None:
            leftover.append(line)
    assert leftover == []


# -- the wire, as topodb-mcp's transport (rmcp) answered it -----------------------------------


@pytest.fixture(scope="module")
def wire(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    server = RawServer([*SERVE, "--db", str(tmp_path_factory.mktemp("topodb-wire") / "agent.db")])
    try:
        assert server.request("ping")["result"] == {}  # answered even before initialize
        yield server
    finally:
        server.close()


def test_protocol_versions(wire: RawServer) -> None:
    for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"):
        assert wire.initialize(version)["result"]["protocolVersion"] == version
    assert wire.initialize("1999-01-01")["result"]["protocolVersion"] == "2025-11-25"
    assert wire.request("ping")["result"] == {}
    assert wire.request("tools/list", {"cursor": "ignored"})["result"]["tools"][0]["name"] == "access_stats"


def test_malformed_lines_and_batches_get_an_error_and_the_server_goes_on(wire: RawServer) -> None:
    # Upstream stayed silent on a malformed line and answered a batch with one id-less
    # error; mnemodb's transport answers each as JSON-RPC says, which a client that never
    # sends either cannot tell apart.
    wire.send_raw(b"this is not json\n")
    assert wire.recv()["error"]["code"] == -32700
    wire.send_raw(b'[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":6,"method":"ping"}]\n')
    errors = [wire.recv(), wire.recv()]
    assert sorted(e["id"] for e in errors) == [5, 6]
    assert {e["error"]["code"] for e in errors} == {-32600}
    assert wire.request("ping")["result"] == {}
