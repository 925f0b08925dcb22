"""Disk faults, end to end: a read-only file or directory, a full disk, a corrupt file, a
database from a newer mnemodb.

Each must be reported clearly: a start that is refused prints one line on stderr and exits
1, having changed nothing; a call that cannot be served is a tool error naming the cause
(read-only, disk full, corrupt), never a traceback, a hang or a crash. Every write
acknowledged before a fault is still there afterwards, a write that failed left nothing
behind, and nothing is silently "repaired" by dropping data.

How the faults are made, for a suite that runs as root:
- read-only: root ignores permission bits through CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH,
  so the server is started by a small launcher that drops both from its bounding set first
  (a root process gets back only what that set holds when it execs the server);
- full disk: the launcher sets RLIMIT_FSIZE with SIGXFSZ ignored, so a write past the limit
  fails with EFBIG; and, where this process may mount one, the database lives on a small
  tmpfs, so writes fail with ENOSPC like on a real full disk;
- corrupt: pages in the middle overwritten with seeded noise, the file cut in half, or a
  file of noise.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import random
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp_types import CallToolResult

from http_support import HttpServer
from mnemodb.engine import Engine, NewMemory
from mnemodb.store.sqlite.changes import define_log_functions
from mnemodb.store.sqlite.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from native_support import Native, text_of
from support import LAUNCHER, REPLY_TIMEOUT_S, server_env

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the faults are made with Linux limits")

READ_ONLY = re.compile(r"read-?only|permission", re.IGNORECASE)
DISK_FULL = re.compile(r"disk|full|space|I/O|size limit|too large", re.IGNORECASE)
CORRUPT = re.compile(r"malformed|corrupt|not a database|damaged", re.IGNORECASE)

PAGE = 4096
FILE_SIZE_LIMIT = 1_000_000
SMALL_FS_BYTES = 1_536 * 1024
BALLAST_BYTES = 256 * 1024
BATCH = 10
SEEDED = 300  # memories in the template database (a file of some 230 pages)
MAX_BATCHES = 400  # a guard: the limits above are reached after about ten


# -- launching servers ---------------------------------------------------------------------------------------


def launch(
    db: Path, *flags: str, profile: str = "native", file_size: int | None = None, read_only: bool = False
) -> list[str]:
    """The argv (after the interpreter) of `mnemodb serve` on `db` under the chosen faults."""
    fault = [str(file_size or ""), "1" if read_only else "0"]
    return ["-c", LAUNCHER, *fault, "-m", "mnemodb", "serve", "--profile", profile, "--db", str(db), *flags]


@contextmanager
def served(
    db: Path, log: Path, *, profile: str = "native", file_size: int | None = None, read_only: bool = False
) -> Iterator[Native]:
    """A server on `db` under the faults, driven by the SDK's client; its stderr goes to `log`
    (kept off the faulty disk). The server logs at its default level, as users run it."""
    params = StdioServerParameters(
        command=sys.executable,
        args=launch(db, profile=profile, file_size=file_size, read_only=read_only),
        env=server_env(),
    )
    with (
        log.open("w") as stream,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(
            Client(stdio_client(params, errlog=stream), mode="legacy", read_timeout_seconds=REPLY_TIMEOUT_S)
        ) as client,
    ):
        yield Native(portal, client, log)


def start_alone(
    db: Path, *flags: str, profile: str = "native", read_only: bool = False
) -> subprocess.CompletedProcess[str]:
    """Start a server on `db` with nothing on stdin: it either refuses `db` or serves until EOF."""
    return subprocess.run(
        [sys.executable, *launch(db, *flags, profile=profile, read_only=read_only)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
        check=False,
    )


def refusal_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one line of a refused start: exit status 1, nothing on stdout, no traceback."""
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def refused(db: Path, *flags: str, profile: str = "native", read_only: bool = False) -> str:
    """Start a server expected to refuse `db`: its one-line message."""
    return refusal_line(start_alone(db, *flags, profile=profile, read_only=read_only))


def server_cannot_write(path: Path) -> bool:
    """Whether a process started read-only (as the servers here are) is refused writing `path`."""
    probe = subprocess.run(
        [sys.executable, "-c", LAUNCHER, "", "1", "-c", "import sys; open(sys.argv[1], 'ab')", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return probe.returncode != 0 and "PermissionError: [Errno 13]" in probe.stderr


# -- files ---------------------------------------------------------------------------------------------------------


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(folder: Path) -> dict[str, str]:
    """Every file in `folder` by name, with the hash of its bytes."""
    return {p.name: digest(p) for p in sorted(folder.iterdir()) if p.is_file()}


def content(label: str, n: int) -> str:
    # Distinct words per memory, so each one grows the full-text index as well.
    words = " ".join(f"w{label}x{n}x{k}" for k in range(40))
    return f"{label} memory {n}: {words}"


def first_word(text: str) -> str:
    """The first of a memory's distinct words (see `content`): a query only it matches."""
    return text.split(": ", 1)[1].split(maxsplit=1)[0]


@dataclass
class Template:
    """A closed mnemodb database to copy, and its memories' ids by content."""

    path: Path
    memories: dict[str, str]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    db = tmp_path_factory.mktemp("template") / "memory.db"
    memories: dict[str, str] = {}
    with Engine.open(str(db)) as engine:
        for start in range(0, SEEDED, 50):
            items = [NewMemory(content("seed", n), (f"t{n % 5}",)) for n in range(start, start + 50)]
            for item, result in zip(items, engine.memories.store_many(items), strict=True):
                memories[item.content] = result.value.memory.id
    assert sorted(p.name for p in db.parent.iterdir()) == [db.name], "the engine left its WAL behind"
    return Template(db, memories)


def place(template: Template, db: Path) -> dict[str, str]:
    """A copy of the template database at `db`: its memories' ids by content."""
    db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(template.path, db)
    return dict(template.memories)


def make_older_database(db: Path) -> None:
    """A database one schema version behind, as that version's code created it (no rows)."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db, isolation_level=None)
    define_log_functions(conn)  # the functions the log's migrations call, as the store has them
    try:
        for migration in MIGRATIONS[: SCHEMA_VERSION - 1]:
            conn.executescript(migration)
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION - 1}")
    finally:
        conn.close()


def overwrite_middle(db: Path, fraction: float, seed: int) -> None:
    """Overwrite `fraction` of the file's pages, centred on its middle, with seeded noise."""
    pages = db.stat().st_size // PAGE
    count = max(1, int(pages * fraction))
    first = (pages - count) // 2
    with db.open("r+b") as file:
        file.seek(first * PAGE)
        file.write(random.Random(seed).randbytes(count * PAGE))


def rows(db: Path, sql: str) -> list[Any]:
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


# -- checks ------------------------------------------------------------------------------------------------------


def error_text(result: CallToolResult) -> str:
    """The text of a tool error, checked to be one text item and no structured content."""
    assert result.is_error is True, result.structured_content
    assert result.structured_content is None, result
    return text_of(result)


def assert_names_cause(text: str, tool: str, cause: re.Pattern[str]) -> None:
    assert text.startswith(f"{tool}: "), text
    assert "Traceback" not in text, text
    assert "internal error" not in text.lower(), f"the error does not name its cause: {text!r}"
    assert cause.search(text), f"the error does not name its cause ({cause.pattern}): {text!r}"


def assert_no_traceback(stderr: str) -> None:
    # The message keeps the log lines and the exceptions, not the frames between them.
    summary = "\n".join(line for line in stderr.splitlines() if line and not line.startswith(" "))
    if "Traceback" in stderr:
        raise AssertionError(f"a traceback on stderr:\n{summary}")


# -- a read-only database file ---------------------------------------------------------------------------------


@dataclass
class ReadOnlySession:
    memories: dict[str, str]
    """Content -> id of every memory the file holds: the template's, then LATE more whose
    pages are still only in the WAL, as a server killed before a checkpoint leaves them."""
    before: dict[str, str]
    after: dict[str, str]
    recalled: dict[str, list[str]]
    """Query -> the ids recall found."""
    count: int
    writes: dict[str, CallToolResult]
    seq_before: int
    seq_after: int
    alive: bool
    stderr: str
    reopened: dict[str, str]


LATE = 5


@pytest.fixture(scope="module")
def read_only_file(tmp_path_factory: pytest.TempPathFactory, template: Template) -> ReadOnlySession:
    """A server on a read-only database file in a writable directory, its last writes still
    in the WAL: it starts; every write tool is tried once, between reads."""
    root = tmp_path_factory.mktemp("read-only-file")
    work, folder = root / "work", root / "data"
    memories = place(template, work / "memory.db")
    folder.mkdir()
    with Engine.open(str(work / "memory.db")) as engine:
        late = [NewMemory(content("late", n)) for n in range(LATE)]
        for item, result in zip(late, engine.memories.store_many(late), strict=True):
            memories[item.content] = result.value.memory.id
        for name in ("memory.db", "memory.db-wal"):  # copied while the engine holds them open
            shutil.copyfile(work / name, folder / name)
    db = folder / "memory.db"
    db.chmod(0o444)
    if not server_cannot_write(db):
        pytest.skip("cannot make a file read-only to the server here")
    before = snapshot(folder)
    seed, late_one = content("seed", 0), content("late", 0)
    first, second = memories[seed], memories[content("seed", 1)]
    with served(db, root / "server.log", read_only=True) as srv:
        seq_before = srv.seq()
        recalled = {q: srv.ids("recall", {"query": first_word(q)}) for q in (seed, late_one)}
        count = srv.call("survey")["memories"]
        writes = {
            "remember": srv.result("remember", {"memories": [{"content": "never stored: the file is read-only"}]}),
            "update": srv.result("update", {"ref": first, "add_tags": ["never-added"]}),
            "relate": srv.result("relate", {"add": [{"from": first, "to": second, "type": "never-related"}]}),
            "forget": srv.result("forget", {"refs": [second]}),
        }
        seq_after = srv.seq()
        alive = srv.tool_names() != []
    after = snapshot(folder)
    after.pop("memory.db-shm", None)  # the WAL's index, which readers may create
    db.chmod(0o644)
    return ReadOnlySession(
        memories=memories,
        before=before,
        after=after,
        recalled=recalled,
        count=count,
        writes=writes,
        seq_before=seq_before,
        seq_after=seq_after,
        alive=alive,
        stderr=(root / "server.log").read_text(),
        reopened=dict(rows(db, "SELECT m.content, n.id FROM memory m JOIN node n ON n.pk = m.node")),
    )


def test_read_only_file_is_served_for_reading_with_its_last_writes(read_only_file: ReadOnlySession) -> None:
    assert sorted(read_only_file.before) == ["memory.db", "memory.db-wal"]
    for query, found in read_only_file.recalled.items():
        assert found == [read_only_file.memories[query]], query
    assert read_only_file.count == SEEDED + LATE
    assert read_only_file.alive


def test_read_only_file_refuses_every_write_and_nothing_changes(read_only_file: ReadOnlySession) -> None:
    for tool, result in read_only_file.writes.items():
        assert result.is_error is True, (tool, result.structured_content)
        error_text(result)
    assert read_only_file.seq_after == read_only_file.seq_before
    assert read_only_file.after == read_only_file.before
    assert read_only_file.reopened == read_only_file.memories


def test_read_only_file_write_errors_say_the_database_is_read_only(read_only_file: ReadOnlySession) -> None:
    for tool, result in read_only_file.writes.items():
        assert_names_cause(error_text(result), tool, READ_ONLY)


def test_read_only_file_leaves_no_traceback_on_stderr(read_only_file: ReadOnlySession) -> None:
    assert_no_traceback(read_only_file.stderr)


@pytest.mark.parametrize(
    ("profile", "tool", "arguments"),
    [
        ("memdb", "store_memory", {"content": "never stored: the file is read-only", "tags": ["never-added"]}),
        (
            "knowledge-graph",
            "create_entities",
            {"entities": [{"name": "Never Stored", "entityType": "thing", "observations": ["never"]}]},
        ),
    ],
    ids=["memdb", "knowledge-graph"],
)
def test_read_only_file_write_error_names_the_cause_in_other_profiles(
    tmp_path: Path, template: Template, profile: str, tool: str, arguments: dict[str, Any]
) -> None:
    db = tmp_path / "data" / "memory.db"
    place(template, db)
    db.chmod(0o444)
    if not server_cannot_write(db):
        pytest.skip("cannot make a file read-only to the server here")
    before = digest(db)
    with served(db, tmp_path / "server.log", profile=profile, read_only=True) as srv:
        result = srv.result(tool, arguments)
    assert result.is_error is True, result.structured_content
    assert digest(db) == before
    text = text_of(result)
    assert "internal error" not in text.lower(), f"the error does not name its cause: {text!r}"
    assert READ_ONLY.search(text), text
    assert_no_traceback((tmp_path / "server.log").read_text())


# -- a read-only directory: the WAL and its index cannot be created ---------------------------------------------


@pytest.mark.parametrize("file_too", [False, True], ids=["directory", "directory-and-file"])
def test_read_only_directory_is_refused_at_startup_and_left_alone(
    tmp_path: Path, template: Template, file_too: bool
) -> None:
    folder = tmp_path / "data"
    db = folder / "memory.db"
    place(template, db)
    if file_too:
        db.chmod(0o444)
    folder.chmod(0o555)
    try:
        if not server_cannot_write(folder / "probe"):
            pytest.skip("cannot make a directory read-only to the server here")
        before = snapshot(folder)
        message = refused(db, read_only=True)
        assert READ_ONLY.search(message), message
        assert str(db) in message, message
        assert snapshot(folder) == before
    finally:
        folder.chmod(0o755)


def test_new_database_in_a_read_only_directory_is_refused_naming_the_cause(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        if not server_cannot_write(folder / "probe"):
            pytest.skip("cannot make a directory read-only to the server here")
        message = refused(folder / "memory.db", read_only=True)
        assert str(folder / "memory.db") in message, message
        assert READ_ONLY.search(message), f"the refusal does not say why: {message!r}"
        assert list(folder.iterdir()) == []
    finally:
        folder.chmod(0o755)


def test_read_only_file_needing_a_schema_upgrade_is_refused_and_left_alone(tmp_path: Path) -> None:
    db = tmp_path / "data" / "memory.db"
    make_older_database(db)
    db.chmod(0o444)
    if not server_cannot_write(db):
        pytest.skip("cannot make a file read-only to the server here")
    before = digest(db)
    message = refused(db, read_only=True)
    assert READ_ONLY.search(message), message
    assert digest(db) == before
    assert rows(db, "PRAGMA user_version") == [(SCHEMA_VERSION - 1,)]


# -- a full disk ---------------------------------------------------------------------------------------------------


@dataclass
class FullDisk:
    acknowledged: dict[str, str] = field(default_factory=dict)
    """Content -> id of every memory a successful `remember` reported."""
    seq_acknowledged: int = 0
    """The change log's position after the last acknowledged write."""
    failed: list[str] = field(default_factory=list)
    """The contents of the write that met the full disk."""
    failure: CallToolResult | None = None
    seq_at_failure: tuple[int, int] = (0, 0)
    """The change log's position just before and just after the failed write."""
    count_at_failure: tuple[int, int] = (0, -1)
    """Just after the failed write: (memories acknowledged so far, memories the server holds)."""
    read_after_failure: list[str] = field(default_factory=list)
    retried: CallToolResult | None = None
    """With a small filesystem: the failed write again, once space was freed."""
    stderr: str = ""
    restart_count: int = -1
    """How many memories the server reports once restarted without the limit."""
    restart_stderr: str = ""
    integrity: list[Any] = field(default_factory=list)
    log_seqs: list[int] = field(default_factory=list)
    stored: dict[str, str] = field(default_factory=dict)
    """Content -> id of every memory in the file afterwards."""


def remember_batch(srv: Native, contents: Sequence[str]) -> CallToolResult:
    return srv.result("remember", {"memories": [{"content": c, "tags": ["full-disk"]} for c in contents]})


def fill(srv: Native, outcome: FullDisk) -> None:
    """Write batches until one fails; record what was acknowledged and what failed."""
    seq = srv.seq()
    for n in range(MAX_BATCHES):
        contents = [content(f"b{n}", i) for i in range(BATCH)]
        result = remember_batch(srv, contents)
        if result.is_error:
            outcome.failed = contents
            outcome.failure = result
            outcome.seq_at_failure = (seq, srv.seq())
            outcome.count_at_failure = (len(outcome.acknowledged), srv.call("survey")["memories"])
            return
        memories = (result.structured_content or {})["memories"]
        assert [m["status"] for m in memories] == ["created"] * BATCH, memories
        outcome.acknowledged.update(zip(contents, (m["id"] for m in memories), strict=True))
        seq = outcome.seq_acknowledged = srv.seq()
    raise AssertionError(f"{MAX_BATCHES} batches fitted: the disk never filled up")


def verify(db: Path, log: Path, outcome: FullDisk) -> None:
    """Restart without any limit, then read the file directly."""
    with served(db, log) as srv:
        outcome.restart_count = srv.call("survey")["memories"]
    outcome.restart_stderr = log.read_text()
    outcome.integrity = rows(db, "PRAGMA integrity_check")
    outcome.log_seqs = [seq for (seq,) in rows(db, "SELECT seq FROM change_log ORDER BY seq")]
    outcome.stored = dict(rows(db, "SELECT m.content, n.id FROM memory m JOIN node n ON n.pk = m.node"))


@contextmanager
def small_filesystem(where: Path, size: int) -> Iterator[Path]:
    """A tmpfs of `size` bytes mounted at `where` (skips where this process may not mount)."""
    where.mkdir()
    libc = ctypes.CDLL(None, use_errno=True)
    options = f"size={size},mode=0755".encode()
    if libc.mount(b"tmpfs", str(where).encode(), b"tmpfs", 0, options) != 0:
        pytest.skip(f"cannot mount a small filesystem here: {os.strerror(ctypes.get_errno())}")
    try:
        yield where
    finally:
        libc.umount2(str(where).encode(), 2)  # MNT_DETACH


@pytest.fixture(scope="module", params=["file-size-limit", "small-filesystem"])
def full_disk(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> FullDisk:
    root = tmp_path_factory.mktemp(f"full-disk-{request.param}")
    outcome = FullDisk()
    if request.param == "file-size-limit":
        db = root / "data" / "memory.db"
        db.parent.mkdir()
        with served(db, root / "server.log", file_size=FILE_SIZE_LIMIT) as srv:
            fill(srv, outcome)
            outcome.read_after_failure = srv.ids("recall", {"query": first_word(content("b0", 0))})
        outcome.stderr = (root / "server.log").read_text()
        verify(db, root / "restart.log", outcome)
        return outcome
    with small_filesystem(root / "small", SMALL_FS_BYTES) as small:
        ballast = small / "ballast"
        ballast.write_bytes(b"\0" * BALLAST_BYTES)
        db = small / "memory.db"
        with served(db, root / "server.log") as srv:
            fill(srv, outcome)
            outcome.read_after_failure = srv.ids("recall", {"query": first_word(content("b0", 0))})
            ballast.unlink()
            outcome.retried = remember_batch(srv, outcome.failed)
            if not outcome.retried.is_error:
                memories = (outcome.retried.structured_content or {})["memories"]
                outcome.acknowledged.update(zip(outcome.failed, (m["id"] for m in memories), strict=True))
                outcome.seq_acknowledged = srv.seq()
        outcome.stderr = (root / "server.log").read_text()
        # Checked on a copy of the files as the server left them, off the small filesystem.
        copy = root / "copy"
        copy.mkdir()
        for name in ("memory.db", "memory.db-wal"):
            if (small / name).exists():
                shutil.copyfile(small / name, copy / name)
    verify(copy / "memory.db", root / "restart.log", outcome)
    return outcome


def test_full_disk_keeps_every_acknowledged_write(full_disk: FullDisk) -> None:
    assert len(full_disk.acknowledged) >= 2 * BATCH, "the disk filled up before the test wrote anything"
    missing = {c for c, i in full_disk.acknowledged.items() if full_disk.stored.get(c) != i}
    assert not missing, f"{len(missing)} acknowledged memories are gone: {sorted(missing)[:3]}"
    assert full_disk.restart_count == len(full_disk.acknowledged)


def test_full_disk_failed_write_leaves_nothing_behind(full_disk: FullDisk) -> None:
    assert full_disk.failure is not None
    before, after = full_disk.seq_at_failure
    assert after == before, "the failed write moved the change log"
    acknowledged, held = full_disk.count_at_failure
    assert held == acknowledged, "the server holds memories it did not acknowledge"
    if full_disk.retried is None or full_disk.retried.is_error:
        half = [c for c in full_disk.failed if c in full_disk.stored]
        assert not half, f"{len(half)} of the failed write's {BATCH} memories are in the file"
    assert set(full_disk.stored) == set(full_disk.acknowledged)


def test_full_disk_leaves_a_sound_file_and_a_gapless_change_log(full_disk: FullDisk) -> None:
    assert full_disk.integrity == [("ok",)]
    assert full_disk.log_seqs == list(range(1, len(full_disk.log_seqs) + 1))
    assert full_disk.log_seqs[-1] == full_disk.seq_acknowledged


def test_full_disk_still_serves_reads(full_disk: FullDisk) -> None:
    assert full_disk.read_after_failure == [full_disk.acknowledged[content("b0", 0)]]


@pytest.mark.parametrize("full_disk", ["small-filesystem"], indirect=True)  # a size limit stays for life
def test_full_disk_write_works_again_once_space_is_freed(full_disk: FullDisk) -> None:
    assert full_disk.retried is not None
    assert full_disk.retried.is_error is False, text_of(full_disk.retried)
    assert all(c in full_disk.stored for c in full_disk.failed)


def test_full_disk_failing_write_says_the_disk_is_full(full_disk: FullDisk) -> None:
    assert full_disk.failure is not None
    assert_names_cause(error_text(full_disk.failure), "remember", DISK_FULL)


def test_full_disk_leaves_no_traceback_on_stderr(full_disk: FullDisk) -> None:
    assert_no_traceback(full_disk.stderr)
    assert_no_traceback(full_disk.restart_stderr)


# -- a corrupt file ------------------------------------------------------------------------------------------------


@dataclass
class CorruptSession:
    refusal: str | None
    """The one-line refusal, when the server would not start."""
    results: dict[str, CallToolResult]
    alive: bool
    changed: bool
    """Whether the database file's bytes differ after the session."""
    stderr: str


def corrupt_session(db: Path, log: Path) -> CorruptSession:
    """Start a server on a damaged file and read through it (reads that record nothing)."""
    before = digest(db)
    started = start_alone(db)
    if started.returncode != 0:
        return CorruptSession(refusal_line(started), {}, False, digest(db) != before, started.stderr)
    with served(db, log) as srv:
        results = {
            "survey": srv.result("survey", {}),
            "audit": srv.result("audit", {"since": 1, "limit": 500}),
        }
        alive = srv.tool_names() != []
    return CorruptSession(None, results, alive, digest(db) != before, log.read_text())


@pytest.fixture(scope="module")
def corrupt_middle(tmp_path_factory: pytest.TempPathFactory, template: Template) -> CorruptSession:
    root = tmp_path_factory.mktemp("corrupt-middle")
    db = root / "data" / "memory.db"
    place(template, db)
    overwrite_middle(db, 1 / 3, seed=7)
    return corrupt_session(db, root / "server.log")


def test_corrupt_middle_is_detected_at_startup_or_on_the_first_read(corrupt_middle: CorruptSession) -> None:
    if corrupt_middle.refusal is not None:
        assert CORRUPT.search(corrupt_middle.refusal), corrupt_middle.refusal
        return
    # The first read counts every table, so it crosses damaged pages.
    assert corrupt_middle.results["survey"].is_error, "a read over damaged pages succeeded"
    assert corrupt_middle.alive


def test_corrupt_middle_is_not_repaired_by_reading(corrupt_middle: CorruptSession) -> None:
    assert not corrupt_middle.changed


def test_corrupt_middle_read_errors_say_the_file_is_damaged(corrupt_middle: CorruptSession) -> None:
    for tool, result in corrupt_middle.results.items():
        if result.is_error:
            assert_names_cause(error_text(result), tool, CORRUPT)


def test_corrupt_middle_leaves_no_traceback_on_stderr(corrupt_middle: CorruptSession) -> None:
    assert_no_traceback(corrupt_middle.stderr)


def test_write_into_a_slightly_corrupt_file_is_refused_clearly_or_kept(tmp_path: Path, template: Template) -> None:
    """A few damaged pages the write does not touch: if the write is acknowledged, it is
    there after a restart; if not, the error names the damage."""
    db = tmp_path / "data" / "memory.db"
    place(template, db)
    overwrite_middle(db, 0.02, seed=11)
    with served(db, tmp_path / "server.log") as srv:
        result = srv.result("remember", {"memories": [{"content": "written into a damaged file"}]})
    assert_no_traceback((tmp_path / "server.log").read_text())
    if result.is_error:
        assert_names_cause(error_text(result), "remember", CORRUPT)
        return
    [stored] = (result.structured_content or {})["memories"]
    with served(db, tmp_path / "restart.log") as srv:
        assert srv.get(stored["id"])["text"] == "written into a damaged file"
    assert_no_traceback((tmp_path / "restart.log").read_text())


def test_truncated_file_is_reported_clearly_and_left_alone(tmp_path: Path, template: Template) -> None:
    db = tmp_path / "data" / "memory.db"
    place(template, db)
    with db.open("r+b") as file:
        file.truncate(db.stat().st_size // PAGE // 2 * PAGE)
    session = corrupt_session(db, tmp_path / "server.log")
    if session.refusal is not None:
        assert CORRUPT.search(session.refusal), session.refusal
        assert str(db) in session.refusal
    else:
        assert any(r.is_error for r in session.results.values()), "reads of a half file succeeded"
        for tool, result in session.results.items():
            if result.is_error:
                assert_names_cause(error_text(result), tool, CORRUPT)
    assert not session.changed
    assert_no_traceback(session.stderr)


def test_file_of_noise_is_refused_and_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    db = folder / "memory.db"
    db.write_bytes(random.Random(3).randbytes(64 * 1024))
    before = snapshot(folder)
    message = refused(db)
    assert CORRUPT.search(message), message
    assert str(db) in message, message
    assert snapshot(folder) == before


def test_corrupt_middle_over_http_read_error_says_the_file_is_damaged(tmp_path: Path, template: Template) -> None:
    db = tmp_path / "data" / "memory.db"
    place(template, db)
    overwrite_middle(db, 1 / 3, seed=7)
    with HttpServer.start(db) as server, Native.connect(server.url) as client:
        result = client.result("survey", {})
    assert_names_cause(error_text(result), "survey", CORRUPT)
    assert_no_traceback(server.stderr)


# -- a database from a newer mnemodb ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("profile", "flags"),
    [
        ("native", ()),
        ("native", ("--http", "--port", "0")),
        ("topodb", ()),
    ],
    ids=["native", "native-http", "topodb"],
)
def test_newer_schema_is_refused_and_the_file_left_untouched(
    tmp_path: Path, template: Template, profile: str, flags: tuple[str, ...]
) -> None:
    folder = tmp_path / "data"
    db = folder / "memory.db"
    place(template, db)
    conn = sqlite3.connect(db, isolation_level=None)
    try:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    finally:
        conn.close()
    before = snapshot(folder)
    message = refused(db, *flags, profile=profile)
    assert "newer" in message and "upgrade mnemodb" in message, message
    assert str(SCHEMA_VERSION + 1) in message and str(db) in message, message
    assert snapshot(folder) == before
