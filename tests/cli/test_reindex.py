"""`mnemodb reindex`: every memory and entity given a current vector, from the command line,
against an HTTP stub endpoint the test runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from embed_support import STUB_MODEL, StubEndpoint, free_port, stub_endpoint
from mnemodb.engine import Engine

TIMEOUT_S = 60  # a hang guard only


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MEMDB_", "MNEMODB_"))}
    env.update(extra)
    return env


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemodb", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env if env is not None else clean_env(),
        timeout=TIMEOUT_S,
        check=False,
    )


def ok_json(result: subprocess.CompletedProcess[str]) -> Any:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    return json.loads(result.stdout)


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mnemodb: ")
    return lines[0]


@pytest.fixture
def stub() -> Iterator[StubEndpoint]:
    with stub_endpoint() as endpoint:
        yield endpoint


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding three memories, written by `mnemodb remember` (once per module)."""
    folder = tmp_path_factory.mktemp("reindex")
    path = folder / "memory.db"
    for text in ("We adopted a puppy named Rex", "My sister lives in Lisbon", "Quarterly taxes are due in April"):
        ok_json(run(folder, "remember", text, "--db", str(path), "--json"))
    return path


@pytest.fixture
def db(written: Path, tmp_path: Path) -> Path:
    """A copy of `written` of the test's own."""
    for file in written.parent.glob(written.name + "*"):
        shutil.copy(file, tmp_path / file.name)
    return tmp_path / written.name


def reindex(db: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return run(
        db.parent,
        "reindex",
        "--db",
        str(db),
        "--embedder",
        "http",
        "--embed-url",
        url,
        "--embed-model",
        STUB_MODEL,
        *extra,
    )


def test_reindex_embeds_everything_then_nothing(db: Path, stub: StubEndpoint) -> None:
    first = ok_json(reindex(db, stub.url, "--json"))
    assert first["model"] == STUB_MODEL
    assert (first["embedded"], first["current"], first["items"]) == (3, 3, 3)
    assert isinstance(first["seconds"], float)
    assert sorted(stub.texts()) == sorted(
        ["We adopted a puppy named Rex", "My sister lives in Lisbon", "Quarterly taxes are due in April"]
    )

    stub.requests.clear()
    second = ok_json(reindex(db, stub.url, "--json"))
    assert (second["embedded"], second["current"], second["items"]) == (0, 3, 3)
    assert stub.requests == []

    with Engine.open(str(db)) as engine:
        assert engine.stats().embeddings == 3


def test_reindex_embeds_what_changed_since(db: Path, stub: StubEndpoint) -> None:
    ok_json(reindex(db, stub.url, "--json"))
    ok_json(run(db.parent, "remember", "The deploy pipeline runs on Fridays", "--db", str(db), "--json"))
    stub.requests.clear()
    again = ok_json(reindex(db, stub.url, "--json"))
    assert (again["embedded"], again["current"], again["items"]) == (1, 4, 4)
    assert stub.texts() == ["The deploy pipeline runs on Fridays"]


def test_reindex_batches_and_sends_the_key(db: Path, stub: StubEndpoint) -> None:
    ok_json(reindex(db, stub.url, "--json", "--batch", "2", "--embed-key", "sk-cli"))
    assert [len(r.body["input"]) for r in stub.requests] == [2, 1]
    assert {r.headers.get("Authorization") for r in stub.requests} == {"Bearer sk-cli"}


def test_reindex_takes_its_settings_from_the_environment(db: Path, stub: StubEndpoint) -> None:
    env = clean_env(
        MNEMODB_DB=str(db), MNEMODB_EMBEDDER="http", MNEMODB_EMBED_URL=stub.url, MNEMODB_EMBED_MODEL=STUB_MODEL
    )
    summary = ok_json(run(db.parent, "reindex", "--json", env=env))
    assert (summary["embedded"], summary["current"], summary["items"]) == (3, 3, 3)


def test_reindex_prints_a_summary_without_json(db: Path, stub: StubEndpoint) -> None:
    result = reindex(db, stub.url)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"3 vectors written under {STUB_MODEL} in ")
    assert result.stdout.rstrip().endswith("; 3 of 3 current")


def test_reindex_with_the_endpoint_down_fails_clearly(db: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    message = one_line_error(reindex(db, url, "--json"))
    assert f"{url}/embeddings could not be reached" in message
    with Engine.open(str(db)) as engine:
        assert engine.stats().embeddings == 0


def test_reindex_with_a_failing_endpoint_fails_clearly(db: Path, stub: StubEndpoint) -> None:
    stub.fail_next = 1
    message = one_line_error(reindex(db, stub.url, "--json"))
    assert "answered HTTP 500" in message


def test_reindex_with_vectors_of_another_length_fails_clearly(db: Path, stub: StubEndpoint) -> None:
    with Engine.open(str(db)) as engine:
        [memory] = engine.memories.search("puppy", limit=1)
        from mnemodb.engine.items import Patch

        engine.items.revise(memory.memory.id, Patch(embedding=(STUB_MODEL, [1.0, 0.0])))
        engine.memories.store("one more to embed", (), 0, "general")
    message = one_line_error(reindex(db, stub.url, "--json"))
    assert "2-dimensional" in message and "32-dimensional" in message


def test_reindex_with_no_embedder_is_refused(db: Path) -> None:
    message = one_line_error(run(db.parent, "reindex", "--db", str(db), "--embedder", "none", "--json"))
    assert message == "mnemodb: --embedder none gives no vectors to write"


def test_reindex_http_without_a_url_is_refused(db: Path) -> None:
    message = one_line_error(
        run(db.parent, "reindex", "--db", str(db), "--embedder", "http", "--embed-model", STUB_MODEL)
    )
    assert "--embed-url" in message


def test_reindex_unknown_embedder_is_refused(db: Path) -> None:
    message = one_line_error(run(db.parent, "reindex", "--db", str(db), "--embedder", "magic"))
    assert "Invalid embedder 'magic'" in message


def test_reindex_of_a_missing_database_is_refused_and_creates_nothing(tmp_path: Path, stub: StubEndpoint) -> None:
    missing = tmp_path / "typo.db"
    message = one_line_error(reindex(missing, stub.url))
    assert message == f"mnemodb: no database at {missing}: nothing to reindex"
    assert list(tmp_path.iterdir()) == []
    assert stub.requests == []
