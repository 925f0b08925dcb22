"""`mnemodb import` and `mnemodb export --format server-memory` on server-memory files, as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from mnemodb.engine import Engine
from support import SCOPE_A

TIMEOUT_S = 60  # a hang guard only

LINES = [
    '{"type":"entity","name":"Ada","entityType":"person","observations":["writes code","drinks tea"],'
    '"since":"2019-04-01"}',
    '{"type":"entity","name":"Acme Ltd \u2013 東京","entityType":"company","observations":["makes ☕ machines"]}',
    '{"type":"relation","from":"Ada","to":"Acme Ltd \u2013 東京","relationType":"works_at","weight":0.00001}',
]
UPSTREAM = "\n".join(LINES)
BROKEN = "\n".join(
    [
        LINES[0],
        "this is not json",
        LINES[1],
        '{"type":"entity","name":"Bob","entityType":"person"}',
        LINES[2],
        '{"type":"relation","from":"Ada","to":"Ghost","relationType":"knows"}',
    ]
)


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("MEMDB_", "MNEMODB_", "MEMORY_FILE"))}


def run(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mnemodb", *args],
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        cwd=cwd,
        env=clean_env(),
        timeout=TIMEOUT_S,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    return result


def as_json(result: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(result.stdout)


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def graph_names(db: Path, scope: str = "shared") -> list[str]:
    with Engine.open(str(db), write_scope=scope) as engine:
        return [e.name for e in engine.graph.read().entities]


def test_import_then_export_round_trips_byte_for_byte(tmp_path: Path) -> None:
    source = write(tmp_path / "memory.jsonl", UPSTREAM)
    db = tmp_path / "data" / "kg.db"
    result = ok(run(tmp_path, "import", str(source), "--db", str(db)))
    assert result.stdout == "imported 2 entities and 1 relation\n"
    assert result.stderr == ""
    exported = ok(run(tmp_path, "export", "--format", "server-memory", "out/memory.jsonl", "--db", str(db)))
    assert exported.stdout == ""
    assert exported.stderr == "exported 2 entities and 1 relation to out/memory.jsonl\n"
    assert (tmp_path / "out" / "memory.jsonl").read_bytes() == source.read_bytes()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["memory.jsonl"]  # no temporary file left


def test_importing_again_adds_nothing_and_succeeds(tmp_path: Path) -> None:
    source = write(tmp_path / "memory.jsonl", UPSTREAM)
    db = str(tmp_path / "kg.db")
    ok(run(tmp_path, "import", str(source), "--db", db))
    again = ok(run(tmp_path, "import", str(source), "--db", db))
    assert again.stdout == "imported 0 entities and 0 relations; already present: 2 entities, 1 relation\n"


def test_malformed_lines_are_skipped_reported_and_exit_1(tmp_path: Path) -> None:
    source = write(tmp_path / "broken.jsonl", BROKEN)
    db = tmp_path / "kg.db"
    result = run(tmp_path, "import", str(source), "--db", str(db))
    assert result.returncode == 1
    assert result.stdout == "imported 2 entities and 1 relation; skipped 3 lines\n"
    assert result.stderr.splitlines() == [
        "mnemodb: skipped line 2: not JSON (Expecting value at column 1)",
        'mnemodb: skipped line 4: entity has no "observations"',
        'mnemodb: skipped line 6: relation from "Ada" to "Ghost": no entity named "Ghost"',
    ]
    assert graph_names(db) == ["Ada", "Acme Ltd \u2013 東京"]


def test_on_error_abort_writes_nothing(tmp_path: Path) -> None:
    source = write(tmp_path / "broken.jsonl", BROKEN)
    db = tmp_path / "kg.db"
    result = run(tmp_path, "import", str(source), "--on-error", "abort", "--db", str(db))
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        "mnemodb: line 2: not JSON (Expecting value at column 1)",
        'mnemodb: line 4: entity has no "observations"',
        "mnemodb: nothing imported: 2 malformed lines (--on-error abort)",
    ]
    assert not db.exists()


def test_on_error_abort_imports_a_clean_file(tmp_path: Path) -> None:
    source = write(tmp_path / "memory.jsonl", UPSTREAM)
    db = tmp_path / "kg.db"
    ok(run(tmp_path, "import", str(source), "--on-error", "abort", "--db", str(db)))
    assert graph_names(db) == ["Ada", "Acme Ltd \u2013 東京"]


def test_json_reports_counts_and_errors(tmp_path: Path) -> None:
    source = write(tmp_path / "broken.jsonl", BROKEN)
    db = str(tmp_path / "kg.db")
    result = run(tmp_path, "import", str(source), "--json", "--db", db)
    assert result.returncode == 1
    assert result.stderr == ""
    assert as_json(result) == {
        "format": "server-memory",
        "aborted": False,
        "lines": 6,
        "entities": {"created": 2, "updated": 0, "unchanged": 0, "merged": 0},
        "observations_added": 0,
        "relations": {"created": 1, "unchanged": 0},
        "ignored": 0,
        "errors": [
            {"line": 2, "reason": "not JSON (Expecting value at column 1)"},
            {"line": 4, "reason": 'entity has no "observations"'},
            {"line": 6, "reason": 'relation from "Ada" to "Ghost": no entity named "Ghost"'},
        ],
    }
    aborted = run(tmp_path, "import", str(source), "--json", "--on-error", "abort", "--db", str(tmp_path / "b.db"))
    assert aborted.returncode == 1
    report = as_json(aborted)
    assert (report["aborted"], report["lines"], [e["line"] for e in report["errors"]]) == (True, 6, [2, 4])
    assert report["entities"]["created"] == 0


def test_export_json_summary(tmp_path: Path) -> None:
    db = str(tmp_path / "kg.db")
    ok(run(tmp_path, "import", str(write(tmp_path / "memory.jsonl", UPSTREAM)), "--db", db))
    result = ok(run(tmp_path, "export", "--format", "server-memory", "copy.jsonl", "--json", "--db", db))
    assert as_json(result) == {
        "format": "server-memory",
        "path": str((tmp_path / "copy.jsonl").resolve()),
        "entities": 2,
        "relations": 1,
    }
    assert result.stderr == ""


def test_stdin_import_and_stdout_export(tmp_path: Path) -> None:
    db = str(tmp_path / "kg.db")
    ok(run(tmp_path, "import", "-", "--db", db, stdin=UPSTREAM))
    out = ok(run(tmp_path, "export", "--format", "server-memory", "--db", db))
    assert out.stdout == UPSTREAM  # no newline after the last line, as upstream writes
    assert out.stderr == ""


def test_scope_is_honoured_both_ways(tmp_path: Path) -> None:
    db = str(tmp_path / "kg.db")
    source = write(tmp_path / "memory.jsonl", UPSTREAM)
    ok(run(tmp_path, "import", str(source), "--scope", SCOPE_A, "--db", db))
    assert graph_names(Path(db)) == []
    assert graph_names(Path(db), SCOPE_A) == ["Ada", "Acme Ltd \u2013 東京"]
    assert ok(run(tmp_path, "export", "--format", "server-memory", "--db", db)).stdout == ""
    scoped = ok(run(tmp_path, "export", "--format", "server-memory", "--scope", SCOPE_A, "--db", db))
    assert scoped.stdout == UPSTREAM


def test_a_mnemodb_export_is_still_detected(tmp_path: Path) -> None:
    db = str(tmp_path / "kg.db")
    ok(run(tmp_path, "import", str(write(tmp_path / "memory.jsonl", UPSTREAM)), "--db", db))
    ok(run(tmp_path, "export", "dump.jsonl", "--db", db))
    fresh = str(tmp_path / "fresh.db")
    report = as_json(ok(run(tmp_path, "import", "dump.jsonl", "--json", "--db", fresh)))
    assert report == {"written": 3, "unchanged": 0, "errors": []}
    # the mnemodb format carries the extra fields too
    assert ok(run(tmp_path, "export", "--format", "server-memory", "--db", fresh)).stdout == UPSTREAM


def test_format_can_be_named(tmp_path: Path) -> None:
    # A file whose first line looks like a mnemodb record is read as server-memory when told so.
    text = '{"type":"header","format":"mnemodb","version":1}\n' + UPSTREAM
    source = write(tmp_path / "odd.jsonl", text)
    db = tmp_path / "kg.db"
    result = run(tmp_path, "import", str(source), "--format", "server-memory", "--db", str(db))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "imported 2 entities and 1 relation; ignored 1 line of another type\n"


def test_abort_is_refused_for_a_mnemodb_export(tmp_path: Path) -> None:
    db = str(tmp_path / "kg.db")
    ok(run(tmp_path, "remember", "a memory", "--db", db))
    ok(run(tmp_path, "export", "dump.jsonl", "--db", db))
    result = run(tmp_path, "import", "dump.jsonl", "--on-error", "abort", "--db", str(tmp_path / "fresh.db"))
    assert result.returncode == 1
    assert result.stderr.startswith("mnemodb: --on-error abort applies to server-memory files")
    assert len(result.stderr.splitlines()) == 1


def test_export_to_a_directory_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "a-directory").mkdir()
    ok(run(tmp_path, "remember", "a memory", "--db", str(tmp_path / "kg.db")))
    result = run(tmp_path, "export", "--format", "server-memory", "a-directory", "--db", str(tmp_path / "kg.db"))
    assert result.returncode == 1
    assert result.stderr == "mnemodb: a-directory is a directory\n"
    assert list((tmp_path / "a-directory").iterdir()) == []


def test_unknown_export_format_names_both(tmp_path: Path) -> None:
    result = run(tmp_path, "export", "--format", "csv", "--db", str(tmp_path / "kg.db"))
    assert result.returncode == 1
    assert result.stderr == "mnemodb: unknown export format 'csv' (available: mnemodb, server-memory)\n"


def test_export_replaces_a_file_and_keeps_its_permissions(tmp_path: Path) -> None:
    db = str(tmp_path / "kg.db")
    ok(run(tmp_path, "import", str(write(tmp_path / "memory.jsonl", UPSTREAM)), "--db", db))
    target = write(tmp_path / "shared.jsonl", "old content\n")
    target.chmod(0o600)
    ok(run(tmp_path, "export", "--format", "server-memory", str(target), "--db", db))
    assert target.read_text(encoding="utf-8") == UPSTREAM
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in tmp_path.iterdir() if p.suffix == ".tmp") == []


def test_mnemodb_export_json_summary(tmp_path: Path) -> None:
    db = str(tmp_path / "kg.db")
    ok(run(tmp_path, "import", str(write(tmp_path / "memory.jsonl", UPSTREAM)), "--db", db))
    result = ok(run(tmp_path, "export", "dump.jsonl", "--json", "--db", db))
    assert as_json(result) == {"format": "mnemodb", "path": str((tmp_path / "dump.jsonl").resolve()), "records": 3}
    assert result.stderr == ""
