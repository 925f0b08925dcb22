"""Tenancy over Streamable HTTP: a token never reads nor changes a scope it may not use.

One database is seeded through the engine with data of team A, of the `shared` scope and of
team B. Every text team B wrote carries a token of its own containing one marker word, so
that a leak of any field shows up in a reply as the marker, one of those tokens, one of B's
ids (also in the decimal form topodb's errors print) or one of B's content hashes. Some
edges join B's items to shared ones: edges B wrote in its own scope, and edges written into
the shared scope, which team A reads; an edge A may see must still not give away what lies
at its far end.

For each of the four profiles a real `mnemodb serve --http` runs on a copy of that
database. The SDK's client, with team A's token (read: A and shared; write: A), lists the
tools; then every tool is called with that token, by plain JSON-RPC POSTs: ordinary calls,
calls naming B's scope in the tool's scope parameters, and calls naming B's items directly
(ids, hashes, entity names, edge ids, model names). Each reply is searched for B's data; a
call naming B's scope must be refused, saying the scope is not readable (or writable) with
the token, and write nothing; a call naming B's items must answer exactly as the same call
naming items that do not exist (after swapping the names), so nothing tells A that B's
items are there. After every tool, the database is read with the engine (no grant): B's
nodes, edges, vectors and change-log entries are as they were, and whatever A wrote is in
A's scope. A read-only token of team A is refused every tool that writes, and changes
nothing; it is served every tool that reads.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from http_support import HttpServer
from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import EntityNote
from mnemodb.engine.properties import CloseEdge, CreateNode, Link, SetEmbedding
from mnemodb.model.records import Edge
from native_support import Native

TEAM_A = "01HV7N8Q3Y2J6W5X4Z9A0B1C2D"
TEAM_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"
TEAM_C = "01HV7N8Q3Y2J6W5X4Z9A0B1C2F"
SHARED = "shared"
MARKER = "zorblax"
"""In every text of team B, and nowhere else."""
GHOST_PREFIX = "quibble"
"""What stands for the marker in the names of items that do not exist."""

PROFILES = ("native", "memdb", "topodb", "knowledge-graph")
PROFILE_FLAGS = {"topodb": ("--allow-unscoped-changes",)}
"""topodb's change feed is served, so that the token, not the switch, is what refuses it."""

NOT_READABLE = f'scope "{TEAM_B}" is not readable with token "team-a"'
NOT_WRITABLE = f'scope "{TEAM_B}" is not writable with token "team-a"'
WHOLE_LOG = 'it is not readable with token "team-a"'
READ_ONLY = 'token "a-reader" is read-only'
PROTOCOL = "2025-11-25"

# Team B's texts. Each token is unique, so a reply naming one says which field leaked.
B_CONTENT_1 = "zorblaxcontentone falcon launch codes and budget"
B_CONTENT_2 = "zorblaxcontenttwo falcon launch fallback plan"
B_OBSERVATION_1 = "zorblaxobsone falcon launch owner"
B_TOKENS = (
    "zorblaxcontentone",
    "zorblaxcontenttwo",
    "zorblaxtagone",
    "zorblaxtagtwo",
    "zorblaxsummaryone",
    "zorblaxkind",
    "zorblaxpropkey",
    "zorblaxpropvalue",
    "zorblaxnameone",
    "zorblaxnametwo",
    "zorblaxobsone",
    "zorblaxquirk",
    "zorblaxobstwo",
    "zorblaxtype",
    "zorblaxentprop",
    "zorblaxentvalue",
    "zorblaxfollows",
    "zorblaxrelates",
    "zorblaxtitle",
    "zorblaxtaskkey",
    "zorblaxtaskvalue",
    "zorblaxblocks",
    "zorblaxedgekey",
    "zorblaxedgevalue",
    "zorblaxwas",
    "zorblax-model",
)

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid_int(text: str) -> int:
    value = 0
    for ch in text.upper():
        value = value * 32 + _CROCKFORD.index(ch)
    return value


def is_ulid(text: str) -> bool:
    return len(text) == 26 and all(ch in _CROCKFORD for ch in text.upper())


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def now_ms() -> int:
    return int(time.time() * 1000)


# -- the database as the engine sees it ---------------------------------------------------------------


@dataclass
class Snapshot:
    nodes: dict[str, dict[str, Any]]
    access: dict[str, Any]
    edges: dict[str, dict[str, Any]]
    vectors: dict[tuple[str, str], dict[str, Any]]
    changes: list[tuple[Any, ...]]


def snapshot(db: Path) -> Snapshot:
    """Everything in the database, read with the engine and no grant."""
    with Engine.open(str(db), create_parent=False) as engine:
        records = list(engine.export())[1:]
        changes = [(c.seq, c.at, c.scope, c.op, c.target, json.dumps(c.data, sort_keys=True)) for c in engine.changes()]
    nodes: dict[str, dict[str, Any]] = {}
    access: dict[str, Any] = {}
    edges: dict[str, dict[str, Any]] = {}
    vectors: dict[tuple[str, str], dict[str, Any]] = {}
    for record in records:
        if record["type"] == "node":
            node = dict(record)
            access[node["id"]] = node.pop("access", None)
            nodes[node["id"]] = node
        elif record["type"] == "edge":
            edges[record["id"]] = record
        else:
            vectors[record["node"], record["model"]] = record
    return Snapshot(nodes, access, edges, vectors, changes)


def current_seq(db: Path) -> int:
    with Engine.open(str(db), create_parent=False) as engine:
        return engine.current_seq()


# -- the seeded world ------------------------------------------------------------------------------------


@dataclass
class World:
    template: Path
    ids: dict[str, str]
    """Seeded node and edge ids by label (A1, SHUB, B_ENT1, B_RELATES...)."""
    hashes: dict[str, str]
    b_nodes: frozenset[str]
    b_edges: frozenset[str]
    """B's own edges (in B's scope). The shared edges touching B's items (S_FEEDS...) are
    not B's, but B's part of a snapshot takes them in: they touch B's nodes."""
    b_memory_pks: frozenset[int]
    b_edge_pks: frozenset[int]
    secrets: list[tuple[str, tuple[str, ...]]]
    """(what, the forms it may take in a reply), lower-cased."""
    ghosts: dict[str, str]
    """Each of B's names, ids and hashes, and the name of something that does not exist."""
    tokens: dict[str, str]
    seeded: Snapshot

    def id(self, label: str) -> str:
        return self.ids[label]

    def labelled(self, text: str) -> str:
        """`text` with each seeded id and hash followed by its label, for failure messages."""
        for label, value in (*self.ids.items(), *self.hashes.items()):
            text = re.sub(f"{value}(?!<)", f"{value}<{label}>", text)
        return text

    def hash(self, label: str) -> str:
        return self.hashes[label]

    def b_part(self, snap: Snapshot, *, with_access: bool = False) -> dict[str, Any]:
        """What of `snap` is team B's: its nodes, every edge in its scope or touching its
        nodes, their vectors, and every change-log entry in its scope or naming them."""
        nodes = {i: n for i, n in snap.nodes.items() if n["scope"] == TEAM_B or i in self.b_nodes}
        ids = set(nodes) | self.b_nodes
        edges = {
            i: e
            for i, e in snap.edges.items()
            if e["scope"] == TEAM_B or e["from"] in ids or e["to"] in ids or i in self.b_edges
        }
        watched = ids | set(edges) | self.b_edges
        part: dict[str, Any] = {
            "nodes": nodes,
            "edges": edges,
            "vectors": {k: v for k, v in snap.vectors.items() if k[0] in ids},
            "changes": [
                c for c in snap.changes if c[2] == TEAM_B or c[4] in watched or any(i in c[5] for i in watched)
            ],
        }
        if with_access:
            part["access"] = {i: a for i, a in snap.access.items() if i in ids}
        return part


def _seed(db: Path) -> World:
    ids: dict[str, str] = {}
    hashes: dict[str, str] = {}
    pks: dict[str, int] = {}
    with Engine.open(str(db), read_scopes=[SHARED, TEAM_A, TEAM_B]) as engine:
        tokens = {
            "a": engine.tokens.create("team-a", read_scopes=[TEAM_A, SHARED], write_scope=TEAM_A)[1],
            "a-reader": engine.tokens.create(
                "a-reader", read_scopes=[TEAM_A, SHARED], write_scope=TEAM_A, read_only=True
            )[1],
            "b": engine.tokens.create("team-b", read_scopes=[TEAM_B, SHARED], write_scope=TEAM_B)[1],
            # Reads what team A reads, writes only a scope of its own: A is readable, not writable.
            "a-visitor": engine.tokens.create("a-visitor", read_scopes=[TEAM_A, SHARED], write_scope=TEAM_C)[1],
            # Team A with the shared scope writable too.
            "a-shared": engine.tokens.create(
                "team-a-shared", read_scopes=[TEAM_A, SHARED], write_scope=TEAM_A, write_scopes=[SHARED]
            )[1],
        }

        def memory(label: str, content: str, scope: str, **fields: Any) -> None:
            stored = engine.memories.store(content, scope=scope, **fields).memory
            ids[label], hashes[label], pks[label] = stored.id, stored.hash, stored.pk

        def entity(label: str, name: str, kind: str, observations: Sequence[str], scope: str, **props: Any) -> None:
            note = EntityNote(NewEntity(name, kind, tuple(observations)), props)
            _, [remembered] = engine.items.remember(entities=[note], scope=scope)
            assert remembered.status == "created" and remembered.item is not None
            ids[label] = remembered.item.id

        def edge(label: str, src: str, dst: str, kind: str, scope: str, **props: Any) -> None:
            [made_id], _ = engine.nodes.submit([Link(ids[src], ids[dst], kind, props, scope)])
            assert made_id is not None
            [made] = engine.items.get([made_id], record_access=False)
            assert isinstance(made, Edge)
            ids[label], pks[label] = made.id, made.pk

        # shared
        memory("SM", "Shared falcon launch calendar for every team", SHARED, tags=["falcon", "calendar"])
        entity("SHUB", "SharedHub", "project", ["Shared hub for the falcon launch"], SHARED)
        entity("SHUB2", "SharedHub2", "project", ["Second shared hub for the falcon launch"], SHARED)
        edge("S_ABOUT", "SM", "SHUB", "about", SHARED)
        entity("SSPOKE", "SharedSpoke", "project", ["Shared spoke of the falcon launch"], SHARED)
        memory("SM2", "Shared falcon launch budget sheet", SHARED, tags=["falcon"])
        # team A
        memory("A1", "Team A falcon launch checklist", TEAM_A, tags=["falcon", "alpha"], importance=5)
        memory("A2", "Team A falcon launch retro notes", TEAM_A, tags=["alpha"])
        entity("A_SVC", "AlphaService", "service", ["Alpha falcon launch owner", "Quirk: alpha retries"], TEAM_A)
        entity("A_DB", "AlphaDb", "database", ["Alpha falcon launch storage"], TEAM_A)
        edge("A_FOLLOWS", "A1", "A2", "follows", TEAM_A)
        edge("A_DEPENDS", "A_SVC", "A_DB", "depends_on", TEAM_A)
        edge("A_USES", "A_SVC", "SHUB", "uses", TEAM_A)
        edge("A_ABOUT", "A1", "A_SVC", "about", TEAM_A)
        [task] = engine.nodes.submit([CreateNode("Task", {"title": "alpha falcon launch task"}, TEAM_A)])[0]
        assert task is not None
        ids["A_TASK"] = task
        edge("A_BLOCKS", "A_TASK", "A1", "blocks", TEAM_A)
        # team B: every text carries the marker
        memory(
            "B1",
            B_CONTENT_1,
            TEAM_B,
            tags=["falcon", "zorblaxtagone"],
            importance=9,
            memory_type="zorblaxkind",
            summary="zorblaxsummaryone",
            props={"zorblaxpropkey": "zorblaxpropvalue"},
        )
        memory("B2", B_CONTENT_2, TEAM_B, tags=["zorblaxtagtwo"])
        entity(
            "B_ENT1",
            "zorblaxnameone",
            "service",
            [B_OBSERVATION_1, "Quirk: zorblaxquirk falcon"],
            TEAM_B,
            zorblaxentprop="zorblaxentvalue",
        )
        entity("B_ENT2", "zorblaxnametwo", "zorblaxtype", ["zorblaxobstwo falcon launch backup"], TEAM_B)
        [b_task] = engine.nodes.submit(
            [CreateNode("Task", {"title": "zorblaxtitle falcon launch", "zorblaxtaskkey": "zorblaxtaskvalue"}, TEAM_B)]
        )[0]
        assert b_task is not None
        ids["B_TASK"] = b_task
        edge("B_FOLLOWS", "B1", "B2", "zorblaxfollows", TEAM_B)
        edge("B_RELATES", "B_ENT1", "B_ENT2", "zorblaxrelates", TEAM_B)
        edge("B_ABOUT", "B1", "B_ENT1", "about", TEAM_B)
        edge("B_BLOCKS", "B_TASK", "B1", "zorblaxblocks", TEAM_B, zorblaxedgekey="zorblaxedgevalue")
        edge("B_WAS", "B_TASK", "B_ENT1", "zorblaxwas", TEAM_B)
        engine.nodes.submit([CloseEdge(ids["B_WAS"])])
        # B's items tied to shared ones, by edges in B's scope...
        edge("B_TO_HUB", "B_ENT1", "SHUB", "uses", TEAM_B)
        edge("B_ABOUT_HUB", "B2", "SHUB", "about", TEAM_B)
        edge("B_TO_SPOKE", "B_ENT1", "SSPOKE", "uses", TEAM_B)
        edge("B_ABOUT_SM2", "B2", "SM2", "about", TEAM_B)
        # ...and by edges written into the shared scope, which team A reads (team B's own
        # token can write them: `relate` with scope "shared" between SharedHub and its entity).
        edge("S_FEEDS", "SHUB", "B_ENT2", "feeds", SHARED)
        edge("S_FEEDS2", "SHUB2", "B_ENT2", "feeds", SHARED)
        edge("S_FEEDS_MEM", "SM", "B2", "feeds", SHARED)
        engine.nodes.submit(
            [
                SetEmbedding(ids["A1"], "shared-model", (1.0, 0.0)),
                SetEmbedding(ids["A_SVC"], "shared-model", (0.7, 0.3)),
                SetEmbedding(ids["B1"], "zorblax-model", (0.1, 0.2, 0.3)),
                SetEmbedding(ids["B2"], "shared-model", (1.0, 0.0)),
                SetEmbedding(ids["B_ENT1"], "shared-model", (0.9, 0.1)),
                SetEmbedding(ids["B_TASK"], "shared-model", (0.8, 0.2)),
            ]
        )
    b_edge_labels = (
        "B_FOLLOWS",
        "B_RELATES",
        "B_ABOUT",
        "B_BLOCKS",
        "B_WAS",
        "B_TO_HUB",
        "B_ABOUT_HUB",
        "B_TO_SPOKE",
        "B_ABOUT_SM2",
    )
    b_nodes = frozenset(ids[k] for k in ("B1", "B2", "B_ENT1", "B_ENT2", "B_TASK"))
    b_edges = frozenset(ids[k] for k in b_edge_labels)
    secrets: list[tuple[str, tuple[str, ...]]] = [(f"B's text {t!r}", (t,)) for t in B_TOKENS]
    ghosts = {t: t.replace(MARKER, GHOST_PREFIX) for t in B_TOKENS}
    labels = {v: k for k, v in ids.items()}
    for n, value in enumerate(sorted(b_nodes | b_edges)):
        secrets.append((f"B's id {labels[value]}", (value.lower(), str(ulid_int(value)))))
        ghosts[value] = f"01ARZ3NDEKTSV4RRFFQ69G{n:04d}"
    for label in ("B1", "B2"):
        secrets.append((f"B's hash {label}", (hashes[label],)))
        ghosts[hashes[label]] = sha256(f"ghost of {label}")
    return World(
        template=db,
        ids=ids,
        hashes=hashes,
        b_nodes=b_nodes,
        b_edges=b_edges,
        b_memory_pks=frozenset((pks["B1"], pks["B2"])),
        b_edge_pks=frozenset(pks[k] for k in b_edge_labels),
        secrets=secrets,
        ghosts=ghosts,
        tokens=tokens,
        seeded=snapshot(db),
    )


# -- replies and the checks on them ------------------------------------------------------------------------


@dataclass
class Reply:
    error: bool
    rpc: bool
    """A JSON-RPC error rather than a tool result."""
    text: str
    structured: Any

    def blob(self) -> str:
        return f"{self.text}\n{json.dumps(self.structured, ensure_ascii=False, sort_keys=True)}"


def _swap(text: str, pairs: Sequence[tuple[str, str]]) -> str:
    for old, new in pairs:
        text = text.replace(old, new)
    return text


# What differs between two calls whatever they touch: the id a topodb CreateEdge error says
# the new edge would have had, and the change-log position a topodb write answers with.
_VOLATILE = (
    (re.compile(r"CreateEdge EdgeId\(Ulid\(\d+\)\)"), "CreateEdge EdgeId(...)"),
    (re.compile(r'"seq": ?\d+'), '"seq":N'),
)


def _steady(text: str) -> str:
    for pattern, replacement in _VOLATILE:
        text = pattern.sub(replacement, text)
    return text


class Tenant:
    """One token's client of one server, with the checks every call goes through. Problems
    are collected, so one test lists every wrong reply of its tool."""

    def __init__(self, server: HttpServer, secret: str, world: World, profile: str, db: Path) -> None:
        self.server = server
        self.secret = secret
        self.world = world
        self.profile = profile
        self.db = db
        self.problems: list[str] = []
        self.calls = 0

    def problem(self, tool: str, args: Mapping[str, Any], what: str) -> None:
        self.problems.append(self.world.labelled(f"{tool} {json.dumps(args, ensure_ascii=False)}: {what}"))

    def expect(self, condition: bool, tool: str, args: Mapping[str, Any], what: str) -> None:
        if not condition:
            self.problem(tool, args, what)

    # -- calls -------------------------------------------------------------------------------------

    def call(self, tool: str, args: Mapping[str, Any]) -> Reply:
        """One `tools/call` POSTed with the token (the SDK's client spends some 40 ms a call
        on its own; a plain request keeps hundreds of calls quick)."""
        self.calls += 1
        message = {
            "jsonrpc": "2.0",
            "id": self.calls,
            "method": "tools/call",
            "params": {"name": tool, "arguments": args},
        }
        headers = {"Authorization": f"Bearer {self.secret}", "MCP-Protocol-Version": PROTOCOL}
        status, reply = self.server.post_mcp(message, headers)
        assert status == 200 and isinstance(reply, dict), (tool, args, status, reply)
        if "error" in reply:
            error = reply["error"]
            data = "" if error.get("data") is None else json.dumps(error["data"], ensure_ascii=False)
            return Reply(True, True, f"{error.get('message', '')} {data}".strip(), None)
        result = reply["result"]
        text = "\n".join(c["text"] if c.get("type") == "text" else json.dumps(c) for c in result.get("content", []))
        return Reply(bool(result.get("isError")), False, text, result.get("structuredContent"))

    def check(self, tool: str, args: Mapping[str, Any], reply: Reply, allow: Sequence[str] = ()) -> None:
        """Nothing of team B in the reply, except what the call itself named; no crash."""
        blob = reply.blob().lower()
        given = (json.dumps(args, ensure_ascii=False) + " ".join(allow)).lower()
        leaked = [
            what
            for what, forms in self.world.secrets
            if not any(form in given for form in forms) and any(form in blob for form in forms)
        ]
        if MARKER in blob and MARKER not in given:
            leaked.append(f"the marker {MARKER!r}")
        if self.profile == "memdb":
            leaked += self._memdb_ids(reply.structured)
        if leaked:
            self.problem(tool, args, f"leaks {', '.join(leaked)}: {reply.text[:600]}")
        if "traceback" in blob or "internal error" in blob:
            self.problem(tool, args, f"crashed: {reply.text[:600]}")

    def _memdb_ids(self, value: Any) -> list[str]:
        """memdb names memories and relationships by integer ids too."""
        found: list[str] = []
        if isinstance(value, dict):
            if "hash" in value and value.get("id") in self.world.b_memory_pks:
                found.append(f"B's memory id {value['id']}")
            if "from_hash" in value and value.get("id") in self.world.b_edge_pks:
                found.append(f"B's relationship id {value['id']}")
            for item in value.values():
                found += self._memdb_ids(item)
        elif isinstance(value, list):
            for item in value:
                found += self._memdb_ids(item)
        return found

    def ok(self, tool: str, args: Mapping[str, Any], *, allow: Sequence[str] = ()) -> Reply:
        """A call that must succeed (and show nothing of B)."""
        reply = self.call(tool, args)
        self.check(tool, args, reply, allow)
        if reply.error or (isinstance(reply.structured, dict) and reply.structured.get("ok") is False):
            self.problem(tool, args, f"failed: {reply.text[:600]}")
        return reply

    def result(self, reply: Reply) -> Any:
        """The value of a success, without memdb's envelope."""
        value = reply.structured
        if self.profile == "memdb" and isinstance(value, dict):
            return value.get("result")
        return value

    @staticmethod
    def says(reply: Reply, message: str) -> bool:
        """The reply's error says `message` (memdb's is inside its JSON envelope)."""
        error = reply.structured.get("error") if isinstance(reply.structured, dict) else None
        inner = error.get("message", "") if isinstance(error, dict) else ""
        return message in reply.text or message in inner

    def denied(self, tool: str, args: Mapping[str, Any], message: str) -> Reply:
        """A call the token may not make: refused with `message`, and nothing written."""
        before = current_seq(self.db)
        reply = self.call(tool, args)
        self.check(tool, args, reply)
        if not reply.error:
            self.problem(tool, args, f"was not refused: {reply.text[:600]}")
        elif not self.says(reply, message):
            self.problem(tool, args, f"refused without saying {message!r}: {reply.text[:600]}")
        if current_seq(self.db) != before:
            self.problem(tool, args, "was refused but wrote to the change log")
        return reply

    def model_length(self, tool: str, args: Mapping[str, Any]) -> Reply:
        """A model name is one namespace across scopes: a model's vectors have one length
        (docs/compatibility.md, topodb profile), so a vector of another length for a model team B uses is
        refused with both lengths. That tells the length, and nothing else of B's."""
        reply = self.call(tool, args)
        self.check(tool, args, reply)
        self.expect("dim 3" in reply.text or "3-dimensional" in reply.text, tool, args, f"answered {reply.text[:300]}")
        return reply

    def ghostly(self, tool: str, args: Mapping[str, Any], *, allow: Sequence[str] = ()) -> Reply:
        """A call naming B's items answers as the same call naming items that do not exist,
        and writes as much (nothing, when the ghost call writes nothing)."""
        pairs = sorted(self.world.ghosts.items(), key=lambda kv: -len(kv[0]))
        swaps: list[tuple[str, str]] = []
        for old, new in pairs:
            swaps += [(old, new), (old.upper(), new.upper()), (old.lower(), new.lower())]
            if is_ulid(old):
                swaps.append((str(ulid_int(old)), str(ulid_int(new))))
        as_ghost = json.loads(_swap(json.dumps(args, ensure_ascii=False), swaps))
        if as_ghost == args:
            self.problem(tool, args, "names none of B's items: the test is wrong")
        first = current_seq(self.db)
        reply = self.call(tool, args)
        second = current_seq(self.db)
        ghost = self.call(tool, as_ghost)
        third = current_seq(self.db)
        self.check(tool, args, reply, allow)
        seen = _steady(_swap(reply.blob(), swaps))
        expected = _steady(ghost.blob())
        if (reply.error, seen) != (ghost.error, expected):
            self.problem(
                tool,
                args,
                f"answers unlike the same call on missing items:\n    B's items: {reply.text[:600]}"
                f"\n    missing:   {ghost.text[:600]}",
            )
        if second - first != third - second:
            self.problem(
                tool, args, f"wrote {second - first} change(s), the same call on missing items {third - second}"
            )
        return reply

    def stray_scope(self, tool: str, args: Mapping[str, Any]) -> Reply:
        """A tool without scope parameters, called with B's scope anyway: whatever it makes of
        them (refused, or ignored), nothing of B comes back."""
        stray = {**args, "scope": TEAM_B, "scopes": [TEAM_B]}
        reply = self.call(tool, stray)
        self.check(tool, stray, reply)
        return reply

    # -- what a reply holds ---------------------------------------------------------------------------

    def has(self, reply: Reply, tool: str, args: Mapping[str, Any], *values: str) -> None:
        """The reply names these (A's or shared) items: the call did read something."""
        blob = reply.blob().lower()
        missing = [v for v in values if v.lower() not in blob]
        self.expect(not missing, tool, args, f"does not return {missing}: {reply.text[:400]}")

    def empty(self, reply: Reply, tool: str, args: Mapping[str, Any], *keys: str) -> None:
        value = self.result(reply)
        for key in keys:
            got = value.get(key) if isinstance(value, dict) else value
            self.expect(got in ([], None), tool, args, f"{key} is not empty: {reply.text[:400]}")


# -- deployments: one server per profile, on a copy of the seeded database ---------------------------------


@dataclass
class Deployment:
    profile: str
    db: Path
    server: HttpServer
    a: Tenant
    reader: Tenant
    client: Native
    """The SDK's client, with team A's token: what lists the tools."""


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return _seed(tmp_path_factory.mktemp("tenancy-seed") / "memory.db")


@contextmanager
def _deployments(world: World, tmp: pytest.TempPathFactory, tag: str) -> Iterator[Callable[[str], Deployment]]:
    """Servers started on first use, one per profile, each on its own copy of the seed."""
    running: dict[str, Deployment] = {}
    with ExitStack() as stack:

        def get(profile: str) -> Deployment:
            if profile not in running:
                db = tmp.mktemp(f"{tag}-{profile}") / "memory.db"
                shutil.copy(world.template, db)
                server = stack.enter_context(HttpServer.start(db, *PROFILE_FLAGS.get(profile, ()), profile=profile))
                client = stack.enter_context(Native.connect(server.url, token=world.tokens["a"]))
                a = Tenant(server, world.tokens["a"], world, profile, db)
                reader = Tenant(server, world.tokens["a-reader"], world, profile, db)
                running[profile] = Deployment(profile, db, server, a, reader, client)
            return running[profile]

        yield get
        for deployment in running.values():
            assert "Traceback" not in deployment.server.stderr, deployment.server.stderr


@pytest.fixture(scope="module")
def deploy(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Deployment]]:
    """The servers every tool's calls go to."""
    with _deployments(world, tmp_path_factory, "tenancy") as get:
        yield get


@pytest.fixture(scope="module")
def scratch(world: World, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], Deployment]]:
    """Other servers, for what must not disturb the first ones (B's token reading its own
    data counts as reads of it)."""
    with _deployments(world, tmp_path_factory, "scratch") as get:
        yield get


# -- the cases: for each profile, each tool ---------------------------------------------------------------

Case = Callable[[Tenant, World], None]
CASES: dict[str, dict[str, Case]] = {profile: {} for profile in PROFILES}


def case(profile: str, tool: str) -> Callable[[Case], Case]:
    def register(func: Case) -> Case:
        assert tool not in CASES[profile]
        CASES[profile][tool] = func
        return func

    return register


# native ----------------------------------------------------------------------------------------------


@case("native", "remember")
def _native_remember(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {
        "memories": [{"content": "Team A remembers the falcon launch window", "about": ["AlphaService"]}],
        "entities": [{"name": "AlphaQueue", "type": "service", "observations": ["Alpha falcon queue"]}],
    }
    reply = t.ok("remember", args)
    t.has(reply, "remember", args, '"status":"created"')
    for scope in (TEAM_B, TEAM_B.lower()):
        t.denied("remember", {"memories": [{"content": "planted for team B"}], "scope": scope}, NOT_WRITABLE)
        t.denied("remember", {"entities": [{"name": "PlantedEntity"}], "scope": scope}, NOT_WRITABLE)
    # B's exact text is a new memory of A's, never B's memory handed back.
    args = {"memories": [{"content": B_CONTENT_1, "tags": ["alpha"]}]}
    reply = t.ok("remember", args, allow=[w.hash("B1")])
    [stored] = t.result(reply)["memories"]
    t.expect(stored.get("status") == "created" and stored.get("id") not in w.b_nodes, "remember", args, str(stored))
    t.ok("forget", {"refs": [stored["id"]]}, allow=[w.hash("B1")])
    # B's entity names are A's own new entities, never B's entities.
    args = {
        "memories": [{"content": "Team A note on a namesake", "about": ["zorblaxnameone"]}],
        "entities": [{"name": "zorblaxnametwo", "observations": ["Team A namesake"]}],
    }
    reply = t.ok("remember", args)
    value = t.result(reply)
    [note], [named] = value["memories"], value["entities"]
    t.expect(note.get("created_entities") == ["zorblaxnameone"], "remember", args, str(note))
    t.expect(named.get("status") == "created" and named.get("id") not in w.b_nodes, "remember", args, str(named))
    t.ok("forget", {"refs": [note["id"], "zorblaxnameone", "zorblaxnametwo"]})
    for ref in (w.id("B1"), w.hash("B1")):
        t.ghostly("remember", {"memories": [{"content": "Team A supersedes a fact", "supersedes": ref}]})


@case("native", "recall")
def _native_recall(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"query": "falcon launch", "limit": 100, "full": True, "why": True}
    t.has(t.ok("recall", args), "recall", args, w.id("A1"), w.id("SM"), w.id("A_SVC"))
    for args in (
        {"query": "falcon launch", "expand": 3, "limit": 100, "full": True, "include_superseded": True},
        {"limit": 100, "full": True, "expand": 3},
        {"query": "falcon", "kinds": ["entity"], "fuzzy": True, "full": True, "limit": 100},
        {"query": "falcon", "kinds": ["memory"], "min_importance": 0, "full": True, "limit": 100},
        {"pattern": "quirk", "full": True, "limit": 100},
        {"about": ["SharedHub"], "full": True, "limit": 100, "expand": 2},
        {"tags": ["falcon"], "full": True, "limit": 100, "expand": 2},
        {"within": [w.id("SM"), "SharedHub"], "full": True, "expand": 3},
    ):
        t.ok("recall", args)
    args = {"vector": {"model": "shared-model", "values": [1, 0]}, "full": True, "limit": 100, "expand": 3}
    t.has(t.ok("recall", args), "recall", args, w.id("A1"))
    for args in (
        {"query": "zorblaxcontentone"},
        {"query": "zorblaxnameone", "kinds": ["entity"], "fuzzy": True},
        {"query": "zorblaxobsone"},
        {"query": "zorblaxtagone"},
        {"tags": ["zorblaxtagone"]},
        {"types": ["zorblaxkind", "zorblaxtype"]},
        {"props": {"zorblaxpropkey": "zorblaxpropvalue"}},
        {"pattern": "zorblax"},
    ):
        t.empty(t.ok("recall", args), "recall", args, "items")
    t.ghostly("recall", {"within": [w.id("B1"), w.hash("B2"), "zorblaxnameone", w.id("B_TASK")], "full": True})
    t.ghostly("recall", {"about": ["zorblaxnameone"]})
    t.model_length("recall", {"vector": {"model": "zorblax-model", "values": [1, 0]}})
    for scopes in ([TEAM_B], [TEAM_A, TEAM_B], [TEAM_B.lower()], [SHARED, TEAM_B]):
        t.denied("recall", {"query": "falcon", "scopes": scopes}, NOT_READABLE)
    t.denied("recall", {"scopes": [TEAM_B]}, NOT_READABLE)


@case("native", "get")
def _native_get(t: Tenant, w: World) -> None:
    refs = [w.id("A1"), w.hash("A2"), "AlphaService", "SharedHub", w.hash("SM"), w.id("A_DEPENDS")]
    args: dict[str, Any] = {"refs": refs, "include_closed": True}
    reply = t.ok("get", args)
    t.expect('"error"' not in reply.text, "get", args, f"misses some of A's items: {reply.text[:400]}")
    for args in (
        {"refs": ["SharedHub", "SharedHub2", w.id("SM"), w.id("A_TASK")], "include_closed": True},
        {"refs": ["SharedHub", w.id("SM")], "as_of": now_ms()},
        {"refs": [w.id("S_FEEDS"), w.id("S_FEEDS_MEM")]},
    ):
        t.ok("get", args)
    for ref in (
        w.id("B1"),
        w.hash("B1"),
        w.hash("B1").upper(),
        "zorblaxnameone",
        w.id("B_ENT2"),
        w.id("B_TASK"),
        w.id("B_RELATES"),
        w.id("B_WAS"),
        w.id("B_ABOUT_HUB"),
    ):
        t.ghostly("get", {"refs": [ref], "include_closed": True})
    t.denied("get", {"refs": [w.id("A1")], "scopes": [TEAM_B]}, NOT_READABLE)
    t.denied("get", {"refs": ["SharedHub"], "scopes": [SHARED, TEAM_B]}, NOT_READABLE)


@case("native", "update")
def _native_update(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"ref": w.id("A2"), "add_tags": ["reviewed"]}
    reply = t.ok("update", args)
    t.expect(t.result(reply).get("changed") == ["tags"], "update", args, reply.text[:300])
    t.ok("update", {"ref": "AlphaDb", "add_observations": ["Alpha storage reviewed"]})
    for ref in (w.id("B1"), w.hash("B1")):
        t.ghostly("update", {"ref": ref, "add_tags": ["planted"], "props": {"planted": True}})
    for ref in ("zorblaxnameone", w.id("B_ENT2")):
        t.ghostly("update", {"ref": ref, "add_observations": ["planted"]})
    t.ghostly("update", {"ref": "zorblaxnameone", "remove_observations": [B_OBSERVATION_1]})
    t.ghostly("update", {"ref": w.id("B_RELATES"), "props": {"planted": True}})
    t.ghostly("update", {"ref": w.id("B_TASK"), "props": {"planted": True}})
    # A vector of A's under the model name only B uses: as under a name nobody uses.
    [scratch] = t.result(t.ok("remember", {"memories": [{"content": "Team A scratch vector note"}]}))["memories"]
    t.model_length("update", {"ref": scratch["id"], "embedding": {"model": "zorblax-model", "values": [1, 0]}})
    t.ok("forget", {"refs": [scratch["id"]]})
    t.denied("update", {"ref": w.id("A2"), "add_tags": ["x"], "scopes": [TEAM_B]}, NOT_READABLE)


@case("native", "forget")
def _native_forget(t: Tenant, w: World) -> None:
    [scratch] = t.result(t.ok("remember", {"memories": [{"content": "Team A scratch note to forget"}]}))["memories"]
    args = {"refs": [scratch["id"]]}
    t.has(t.ok("forget", args), "forget", args, '"forgotten":true')
    for ref in (w.id("B1"), w.hash("B2"), "zorblaxnametwo", w.id("B_ENT1"), w.id("B_RELATES"), w.id("B_TASK")):
        t.ghostly("forget", {"refs": [ref]})
    t.ghostly("forget", {"relations": [{"from": "zorblaxnameone", "type": "zorblaxrelates", "to": "zorblaxnametwo"}]})
    t.ghostly("forget", {"relations": [{"from": w.hash("B1"), "type": "zorblaxfollows", "to": w.hash("B2")}]})
    t.ghostly("forget", {"relations": [{"from": "SharedHub", "type": "feeds", "to": "zorblaxnametwo"}]})
    t.denied("forget", {"refs": [w.id("A2")], "scopes": [TEAM_B]}, NOT_READABLE)
    t.denied("forget", {"refs": [w.id("A2")], "scopes": [TEAM_A, TEAM_B]}, NOT_READABLE)


@case("native", "relate")
def _native_relate(t: Tenant, w: World) -> None:
    t.ok("relate", {"add": [{"from": "AlphaService", "to": "AlphaDb", "type": "calls"}]})
    t.ok("relate", {"close": [{"from": "AlphaService", "type": "calls", "to": "AlphaDb"}]})
    for src, dst in (
        ("AlphaService", "zorblaxnameone"),
        (w.id("A1"), w.hash("B1")),
        ("SharedHub", w.id("B_ENT1")),
        (w.hash("SM"), w.id("B2")),
        ("zorblaxnameone", "zorblaxnametwo"),
        (w.id("B_TASK"), "AlphaService"),
    ):
        t.ghostly("relate", {"add": [{"from": src, "to": dst, "type": "rivals"}]})
    for ref in ("B_RELATES", "B_WAS", "B_TO_HUB", "B_BLOCKS"):
        t.ghostly("relate", {"close": [{"id": w.id(ref)}]})
    t.ghostly("relate", {"close": [{"from": "zorblaxnameone", "type": "zorblaxrelates", "to": "zorblaxnametwo"}]})
    t.ghostly("relate", {"close": [{"from": "zorblaxnameone", "type": "uses", "to": "SharedHub"}]})
    add = [{"from": "AlphaService", "to": "AlphaDb", "type": "calls"}]
    for scope in (TEAM_B, TEAM_B.lower()):
        t.denied("relate", {"add": add, "scope": scope}, NOT_WRITABLE)
        t.denied("relate", {"close": [{"id": w.id("A_DEPENDS")}], "scope": scope}, NOT_WRITABLE)


@case("native", "explore")
def _native_explore(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {
        "from": ["SharedHub"],
        "hops": 10,
        "full": True,
        "include_closed": True,
        "include_superseded": True,
        "limit": 200,
    }
    t.has(t.ok("explore", args), "explore", args, w.id("A_SVC"), w.id("A1"))
    args = {"full": True, "include_closed": True, "limit": 200}
    t.has(t.ok("explore", args), "explore", args, w.id("A_DEPENDS"))
    for args in (
        {"from": [w.id("A1"), "SharedHub2", w.hash("SM")], "hops": 3, "full": True, "direction": "both"},
        {"from": ["SharedHub", "SharedHub2"], "hops": 2, "direction": "out", "full": True},
        {"from": ["SharedHub"], "as_of": now_ms(), "include_closed": True, "hops": 3, "full": True},
        {"types": ["feeds", "about", "uses", "zorblaxrelates", "zorblaxfollows"], "include_closed": True, "full": True},
        {"from": ["SharedHub"], "to": "SharedHub2"},
        {"from": [w.id("SM")], "to": "AlphaDb", "hops": 10},
    ):
        t.ok("explore", args)
    for args in (
        {"from": ["zorblaxnameone"]},
        {"from": [w.id("B1")], "hops": 3},
        {"from": [w.hash("B2")], "include_closed": True},
        {"from": [w.id("B_TASK")]},
        {"from": ["SharedHub"], "to": "zorblaxnametwo"},
        {"from": [w.id("SM")], "to": w.id("B2")},
    ):
        t.ghostly("explore", args)
    t.denied("explore", {"from": ["SharedHub"], "scopes": [TEAM_B]}, NOT_READABLE)
    t.denied("explore", {"scopes": [TEAM_A, TEAM_B]}, NOT_READABLE)


@case("native", "audit")
def _native_audit(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"limit": 500}
    t.has(t.ok("audit", args), "audit", args, w.id("A1"), w.id("SHUB"))
    for args in (
        {"since": 0, "limit": 500, "max_chars": 1_000_000},
        {"ref": "SharedHub", "limit": 500},
        {"ref": w.id("A1")},
        {"scopes": [SHARED], "limit": 500},
    ):
        t.ok("audit", args)
    # A shared relation that touches one of B's items is not A's to see, even in shared: it
    # is answered as an id nobody has.
    for ref in (w.id("S_FEEDS"), "01HV7N8Q3Y2J6W5X4Z9A0B1C99"):
        reply = t.call("audit", {"ref": ref})
        t.check("audit", {"ref": ref}, reply)
        t.expect(reply.error and f"nothing found for '{ref}'" in reply.text, "audit", {"ref": ref}, reply.text[:300])
    for ref in (w.id("B1"), w.hash("B2"), "zorblaxnameone", w.id("B_RELATES"), w.id("B_TASK")):
        t.ghostly("audit", {"ref": ref})
    t.denied("audit", {"scopes": [TEAM_B]}, NOT_READABLE)
    t.denied("audit", {"ref": w.id("A1"), "scopes": [TEAM_B]}, NOT_READABLE)


@case("native", "survey")
def _native_survey(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"top": 100}
    value = t.result(t.ok("survey", args))
    snap = snapshot(t.db)
    readable = [n for n in snap.nodes.values() if n["scope"] in (TEAM_A, SHARED)]
    counted = {
        "memories": sum(1 for n in readable if n["label"] == "Memory"),
        "entities": sum(1 for n in readable if n["label"] == "Entity"),
    }
    t.expect({k: value.get(k) for k in counted} == counted, "survey", args, f"counts {value} for {counted}")
    t.ok("survey", {"scopes": [SHARED]})
    for scopes in ([TEAM_B], [SHARED, TEAM_B], [TEAM_B.lower()]):
        t.denied("survey", {"scopes": scopes}, NOT_READABLE)


# memdb ------------------------------------------------------------------------------------------------


@case("memdb", "store_memory")
def _memdb_store_memory(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"content": "Team A memdb falcon note", "tags": ["alpha"]}
    t.has(t.ok("store_memory", args), "store_memory", args, '"isNew":true')
    # B's exact text is a new memory of A's.
    args = {"content": B_CONTENT_1, "tags": ["alpha"]}
    value = t.result(t.ok("store_memory", args, allow=[w.hash("B1")]))
    t.expect(value.get("isNew") is True, "store_memory", args, f"not stored anew: {value}")
    t.ok("delete_memory", {"hash": w.hash("B1")}, allow=[w.hash("B1")])
    t.stray_scope("store_memory", {"content": "Team A stray scope note", "tags": ["alpha"]})


@case("memdb", "store_memories")
def _memdb_store_memories(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {
        "items": [
            {"content": "Team A batch note one", "tags": ["alpha"]},
            {"content": B_CONTENT_2, "tags": ["alpha"]},
        ]
    }
    value = t.result(t.ok("store_memories", args, allow=[w.hash("B2")]))
    news = [r.get("isNew") for r in value["results"]] if isinstance(value, dict) else None
    t.expect(news == [True, True], "store_memories", args, f"not stored anew: {value}")
    t.ok("delete_memories", {"hashes": [w.hash("B2"), sha256("Team A batch note one")]}, allow=[w.hash("B2")])
    t.stray_scope("store_memories", {"items": [{"content": "Team A stray batch note", "tags": ["alpha"]}]})


@case("memdb", "get_memory")
def _memdb_get_memory(t: Tenant, w: World) -> None:
    args = {"hash": w.hash("A1")}
    t.has(t.ok("get_memory", args), "get_memory", args, "Team A falcon launch checklist")
    t.ok("get_memory", {"hash": w.hash("SM")})
    for digest in (w.hash("B1"), w.hash("B2").upper()):
        t.ghostly("get_memory", {"hash": digest})
    t.stray_scope("get_memory", {"hash": w.hash("B1")})


@case("memdb", "update_memory")
def _memdb_update_memory(t: Tenant, w: World) -> None:
    t.ok("store_memory", {"content": "Team A memdb draft", "tags": ["alpha"]})
    # A's memory may take B's text: the clash check looks in A's scope only.
    args = {"hash": sha256("Team A memdb draft"), "content": B_CONTENT_2}
    t.ok("update_memory", args, allow=[w.hash("B2")])
    t.ok("delete_memory", {"hash": w.hash("B2")}, allow=[w.hash("B2")])
    t.ghostly("update_memory", {"hash": w.hash("B1"), "content": "planted by team A", "tags": ["planted"]})
    t.ghostly("update_memory", {"hash": w.hash("B2"), "content": "planted by team A"})
    t.stray_scope("update_memory", {"hash": w.hash("B1"), "content": "planted by team A"})


@case("memdb", "delete_memory")
def _memdb_delete_memory(t: Tenant, w: World) -> None:
    t.ok("store_memory", {"content": "Team A memdb scratch", "tags": ["alpha"]})
    t.ok("delete_memory", {"hash": sha256("Team A memdb scratch")})
    for digest in (w.hash("B1"), w.hash("B2").upper()):
        t.ghostly("delete_memory", {"hash": digest})
    t.stray_scope("delete_memory", {"hash": w.hash("B1")})


@case("memdb", "delete_memories")
def _memdb_delete_memories(t: Tenant, w: World) -> None:
    t.ok("store_memory", {"content": "Team A memdb scratch two", "tags": ["alpha"]})
    t.ok("delete_memories", {"hashes": [sha256("Team A memdb scratch two")]})
    t.ghostly("delete_memories", {"hashes": [w.hash("B1"), w.hash("B2")]})
    t.stray_scope("delete_memories", {"hashes": [w.hash("B1")]})


@case("memdb", "search_memories")
def _memdb_search_memories(t: Tenant, w: World) -> None:
    args = {"query": "falcon launch"}
    t.has(t.ok("search_memories", args), "search_memories", args, w.hash("A1"), w.hash("SM"))
    t.ok("search_memories", {"query": "falcon"})
    for query in ("zorblaxcontentone", "zorblaxtagone", "zorblaxsummaryone", "zorblaxkind"):
        reply = t.ok("search_memories", {"query": query})
        t.empty(reply, "search_memories", {"query": query}, "result")
    t.stray_scope("search_memories", {"query": "falcon launch"})


@case("memdb", "recall")
def _memdb_recall(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"query": "falcon launch", "depth": 3}
    t.has(t.ok("recall", args), "recall", args, w.hash("A1"), w.hash("A2"))
    t.ok("recall", {"query": "calendar", "depth": 3})
    for query in ("zorblaxcontentone", "zorblaxtagtwo"):
        reply = t.ok("recall", {"query": query, "depth": 3})
        t.empty(reply, "recall", {"query": query}, "memories", "relationships")
    t.stray_scope("recall", {"query": "falcon launch", "depth": 3})


@case("memdb", "create_relationship")
def _memdb_create_relationship(t: Tenant, w: World) -> None:
    args = {"from_hash": w.hash("A2"), "to_hash": w.hash("A1"), "relation_type": "precedes"}
    t.ok("create_relationship", args)
    t.ok("delete_relationship", args)
    for src, dst, kind in (
        (w.hash("A1"), w.hash("B1"), "follows"),
        (w.hash("B1"), w.hash("B2"), "zorblaxfollows"),
        (w.hash("SM"), w.hash("B2"), "feeds"),
        (w.hash("B2"), w.hash("SM"), "about"),
    ):
        t.ghostly("create_relationship", {"from_hash": src, "to_hash": dst, "relation_type": kind})
    t.stray_scope("create_relationship", {"from_hash": w.hash("B1"), "to_hash": w.hash("B2"), "relation_type": "x"})


@case("memdb", "get_relationships")
def _memdb_get_relationships(t: Tenant, w: World) -> None:
    args = {"hash": w.hash("A1")}
    t.has(t.ok("get_relationships", args), "get_relationships", args, w.hash("A2"))
    for direction in ("outgoing", "incoming", "both"):
        t.ok("get_relationships", {"hash": w.hash("SM"), "direction": direction})
    for digest in (w.hash("B1"), w.hash("B2")):
        t.ghostly("get_relationships", {"hash": digest})
    t.stray_scope("get_relationships", {"hash": w.hash("B1")})


@case("memdb", "delete_relationship")
def _memdb_delete_relationship(t: Tenant, w: World) -> None:
    for src, dst, kind in (
        (w.hash("B1"), w.hash("B2"), "zorblaxfollows"),
        (w.hash("SM"), w.hash("B2"), "feeds"),
        (w.hash("A1"), w.hash("B2"), "follows"),
    ):
        t.ghostly("delete_relationship", {"from_hash": src, "to_hash": dst, "relation_type": kind})
    t.stray_scope("delete_relationship", {"from_hash": w.hash("B1"), "to_hash": w.hash("B2"), "relation_type": "x"})


@case("memdb", "memory_stats")
def _memdb_memory_stats(t: Tenant, w: World) -> None:
    value = t.result(t.ok("memory_stats", {}))
    snap = snapshot(t.db)
    count = sum(1 for n in snap.nodes.values() if n["label"] == "Memory" and n["scope"] in (TEAM_A, SHARED))
    t.expect(
        isinstance(value, dict) and value.get("memoryCount") == count, "memory_stats", {}, f"{value}; A+shared={count}"
    )
    t.stray_scope("memory_stats", {})


# topodb ------------------------------------------------------------------------------------------------


def _topo_reads(t: Tenant, tool: str, args: Mapping[str, Any]) -> None:
    """A read tool's scope parameters, naming B's scope in every way they can."""
    for extra in (
        {"scope": TEAM_B},
        {"scope": TEAM_B.lower()},
        {"scopes": [TEAM_B]},
        {"scopes": [TEAM_A, TEAM_B]},
        {"scopes": [SHARED, TEAM_B]},
        {"scope": TEAM_A, "scopes": [TEAM_B]},
    ):
        t.denied(tool, {**args, **extra}, NOT_READABLE)


@case("topodb", "db_info")
def _topo_db_info(t: Tenant, w: World) -> None:
    value = t.result(t.ok("db_info", {}))
    t.expect(
        value.get("default_scope") == TEAM_A
        and sorted(value.get("default_read_scopes", [])) == sorted([TEAM_A, SHARED]),
        "db_info",
        {},
        str(value),
    )
    t.stray_scope("db_info", {})


@case("topodb", "get_node")
def _topo_get_node(t: Tenant, w: World) -> None:
    for label in ("A1", "SHUB", "A_TASK", "SM"):
        args = {"id": w.id(label)}
        t.has(t.ok("get_node", args), "get_node", args, '"found":true')
    t.ok("get_node", {"id": w.id("A1"), "as_of": now_ms()})
    for label in ("B1", "B2", "B_ENT1", "B_ENT2", "B_TASK", "B_RELATES"):
        t.ghostly("get_node", {"id": w.id(label)})
        t.ghostly("get_node", {"id": w.id(label), "as_of": now_ms() + 60_000})
    _topo_reads(t, "get_node", {"id": w.id("A1")})


@case("topodb", "find_by_prop")
def _topo_find_by_prop(t: Tenant, w: World) -> None:
    for name in ("AlphaService", "SharedHub"):
        args = {"label": "Entity", "prop": "name", "value": name}
        t.has(t.ok("find_by_prop", args), "find_by_prop", args, w.id("A_SVC" if name == "AlphaService" else "SHUB"))
    for name in ("zorblaxnameone", "zorblaxnametwo"):
        args = {"label": "Entity", "prop": "name", "value": name}
        t.empty(t.ok("find_by_prop", args), "find_by_prop", args, "nodes")
    _topo_reads(t, "find_by_prop", {"label": "Entity", "prop": "name", "value": "AlphaService"})


@case("topodb", "search_memories")
def _topo_search_memories(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"query": "falcon launch", "k": 100}
    t.has(t.ok("search_memories", args), "search_memories", args, w.id("A1"), w.id("SM"))
    for query in ("zorblaxcontentone", "zorblaxcontenttwo fallback", "zorblaxtitle"):
        args = {"query": query, "k": 100}
        t.empty(t.ok("search_memories", args), "search_memories", args, "hits")
    _topo_reads(t, "search_memories", {"query": "falcon launch"})


@case("topodb", "traverse")
def _topo_traverse(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"seed_id": w.id("SHUB"), "max_hops": 4}
    t.has(t.ok("traverse", args), "traverse", args, w.id("A_SVC"), w.id("A1"))
    for args in (
        {"seed_id": w.id("SHUB2"), "max_hops": 4},
        {"seed_id": w.id("SM"), "max_hops": 4, "direction": "out"},
        {"seed_id": w.id("A_TASK"), "max_hops": 4, "direction": "both"},
        {"seed_id": w.id("SHUB"), "max_hops": 4, "edge_types": ["feeds", "uses", "about", "zorblaxrelates"]},
        {"seed_id": w.id("SHUB"), "max_hops": 4, "as_of": now_ms()},
    ):
        t.ok("traverse", args)
    for label in ("B1", "B_ENT1", "B_ENT2", "B_TASK"):
        t.ghostly("traverse", {"seed_id": w.id(label), "max_hops": 4})
        t.ghostly("traverse", {"seed_id": w.id(label), "max_hops": 2, "as_of": now_ms() + 60_000})
    _topo_reads(t, "traverse", {"seed_id": w.id("SHUB")})


@case("topodb", "access_stats")
def _topo_access_stats(t: Tenant, w: World) -> None:
    args = {"id": w.id("A1")}
    t.has(t.ok("access_stats", args), "access_stats", args, '"found":true')
    for label in ("B1", "B_ENT2", "B_TASK"):
        t.ghostly("access_stats", {"id": w.id(label)})
    _topo_reads(t, "access_stats", {"id": w.id("A1")})


@case("topodb", "search_vectors")
def _topo_search_vectors(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"model": "shared-model", "vector": [1, 0], "k": 100}
    t.has(t.ok("search_vectors", args), "search_vectors", args, w.id("A1"), w.id("A_SVC"))
    candidates = [w.id(k) for k in ("B1", "B2", "B_ENT1", "B_TASK", "A1")]
    args = {"model": "shared-model", "vector": [0.5, 0.5], "k": 100, "candidates": candidates}
    t.has(t.ok("search_vectors", args), "search_vectors", args, w.id("A1"))
    t.model_length("search_vectors", {"model": "zorblax-model", "vector": [1, 0]})
    t.ghostly("search_vectors", {"model": "zorblax-model", "vector": [0.1, 0.2, 0.3], "k": 100})
    _topo_reads(t, "search_vectors", {"model": "shared-model", "vector": [1, 0]})


@case("topodb", "get_changes")
def _topo_get_changes(t: Tenant, w: World) -> None:
    for args in ({"since_seq": 0}, {"since_seq": 1, "limit": 5}, {"since_seq": 10_000}):
        t.denied("get_changes", args, WHOLE_LOG)
    t.stray_scope("get_changes", {"since_seq": 0})


@case("topodb", "create_memory")
def _topo_create_memory(t: Tenant, w: World) -> None:
    t.ok("create_memory", {"content": "Team A topo falcon note", "props": {"kind": "note"}})
    for scope in (TEAM_B, TEAM_B.lower()):
        t.denied("create_memory", {"content": "planted for team B", "scope": scope}, NOT_WRITABLE)
    # B's exact text is a new node of A's.
    args = {"content": B_CONTENT_1}
    new_id = t.result(t.ok("create_memory", args)).get("id")
    t.expect(new_id not in w.b_nodes, "create_memory", args, "answered with B's memory")
    t.ok("remove_node", {"id": new_id})


@case("topodb", "create_entity")
def _topo_create_entity(t: Tenant, w: World) -> None:
    t.ok("create_entity", {"name": "AlphaTopoEntity", "props": {"entityType": "service"}})
    for scope in (TEAM_B, TEAM_B.lower()):
        t.denied("create_entity", {"name": "PlantedEntity", "scope": scope}, NOT_WRITABLE)
    args = {"name": "zorblaxnameone"}
    new_id = t.result(t.ok("create_entity", args)).get("id")
    t.expect(new_id not in w.b_nodes, "create_entity", args, "answered with B's entity")
    t.ok("remove_node", {"id": new_id})


@case("topodb", "set_node_props")
def _topo_set_node_props(t: Tenant, w: World) -> None:
    t.ok("set_node_props", {"id": w.id("A_TASK"), "props": {"status": "open"}})
    for label in ("B1", "B2", "B_ENT1", "B_TASK"):
        t.ghostly("set_node_props", {"id": w.id(label), "props": {"planted": "by team A"}})
    t.ghostly("set_node_props", {"id": w.id("B_ENT2"), "props": {"zorblaxtype": None}})
    t.stray_scope("set_node_props", {"id": w.id("A_TASK"), "props": {"status": "stray"}})


@case("topodb", "set_embedding")
def _topo_set_embedding(t: Tenant, w: World) -> None:
    t.ok("set_embedding", {"id": w.id("A_TASK"), "model": "shared-model", "vector": [0.5, 0.5]})
    # A vector of A's under the model name only B uses: as under a name nobody uses.
    scratch = t.result(t.ok("create_memory", {"content": "Team A topo vector scratch"})).get("id")
    t.model_length("set_embedding", {"id": scratch, "model": "zorblax-model", "vector": [1, 0]})
    t.ok("remove_node", {"id": scratch})
    for label in ("B2", "B_ENT2", "B_TASK"):
        t.ghostly("set_embedding", {"id": w.id(label), "model": "shared-model", "vector": [1, 0]})
    t.stray_scope("set_embedding", {"id": w.id("A_TASK"), "model": "shared-model", "vector": [0.5, 0.5]})


@case("topodb", "close_edge")
def _topo_close_edge(t: Tenant, w: World) -> None:
    edge = t.result(t.ok("link", {"from_id": w.id("A_TASK"), "to_id": w.id("A2"), "edge_type": "scratch"})).get("id")
    t.ok("close_edge", {"id": edge})
    for label in ("B_BLOCKS", "B_WAS", "B_RELATES", "B_TO_HUB", "B_FOLLOWS"):
        t.ghostly("close_edge", {"id": w.id(label)})
    t.stray_scope("close_edge", {"id": w.id("B_RELATES")})


@case("topodb", "link")
def _topo_link(t: Tenant, w: World) -> None:
    t.ok("link", {"from_id": w.id("A_TASK"), "to_id": w.id("A_SVC"), "edge_type": "tracks"})
    for scope in (TEAM_B, TEAM_B.lower()):
        args = {"from_id": w.id("A_TASK"), "to_id": w.id("A_DB"), "edge_type": "tracks", "scope": scope}
        t.denied("link", args, NOT_WRITABLE)
    for src, dst in (
        ("A1", "B1"),
        ("B1", "A1"),
        ("SHUB", "B_ENT1"),
        ("SM", "B2"),
        ("B_ENT1", "B_ENT2"),
        ("B_TASK", "B2"),
    ):
        t.ghostly("link", {"from_id": w.id(src), "to_id": w.id(dst), "edge_type": "planted"})


@case("topodb", "submit_batch")
def _topo_submit_batch(t: Tenant, w: World) -> None:
    t.ok(
        "submit_batch",
        {
            "commands": [
                {"op": "create_memory", "content": "Team A batch falcon memory"},
                {"op": "create_entity", "name": "AlphaBatchEntity"},
                {"op": "link", "from": "#0", "to": "#1", "type": "about"},
            ]
        },
    )
    command: dict[str, Any]
    for scope in (TEAM_B, TEAM_B.lower()):
        for command in (
            {"op": "create_memory", "content": "planted for team B", "scope": scope},
            {"op": "create_entity", "name": "PlantedEntity", "scope": scope},
            {"op": "link", "from": w.id("A_TASK"), "to": w.id("A_DB"), "type": "tracks", "scope": scope},
        ):
            t.denied("submit_batch", {"commands": [command]}, NOT_WRITABLE)
    for command in (
        {"op": "set_node_props", "id": w.id("B1"), "props": {"planted": True}},
        {"op": "set_embedding", "id": w.id("B_TASK"), "model": "shared-model", "vector": [1, 0]},
        {"op": "close_edge", "id": w.id("B_RELATES")},
        {"op": "link", "from": w.id("SHUB"), "to": w.id("B_ENT1"), "type": "planted"},
        {"op": "link", "from": w.id("B_ENT1"), "to": w.id("B_ENT2"), "type": "planted"},
        {"op": "remove_node", "id": w.id("B_TASK")},
    ):
        t.ghostly("submit_batch", {"commands": [command]})


@case("topodb", "remove_node")
def _topo_remove_node(t: Tenant, w: World) -> None:
    scratch = t.result(t.ok("create_memory", {"content": "Team A topo scratch"})).get("id")
    t.ok("remove_node", {"id": scratch})
    for label in ("B2", "B_ENT2", "B_ENT1"):
        t.ghostly("remove_node", {"id": w.id(label)})
    t.stray_scope("remove_node", {"id": w.id("B_TASK")})


# knowledge-graph ----------------------------------------------------------------------------------------


@case("knowledge-graph", "create_entities")
def _kg_create_entities(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"entities": [{"name": "AlphaCache", "entityType": "service", "observations": ["Alpha"]}]}
    t.has(t.ok("create_entities", args), "create_entities", args, "AlphaCache")
    # B's name is A's own new entity.
    args = {"entities": [{"name": "zorblaxnameone", "entityType": "namesake", "observations": ["Team A namesake"]}]}
    t.has(t.ok("create_entities", args), "create_entities", args, "Team A namesake")
    opened = t.result(t.ok("open_nodes", {"names": ["zorblaxnameone"]}))
    t.expect(
        [e.get("observations") for e in opened.get("entities", [])] == [["Team A namesake"]],
        "open_nodes",
        {"names": ["zorblaxnameone"]},
        str(opened),
    )
    t.ok("delete_entities", {"entityNames": ["zorblaxnameone"]})
    t.stray_scope("create_entities", {"entities": [{"name": "AlphaStray", "entityType": "x", "observations": []}]})


@case("knowledge-graph", "create_relations")
def _kg_create_relations(t: Tenant, w: World) -> None:
    args = {"relations": [{"from": "AlphaService", "to": "AlphaDb", "relationType": "replicates"}]}
    t.has(t.ok("create_relations", args), "create_relations", args, "replicates")
    for src, dst, kind in (
        ("AlphaService", "zorblaxnameone", "rivals"),
        ("SharedHub", "zorblaxnametwo", "feeds"),
        ("zorblaxnameone", "zorblaxnametwo", "zorblaxrelates"),
        ("zorblaxnameone", "SharedHub", "rivals"),
    ):
        t.ghostly("create_relations", {"relations": [{"from": src, "to": dst, "relationType": kind}]})
    t.stray_scope(
        "create_relations", {"relations": [{"from": "SharedHub", "to": "zorblaxnametwo", "relationType": "x"}]}
    )


@case("knowledge-graph", "add_observations")
def _kg_add_observations(t: Tenant, w: World) -> None:
    args = {"observations": [{"entityName": "AlphaDb", "contents": ["Alpha storage is replicated"]}]}
    t.has(t.ok("add_observations", args), "add_observations", args, "Alpha storage is replicated")
    for name in ("zorblaxnameone", "zorblaxnametwo"):
        t.ghostly("add_observations", {"observations": [{"entityName": name, "contents": ["planted"]}]})
    t.stray_scope("add_observations", {"observations": [{"entityName": "zorblaxnameone", "contents": ["planted"]}]})


@case("knowledge-graph", "delete_entities")
def _kg_delete_entities(t: Tenant, w: World) -> None:
    t.ok("create_entities", {"entities": [{"name": "AlphaScratch", "entityType": "x", "observations": []}]})
    t.ok("delete_entities", {"entityNames": ["AlphaScratch"]})
    t.ghostly("delete_entities", {"entityNames": ["zorblaxnameone", "zorblaxnametwo"]})
    t.stray_scope("delete_entities", {"entityNames": ["zorblaxnametwo"]})


@case("knowledge-graph", "delete_observations")
def _kg_delete_observations(t: Tenant, w: World) -> None:
    t.ok("delete_observations", {"deletions": [{"entityName": "AlphaDb", "observations": ["not there"]}]})
    args = {"deletions": [{"entityName": "zorblaxnameone", "observations": [B_OBSERVATION_1]}]}
    t.ghostly("delete_observations", args)
    t.stray_scope("delete_observations", args)


@case("knowledge-graph", "delete_relations")
def _kg_delete_relations(t: Tenant, w: World) -> None:
    t.ok("create_relations", {"relations": [{"from": "AlphaDb", "to": "AlphaService", "relationType": "scratch"}]})
    t.ok("delete_relations", {"relations": [{"from": "AlphaDb", "to": "AlphaService", "relationType": "scratch"}]})
    for src, dst, kind in (
        ("zorblaxnameone", "zorblaxnametwo", "zorblaxrelates"),
        ("SharedHub", "zorblaxnametwo", "feeds"),
        ("zorblaxnameone", "SharedHub", "uses"),
    ):
        t.ghostly("delete_relations", {"relations": [{"from": src, "to": dst, "relationType": kind}]})
    t.stray_scope(
        "delete_relations", {"relations": [{"from": "SharedHub", "to": "zorblaxnametwo", "relationType": "feeds"}]}
    )


@case("knowledge-graph", "read_graph")
def _kg_read_graph(t: Tenant, w: World) -> None:
    t.has(t.ok("read_graph", {}), "read_graph", {}, "AlphaService", "SharedHub2")
    args: dict[str, Any] = {"limit": 1}
    for _ in range(100):
        value = t.result(t.ok("read_graph", args))
        if not isinstance(value, dict) or "nextCursor" not in value:
            break
        args = {"limit": 1, "cursor": value["nextCursor"]}
    t.stray_scope("read_graph", {})


@case("knowledge-graph", "search_nodes")
def _kg_search_nodes(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"query": "falcon launch", "includeNeighbors": True}
    t.has(t.ok("search_nodes", args), "search_nodes", args, "AlphaService", "SharedHub")
    for args in (
        {"query": "SharedHub", "includeNeighbors": True},
        {"query": "SharedHub2"},
        {"query": "falcon", "fuzzy": True, "includeNeighbors": True},
        {"query": "obs:quirk", "includeNeighbors": True},
        {"query": "type:service", "includeNeighbors": True},
    ):
        t.ok("search_nodes", args)
    for query in ("zorblaxnameone", "zorblaxobsone", "type:zorblaxtype", "zorblaxquirk"):
        args = {"query": query, "fuzzy": True}
        t.empty(t.ok("search_nodes", args), "search_nodes", args, "entities")
    t.stray_scope("search_nodes", {"query": "falcon launch"})


@case("knowledge-graph", "open_nodes")
def _kg_open_nodes(t: Tenant, w: World) -> None:
    args = {"names": ["SharedHub", "SharedHub2", "AlphaService", "AlphaDb"]}
    t.has(t.ok("open_nodes", args), "open_nodes", args, "SharedHub2", "AlphaDb")
    args = {"names": ["zorblaxnameone", "zorblaxnametwo"]}
    t.empty(t.ok("open_nodes", args), "open_nodes", args, "entities", "relations")
    t.ok("open_nodes", {"names": ["SharedHub", "zorblaxnametwo", "zorblaxnameone", "SharedHub2"]})
    t.stray_scope("open_nodes", {"names": ["SharedHub"]})


@case("knowledge-graph", "search_observations")
def _kg_search_observations(t: Tenant, w: World) -> None:
    args = {"query": "falcon launch", "includeEntity": True, "limit": 100}
    t.has(t.ok("search_observations", args), "search_observations", args, "Alpha falcon launch owner")
    t.ok("search_observations", {"query": "falcon", "fuzzy": True, "includeEntity": True, "limit": 100})
    for query in ("zorblaxobsone", "zorblaxquirk", "zorblaxobstwo backup"):
        args = {"query": query, "includeEntity": True, "fuzzy": True}
        t.empty(t.ok("search_observations", args), "search_observations", args, "matches")
    t.stray_scope("search_observations", {"query": "falcon launch", "includeEntity": True})


@case("knowledge-graph", "get_neighbors")
def _kg_get_neighbors(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"entityName": "AlphaService"}
    t.has(t.ok("get_neighbors", args), "get_neighbors", args, "AlphaDb")
    for args in (
        {"entityName": "SharedHub"},
        {"entityName": "SharedHub2", "direction": "outgoing"},
        {"entityName": "SharedHub", "relationType": "feeds"},
    ):
        t.ok("get_neighbors", args)
    for name in ("zorblaxnameone", "zorblaxnametwo"):
        t.ghostly("get_neighbors", {"entityName": name})
    t.stray_scope("get_neighbors", {"entityName": "SharedHub"})


@case("knowledge-graph", "find_path")
def _kg_find_path(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"fromEntity": "AlphaDb", "toEntity": "SharedHub"}
    t.has(t.ok("find_path", args), "find_path", args, "AlphaService")
    # The two hubs are joined only through B's entity: for A, there is no path.
    args = {"fromEntity": "SharedHub", "toEntity": "SharedHub2"}
    t.empty(t.ok("find_path", args), "find_path", args, "path")
    t.ghostly("find_path", {"fromEntity": "SharedHub", "toEntity": "zorblaxnametwo"})
    t.ghostly("find_path", {"fromEntity": "zorblaxnameone", "toEntity": "AlphaService"})
    t.stray_scope("find_path", {"fromEntity": "SharedHub", "toEntity": "SharedHub2"})


@case("knowledge-graph", "get_subgraph")
def _kg_get_subgraph(t: Tenant, w: World) -> None:
    args: dict[str, Any] = {"entityNames": ["AlphaService"], "depth": 3}
    t.has(t.ok("get_subgraph", args), "get_subgraph", args, "SharedHub", "AlphaDb")
    t.ok("get_subgraph", {"entityNames": ["SharedHub", "SharedHub2"], "depth": 3})
    t.ghostly("get_subgraph", {"entityNames": ["zorblaxnameone"], "depth": 3})
    t.stray_scope("get_subgraph", {"entityNames": ["SharedHub"]})


@case("knowledge-graph", "filter_by_type")
def _kg_filter_by_type(t: Tenant, w: World) -> None:
    args = {"entityType": "service"}
    t.has(t.ok("filter_by_type", args), "filter_by_type", args, "AlphaService")
    t.ok("filter_by_type", {"entityType": "project"})
    args = {"entityType": "zorblaxtype"}
    t.empty(t.ok("filter_by_type", args), "filter_by_type", args, "entities", "relations")
    t.stray_scope("filter_by_type", {"entityType": "service"})


@case("knowledge-graph", "filter_relations")
def _kg_filter_relations(t: Tenant, w: World) -> None:
    t.has(t.ok("filter_relations", {}), "filter_relations", {}, "depends_on")
    for args in ({"relationType": "feeds"}, {"fromEntity": "SharedHub"}, {"toEntity": "SharedHub"}):
        t.ok("filter_relations", args)
    args = {"relationType": "zorblaxrelates"}
    t.empty(t.ok("filter_relations", args), "filter_relations", args, "relations", "entities")
    t.ghostly("filter_relations", {"fromEntity": "zorblaxnameone"})
    t.ghostly("filter_relations", {"toEntity": "zorblaxnametwo", "relationType": "feeds"})
    t.stray_scope("filter_relations", {})


@case("knowledge-graph", "filter_observations")
def _kg_filter_observations(t: Tenant, w: World) -> None:
    args = {"pattern": "quirk"}
    t.has(t.ok("filter_observations", args), "filter_observations", args, "AlphaService")
    t.ok("filter_observations", {"pattern": "falcon"})
    args = {"pattern": "zorblax"}
    t.empty(t.ok("filter_observations", args), "filter_observations", args, "entities")
    t.stray_scope("filter_observations", {"pattern": "falcon"})


# -- writes a read-only token tries: each would succeed with team A's own token -------------------------

READ_ONLY_WRITES: dict[str, dict[str, Callable[[World], dict[str, Any]]]] = {
    "native": {
        "remember": lambda w: {"memories": [{"content": "Read-only note"}], "entities": [{"name": "ReadOnlyEntity"}]},
        "update": lambda w: {"ref": w.id("A2"), "add_tags": ["read-only"]},
        "forget": lambda w: {"refs": [w.id("A2")]},
        "relate": lambda w: {"add": [{"from": "AlphaDb", "to": "AlphaService", "type": "read_only"}]},
    },
    "memdb": {
        "store_memory": lambda w: {"content": "Read-only note", "tags": ["alpha"]},
        "store_memories": lambda w: {"items": [{"content": "Read-only note", "tags": ["alpha"]}]},
        "update_memory": lambda w: {"hash": w.hash("A2"), "content": "Read-only rewrite"},
        "delete_memory": lambda w: {"hash": w.hash("A2")},
        "delete_memories": lambda w: {"hashes": [w.hash("A2")]},
        "create_relationship": lambda w: {"from_hash": w.hash("A2"), "to_hash": w.hash("A1"), "relation_type": "ro"},
        "delete_relationship": lambda w: {
            "from_hash": w.hash("A1"),
            "to_hash": w.hash("A2"),
            "relation_type": "follows",
        },
    },
    "topodb": {
        "create_memory": lambda w: {"content": "Read-only note"},
        "create_entity": lambda w: {"name": "ReadOnlyEntity"},
        "link": lambda w: {"from_id": w.id("A2"), "to_id": w.id("A_DB"), "edge_type": "read_only"},
        "set_node_props": lambda w: {"id": w.id("A_TASK"), "props": {"read_only": True}},
        "remove_node": lambda w: {"id": w.id("A2")},
        "close_edge": lambda w: {"id": w.id("A_DEPENDS")},
        "set_embedding": lambda w: {"id": w.id("A2"), "model": "shared-model", "vector": [0, 1]},
        "submit_batch": lambda w: {"commands": [{"op": "create_memory", "content": "Read-only note"}]},
    },
    "knowledge-graph": {
        "create_entities": lambda w: {"entities": [{"name": "ReadOnly", "entityType": "x", "observations": []}]},
        "create_relations": lambda w: {"relations": [{"from": "AlphaDb", "to": "SharedHub", "relationType": "ro"}]},
        "add_observations": lambda w: {"observations": [{"entityName": "AlphaDb", "contents": ["read-only"]}]},
        "delete_entities": lambda w: {"entityNames": ["AlphaDb"]},
        "delete_observations": lambda w: {
            "deletions": [{"entityName": "AlphaDb", "observations": ["Alpha falcon launch storage"]}]
        },
        "delete_relations": lambda w: {
            "relations": [{"from": "AlphaService", "to": "AlphaDb", "relationType": "depends_on"}]
        },
    },
}
"""Every tool that writes, per profile (the rest only read)."""

READER_READS: dict[str, dict[str, Callable[[World], dict[str, Any] | None]]] = {
    "native": {
        "recall": lambda w: {"query": "falcon launch"},
        "get": lambda w: {"refs": [w.id("A1"), "AlphaDb"]},
        "explore": lambda w: {"from": ["AlphaDb"]},
        "audit": lambda w: {"ref": w.id("A1")},
        "survey": lambda w: {},
    },
    "memdb": {
        "get_memory": lambda w: {"hash": w.hash("A1")},
        "search_memories": lambda w: {"query": "falcon launch"},
        "recall": lambda w: {"query": "falcon launch", "depth": 2},
        "get_relationships": lambda w: {"hash": w.hash("A1")},
        "memory_stats": lambda w: {},
    },
    "topodb": {
        "db_info": lambda w: {},
        "get_node": lambda w: {"id": w.id("A1")},
        "find_by_prop": lambda w: {"label": "Entity", "prop": "name", "value": "AlphaDb"},
        "search_memories": lambda w: {"query": "falcon launch"},
        "traverse": lambda w: {"seed_id": w.id("A_DB")},
        "access_stats": lambda w: {"id": w.id("A1")},
        "search_vectors": lambda w: {"model": "shared-model", "vector": [1, 0]},
        "get_changes": lambda w: None,  # the whole change log: no token reads it
    },
    "knowledge-graph": {
        "read_graph": lambda w: {},
        "search_nodes": lambda w: {"query": "AlphaDb"},
        "open_nodes": lambda w: {"names": ["AlphaDb"]},
        "search_observations": lambda w: {"query": "storage"},
        "get_neighbors": lambda w: {"entityName": "AlphaDb"},
        "find_path": lambda w: {"fromEntity": "AlphaDb", "toEntity": "AlphaService"},
        "get_subgraph": lambda w: {"entityNames": ["AlphaDb"]},
        "filter_by_type": lambda w: {"entityType": "database"},
        "filter_relations": lambda w: {"relationType": "depends_on"},
        "filter_observations": lambda w: {"pattern": "storage"},
    },
}
"""Every tool that only reads, per profile, with a call of A's data it answers."""

B_READS: dict[str, tuple[str, dict[str, Any]]] = {
    "native": ("recall", {"query": "falcon launch", "full": True, "limit": 100}),
    "memdb": ("search_memories", {"query": "falcon launch"}),
    "topodb": ("search_memories", {"query": "falcon launch", "k": 100}),
    "knowledge-graph": ("read_graph", {}),
}


def _differences(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    out = []
    for part in before:
        old, new = before[part], after[part]
        if old == new:
            continue
        if isinstance(old, dict):
            gone = sorted(str(k) for k in old.keys() - new.keys())
            added = sorted(str(k) for k in new.keys() - old.keys())
            changed = sorted(str(k) for k in old.keys() & new.keys() if old[k] != new[k])
            out.append(f"{part}: removed {gone}, added {added}, changed {changed}")
        else:
            gone = [c for c in old if c not in new]
            added = [c for c in new if c not in old]
            out.append(f"{part}: entries removed {gone[:5]}, added {added[:5]}")
    return out


def _whole(snap: Snapshot) -> dict[str, Any]:
    return {"nodes": snap.nodes, "edges": snap.edges, "vectors": snap.vectors, "changes": snap.changes}


# -- the tests -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", PROFILES)
def test_every_listed_tool_has_a_tenancy_case(deploy: Callable[[str], Deployment], profile: str) -> None:
    listed = sorted(deploy(profile).client.tool_names())
    assert sorted(CASES[profile]) == listed
    # Each tool is either a write (refused to a read-only token) or a read (served to it).
    assert sorted([*READ_ONLY_WRITES[profile], *READER_READS[profile]]) == listed


@pytest.mark.parametrize("profile", PROFILES)
def test_the_leak_check_sees_team_b_data(scratch: Callable[[str], Deployment], world: World, profile: str) -> None:
    """The check every reply goes through does find B's data, in a reply to team B's own
    token."""
    deployment = scratch(profile)
    b = Tenant(deployment.server, world.tokens["b"], world, profile, deployment.db)
    tool, args = B_READS[profile]
    reply = b.call(tool, args)
    assert not reply.error, reply.text
    b.check(tool, args, reply)
    assert len(b.problems) == 1 and "leaks" in b.problems[0], b.problems
    for what in ("the marker", "B's text 'zorblax"):
        assert what in b.problems[0], b.problems[0]


@pytest.mark.parametrize(("profile", "tool"), [(p, tool) for p in PROFILES for tool in CASES[p]])
def test_a_tool_shows_and_changes_nothing_of_team_b(
    deploy: Callable[[str], Deployment], world: World, profile: str, tool: str
) -> None:
    deployment = deploy(profile)
    t = deployment.a
    t.problems = []
    before = snapshot(deployment.db)
    CASES[profile][tool](t, world)
    after = snapshot(deployment.db)
    problems = list(t.problems)
    problems += [f"team B's data changed: {d}" for d in _differences(world.b_part(before), world.b_part(after))]
    # Whatever team A wrote is in A's scope.
    for kind, old, new in (("node", before.nodes, after.nodes), ("edge", before.edges, after.edges)):
        problems += [
            f"new {kind} {i} in scope {r['scope']}" for i, r in new.items() if i not in old and r["scope"] != TEAM_A
        ]
    seen = {c[0] for c in before.changes}
    problems += [f"change-log entry {c[:5]} outside A" for c in after.changes if c[0] not in seen and c[2] != TEAM_A]
    assert not problems, world.labelled("\n".join(problems))


@pytest.mark.parametrize(("profile", "tool"), [(p, tool) for p in PROFILES for tool in READ_ONLY_WRITES[p]])
def test_a_read_only_token_is_refused_every_write(
    deploy: Callable[[str], Deployment], world: World, profile: str, tool: str
) -> None:
    deployment = deploy(profile)
    reader = deployment.reader
    reader.problems = []
    before = snapshot(deployment.db)
    args = READ_ONLY_WRITES[profile][tool](world)
    reply = reader.call(tool, args)
    reader.check(tool, args, reply)
    after = snapshot(deployment.db)
    assert reply.error, reply.text
    assert Tenant.says(reply, READ_ONLY), reply.text
    assert not reader.problems, reader.problems
    assert _whole(after) == _whole(before), _differences(_whole(before), _whole(after))


@pytest.mark.parametrize(("profile", "tool"), [(p, tool) for p in PROFILES for tool in READER_READS[p]])
def test_a_read_only_token_still_reads(
    deploy: Callable[[str], Deployment], world: World, profile: str, tool: str
) -> None:
    deployment = deploy(profile)
    reader = deployment.reader
    reader.problems = []
    before = snapshot(deployment.db)
    args = READER_READS[profile][tool](world)
    if args is None:
        reader.denied(tool, {"since_seq": 0}, 'it is not readable with token "a-reader"')
    else:
        reader.ok(tool, args)
    after = snapshot(deployment.db)
    assert not reader.problems, "\n".join(reader.problems)
    assert _whole(after) == _whole(before), _differences(_whole(before), _whole(after))


SHARED_DELETES: dict[str, tuple[str, Callable[[World], dict[str, Any]]]] = {
    "native": ("forget", lambda w: {"refs": ["SharedSpoke", w.hash("SM2")]}),
    "memdb": ("delete_memory", lambda w: {"hash": w.hash("SM2")}),
    "topodb": ("remove_node", lambda w: {"id": w.id("SSPOKE")}),
    "knowledge-graph": ("delete_entities", lambda w: {"entityNames": ["SharedSpoke"]}),
}


@pytest.mark.parametrize("profile", PROFILES)
def test_deleting_a_shared_item_takes_none_of_team_b_edges(
    scratch: Callable[[str], Deployment], world: World, profile: str
) -> None:
    """A token of team A that may write the shared scope still may not change the edges
    team B drew in its own scope to a shared item: deleting the item must not drop them
    behind B's back (no entry of B's change log even says they went). Refusing the delete
    is fine."""
    deployment = scratch(profile)
    t = Tenant(deployment.server, world.tokens["a-shared"], world, profile, deployment.db)
    t.problems = []
    tool, make = SHARED_DELETES[profile]
    args = make(world)
    before = snapshot(deployment.db)
    reply = t.call(tool, args)
    t.check(tool, args, reply)
    after = snapshot(deployment.db)
    assert not t.problems, t.problems
    differences = _differences(world.b_part(before), world.b_part(after))
    assert not differences, world.labelled(f"{tool} {args} answered {reply.text[:300]}\n" + "\n".join(differences))


@pytest.mark.parametrize("profile", PROFILES)
def test_team_b_is_exactly_as_seeded(deploy: Callable[[str], Deployment], world: World, profile: str) -> None:
    """After every call of every test above: B's data, change-log entries and access
    counts are as seeded (reads are counted off the request path: give them time)."""
    deployment = deploy(profile)
    time.sleep(0.5)
    now = world.b_part(snapshot(deployment.db), with_access=True)
    seeded = world.b_part(world.seeded, with_access=True)
    assert seeded["nodes"] and seeded["edges"] and seeded["vectors"] and seeded["changes"]
    differences = _differences(seeded, now)
    assert not differences, world.labelled("\n".join(differences))


NOT_WRITABLE_BY_VISITOR = (f'scope "{TEAM_A}" is not writable with token "a-visitor"', "cannot touch an item in scope")

VISITOR_WRITES: dict[str, dict[str, Callable[[World], dict[str, Any]]]] = {
    "native": {
        "remember": lambda w: {"memories": [{"content": "Visitor note"}], "scope": TEAM_A},
        "remember-entity": lambda w: {"entities": [{"name": "AlphaDb", "observations": ["visited"]}]},
        "update": lambda w: {"ref": w.id("A2"), "add_tags": ["visited"]},
        "forget": lambda w: {"refs": [w.id("A2")]},
        "forget-relation": lambda w: {"relations": [{"from": "AlphaService", "type": "depends_on", "to": "AlphaDb"}]},
        "relate": lambda w: {"add": [{"from": "AlphaDb", "to": "AlphaService", "type": "visited"}]},
        "relate-in-a": lambda w: {"add": [{"from": "AlphaDb", "to": "AlphaService", "type": "x"}], "scope": TEAM_A},
        "relate-close": lambda w: {"close": [{"id": w.id("A_DEPENDS")}]},
    },
    "memdb": {
        "update_memory": lambda w: {"hash": w.hash("A2"), "content": "Visitor rewrite"},
        "delete_memory": lambda w: {"hash": w.hash("A2")},
        "delete_memories": lambda w: {"hashes": [w.hash("A2")]},
        "create_relationship": lambda w: {"from_hash": w.hash("A2"), "to_hash": w.hash("A1"), "relation_type": "v"},
        "delete_relationship": lambda w: {
            "from_hash": w.hash("A1"),
            "to_hash": w.hash("A2"),
            "relation_type": "follows",
        },
    },
    "topodb": {
        "create_memory": lambda w: {"content": "Visitor note", "scope": TEAM_A},
        "create_entity": lambda w: {"name": "VisitorEntity", "scope": TEAM_A},
        "link": lambda w: {"from_id": w.id("A2"), "to_id": w.id("A_DB"), "edge_type": "visited"},
        "set_node_props": lambda w: {"id": w.id("A_TASK"), "props": {"visited": True}},
        "remove_node": lambda w: {"id": w.id("A2")},
        "close_edge": lambda w: {"id": w.id("A_DEPENDS")},
        "set_embedding": lambda w: {"id": w.id("A2"), "model": "shared-model", "vector": [0, 1]},
        "submit_batch": lambda w: {
            "commands": [
                {"op": "create_memory", "content": "Visitor note"},
                {"op": "set_node_props", "id": w.id("A_TASK"), "props": {"visited": True}},
            ]
        },
    },
    "knowledge-graph": {
        "create_relations": lambda w: {"relations": [{"from": "AlphaDb", "to": "SharedHub", "relationType": "v"}]},
        "add_observations": lambda w: {"observations": [{"entityName": "AlphaDb", "contents": ["visited"]}]},
        "delete_entities": lambda w: {"entityNames": ["AlphaDb"]},
        "delete_observations": lambda w: {
            "deletions": [{"entityName": "AlphaDb", "observations": ["Alpha falcon launch storage"]}]
        },
        "delete_relations": lambda w: {
            "relations": [{"from": "AlphaService", "to": "AlphaDb", "relationType": "depends_on"}]
        },
    },
}
"""Per profile, calls that would change team A's data (a tool may appear under several
names, `tool-variant`): a token that only reads A is refused each."""


@pytest.mark.parametrize(("profile", "case"), [(p, c) for p in PROFILES for c in VISITOR_WRITES[p]])
def test_a_scope_a_token_only_reads_is_never_written(
    deploy: Callable[[str], Deployment], world: World, profile: str, case: str
) -> None:
    """A token's read scopes are not its write scopes: reading A lets it see A's items, and
    naming them, or A itself, in a write is refused, with nothing written anywhere."""
    deployment = deploy(profile)
    visitor = Tenant(deployment.server, world.tokens["a-visitor"], world, profile, deployment.db)
    tool = case.partition("-")[0] if profile == "native" else case
    args = VISITOR_WRITES[profile][case](world)
    before = snapshot(deployment.db)
    reply = visitor.call(tool, args)
    after = snapshot(deployment.db)
    assert reply.error, reply.text
    assert any(Tenant.says(reply, text) for text in NOT_WRITABLE_BY_VISITOR), reply.text
    assert _whole(after) == _whole(before), _differences(_whole(before), _whole(after))
