"""The change log kept packed reads as it read kept whole: every entry, page, item history
and as-of read is the same, and a log an older schema wrote whole is packed in place by
the upgrade, with the same replies after."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.engine.items import Patch
from mnemodb.engine.properties import CloseEdge, CreateNode, Link, Ref, RemoveNode, SetEmbedding, SetProps
from mnemodb.model.packed_changes import is_packed, pack, unpack
from mnemodb.model.records import NewMemory
from mnemodb.store import open_store
from mnemodb.store.postgresql import changes as postgresql_changes
from mnemodb.store.postgresql import schema as postgresql_schema
from mnemodb.store.sqlite import schema as sqlite_schema
from stores import chosen_backend, store_location
from support import Clock


@contextlib.contextmanager
def engine_on(db_path: Path, clock: Clock) -> Iterator[Engine]:
    with Engine(open_store(store_location(db_path)), clock=clock, access_interval=3600) as opened:
        yield opened


def workload(eng: Engine, clock: Clock) -> list[int]:
    """Every kind of write, each a second apart; the times between them."""
    times: list[int] = []

    def step() -> None:
        times.append(clock.now)
        clock.now += 1000

    stored = eng.memories.store_many(
        [
            NewMemory('Deploys run on "Fridays" \\ Ünïcode', ("ops", "deploy"), 3, "fact"),
            NewMemory("The build uses uv", ("build",), 0, "general", summary="build tool", props={"x": 1.5}),
            NewMemory("A note to forget", ("private",)),
        ]
    )
    deploys, build, secret = (outcome.value.memory for outcome in stored)
    step()
    eng.memories.update(deploys.hash, content="Deploys run on Thursdays", tags=["ops"], importance=5)
    step()
    eng.items.revise(build.id, Patch(add_tags=("tools",), summary="the build tool"))
    step()
    eng.items.archive(build.id)
    step()
    eng.items.unarchive(build.id)
    step()
    eng.graph.create_entities(
        [NewEntity("Ada", "person", ("writes code", "likes tea")), NewEntity("Core", "team", ("owns the build",))]
    )
    step()
    eng.graph.add_observations([("Ada", ["leads Core"]), ("Core", ["ships weekly"])])
    step()
    eng.graph.create_relations([NewRelation("Ada", "Core", "member_of"), NewRelation("Core", "Ada", "led_by")])
    step()
    eng.graph.delete_observations([("Ada", ["likes tea"])])
    step()
    eng.items.revise("Ada", Patch(name="Ada L", entity_type="engineer"))
    step()
    eng.graph.delete_relations([NewRelation("Core", "Ada", "led_by")])
    step()
    ids, _ = eng.nodes.submit(
        [
            CreateNode("Service", {"name": "api", "port": 8080, "up": True}),
            CreateNode("Service", {"name": "db"}),
            Link(Ref(0), Ref(1), "calls", {"weight": 0.5}, valid_from=times[0]),
            SetEmbedding(Ref(0), "test-model", (0.25, -1.0, 3.5)),
        ]
    )
    step()
    api, db, link = ids[0], ids[1], ids[2]
    assert api is not None and db is not None and link is not None
    eng.nodes.submit(
        [SetProps(api, {"port": None, "zone": "eu"}), SetProps(deploys.id, {"content": "Deploys: any day"})]
    )
    step()
    eng.nodes.submit([CloseEdge(link), RemoveNode(db)])
    step()
    eng.items.forget([secret.id])
    step()
    return times


def replies(eng: Engine, times: list[int]) -> list[Any]:
    """What every reader of the log answers, as text (so key order and types count)."""
    log = eng.changes()
    out: list[Any] = [[(c.seq, c.at, c.scope, c.op, c.target, c.actor, json.dumps(c.data)) for c in log]]
    for filters in ({}, {"ops": ["create_node", "create_edge"]}):
        before = None
        while True:
            page = eng.change_log.page(every_scope=True, limit=4, before_seq=before, **filters)  # type: ignore[arg-type]
            out.append([json.dumps([c.seq, c.op, c.data]) for c in page.changes])
            if page.next_before is None:
                break
            before = page.next_before
    targets = list(dict.fromkeys(c.target for c in log if c.target))
    for target in targets:
        out.append(
            repr(eng.items.history(target)) if eng.items.get([target], record_access=False)[0] is not None else None
        )
        for at in times:
            out.append(repr(eng.items.get([target], as_of=at, record_access=False)))
            out.append(repr(eng.nodes.get_node(target, as_of=at)))
    return out


@contextlib.contextmanager
def raw_log(db_path: Path) -> Iterator[tuple[Any, str, str]]:
    """A connection of the test's own to the database (opening no store, which would upgrade
    it), its log table's name and the mark of a parameter."""
    location = store_location(db_path)
    if chosen_backend() == "sqlite":
        with contextlib.closing(sqlite3.connect(location, isolation_level=None)) as conn:
            yield conn, "change_log", "?"
        return
    import psycopg

    parts = urlsplit(location)
    options = parse_qsl(parts.query, keep_blank_values=True)
    schema = dict(options).get("schema", "mnemodb")
    libpq = [(k, v) for k, v in options if k not in ("schema", "pool_size", "pool_timeout")]
    with psycopg.connect(urlunsplit(parts._replace(query=urlencode(libpq))), autocommit=True) as pg:
        yield pg, f'"{schema}".change_log', "%s"


def stored(db_path: Path) -> list[tuple[int, int, str | None, str | None, str]]:
    with raw_log(db_path) as (conn, table, _):
        return [tuple(row) for row in conn.execute(f"SELECT seq, at, scope, target, data FROM {table} ORDER BY seq")]


def _before_packing(migrations: tuple[Any, ...], packs: Any) -> int:
    """The schema version before the migration that packs the log (`packs` is in it)."""
    return next(
        number
        for number, step in enumerate(migrations)
        if step is packs or (isinstance(step, str) and isinstance(packs, str) and packs in step)
    )


def as_an_older_schema_wrote_it(db_path: Path) -> None:
    """The log rewritten whole (every entry's data a JSON object, as before packing) and
    the database marked as of the schema before packing, with the index that schema had."""
    rows = stored(db_path)
    with raw_log(db_path) as (conn, table, mark):
        for seq, at, scope, target, data in rows:
            whole = json.dumps(unpack(at, scope, target, data), separators=(",", ":"), ensure_ascii=False)
            conn.execute(f"UPDATE {table} SET data = {mark} WHERE seq = {mark}", [whole, seq])
        conn.execute(f"CREATE INDEX change_log_op ON {table} (op, seq)")
        # A later migration (the importance index) makes an index of its own.
        conn.execute(f"DROP INDEX {table.replace('change_log', 'memory_scope_importance')}")
        if isinstance(conn, sqlite3.Connection):
            # A later migration (18) makes a table of its own: what that schema did not have.
            for trigger in ("insert", "delete", "update"):
                conn.execute(f"DROP TRIGGER entity_name_text_{trigger}")
            conn.execute("DROP TABLE entity_name_text")
            version = _before_packing(sqlite_schema.MIGRATIONS, "packed_change(")
            conn.execute(f"PRAGMA user_version = {version}")
        else:
            meta = table.replace("change_log", "meta")
            version = _before_packing(postgresql_schema.MIGRATIONS, postgresql_changes.pack_log)
            conn.execute(f"UPDATE {meta} SET value = '{version}' WHERE key = 'schema_version'")


def test_a_packed_log_reads_as_the_whole_one_did_and_an_upgrade_packs_a_whole_one(db_path: Path) -> None:
    clock = Clock()
    with engine_on(db_path, clock) as eng:
        times = workload(eng, clock)
        packed_replies = replies(eng, times)
    packed = stored(db_path)
    # Every entry is packed as it is written, but the forgotten memory's (redacted: its hash
    # is no longer its content's) and the relation valid from before it was made.
    whole = [json.loads(row[4]) for row in packed if not is_packed(row[4])]
    assert whole and all(data.get("redacted") or data.get("valid_from") == times[0] for data in whole)
    assert len(whole) < len(packed) / 4

    as_an_older_schema_wrote_it(db_path)
    whole_bytes = sum(len(row[4].encode()) for row in stored(db_path))
    with engine_on(db_path, clock) as eng:  # upgraded as it opens
        assert replies(eng, times) == packed_replies
    upgraded = stored(db_path)
    assert upgraded == packed
    assert sum(len(row[4].encode()) for row in upgraded) < whole_bytes * 0.6
    with raw_log(db_path) as (conn, table, _):
        assert conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == len(packed)
    with engine_on(db_path, clock) as eng:
        assert replies(eng, times) == packed_replies


def test_an_entry_rewritten_by_forgetting_stays_packed_where_it_can(db_path: Path) -> None:
    """Forgetting rewrites an item's entries without their text: they read back as
    rewritten, the item's id and scope still given by their row."""
    clock = Clock()
    with engine_on(db_path, clock) as eng:
        [ada] = eng.graph.create_entities([NewEntity("Ada", "person", ("secret fact",))])
        eng.items.forget([ada.id])
        log = eng.changes()
    assert [c.op for c in log] == ["create_node", "remove_node"]
    assert log[0].data["id"] == ada.id
    assert log[0].data["entity"] == {"name": "", "entity_type": "person", "observations": []}
    rows = stored(db_path)
    assert "secret" not in rows[0][4]
    assert rows[0][4] == pack(rows[0][1], rows[0][2], rows[0][3], dict(log[0].data))
