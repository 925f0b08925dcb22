"""Property-based tests of the property-graph face: scoped reads never leak across scopes
and find everything they should, and a batch is all or nothing.

Each example runs on a fresh database of the chosen store (`stores.py`: a SQLite file by
default) and is checked against a small in-Python model.
"""

from __future__ import annotations

import contextlib
import itertools
import struct
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.helpers import store_at
from mnemodb.engine import Engine, EngineError
from mnemodb.engine.properties import (
    CloseEdge,
    Command,
    CommandFailed,
    CreateNode,
    IndexSpec,
    Link,
    Ref,
    RemoveNode,
    SetEmbedding,
    SetProps,
)
from support import SCOPE_A, START_MS, Clock

SCOPE_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"
SCOPES = ("shared", SCOPE_A, SCOPE_B)
READ_SETS = [list(c) for n in range(1, 4) for c in itertools.combinations(SCOPES, n)]
MISSING_NODE = "01HV7N8Q3Y2J6W5X4Z9A0B1C2Y"
MISSING_EDGE = "01HV7N8Q3Y2J6W5X4Z9A0B1C2Z"

WORDS = ("apple", "river", "stone", "cloud")
NAMES = ("Ada", "ada", "Bob")
CODES: tuple[str | int | bool, ...] = ("red", "Red", "1", 1, True, 0, False)
SPEC = IndexSpec(
    equality=(("Entity", "name"), ("Thing", "code")),
    text=(("Memory", "content"), ("Thing", "note")),
)
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@contextlib.contextmanager
def fresh_engine() -> Iterator[tuple[Engine, Clock]]:
    """An engine over a new database, with the property-graph spec these tests use."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = Clock(START_MS)
        with Engine(store_at(Path(tmp) / "graph.db"), clock=clock, access_interval=3600) as eng:
            eng.nodes.use_spec(SPEC)
            yield eng, clock


def same_value(a: Any, b: Any) -> bool:
    """Equality the way an equality index sees it: the type is part of the value."""
    return type(a) is type(b) and a == b


def text_words(value: Any) -> set[str]:
    return set(value.split()) if isinstance(value, str) else set()


# -- scope isolation ------------------------------------------------------------------------------------------

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
plain_props = st.fixed_dictionaries(
    {}, optional={"code": st.sampled_from(CODES), "note": texts, "n": st.integers(0, 3)}
)
node_specs = st.one_of(
    st.tuples(st.just("Entity"), st.sampled_from(NAMES).map(lambda n: {"name": n}), st.sampled_from(SCOPES)),
    st.tuples(st.just("Memory"), texts.map(lambda t: {"content": t}), st.sampled_from(SCOPES)),
    st.tuples(st.just("Thing"), plain_props, st.sampled_from(SCOPES)),
)
valid_from_offsets = st.sampled_from([None, -10, 10])  # now, past, future
close_choices = st.sampled_from(["open", "now", "later", "earlier"])
update_props = st.dictionaries(
    st.sampled_from(["code", "note", "n"]),
    st.one_of(st.none(), st.sampled_from(CODES), texts),
    max_size=3,
)
vectors = st.tuples(*[st.integers(-3, 3)] * 3).filter(any).map(lambda v: tuple(float(x) for x in v))


@st.composite
def worlds(draw: st.DrawFn) -> dict[str, Any]:
    nodes = draw(st.lists(node_specs, min_size=1, max_size=9))
    index = st.integers(0, len(nodes) - 1)
    links = draw(
        st.lists(
            st.tuples(index, index, st.sampled_from(["a", "b"]), st.sampled_from(SCOPES), valid_from_offsets),
            max_size=12,
        )
    )
    closes = draw(st.lists(close_choices, min_size=len(links), max_size=len(links)))
    updates = draw(st.lists(st.tuples(index, update_props), max_size=5))
    embeddings = draw(st.lists(st.tuples(index, vectors), max_size=6))
    return {"nodes": nodes, "links": links, "closes": closes, "updates": updates, "embeddings": embeddings}


@dataclass
class ModelNode:
    scope: str
    label: str
    props: dict[str, Any]


@dataclass
class ModelEdge:
    src: str
    dst: str
    scope: str
    valid_from: int
    valid_to: int | None = None

    def valid_at(self, at: int) -> bool:
        return self.valid_from <= at and (self.valid_to is None or at < self.valid_to)


def build(eng: Engine, now: int, world: dict[str, Any]) -> tuple[dict[str, ModelNode], dict[str, ModelEdge], set[str]]:
    """Write the world in one batch (creates, links, closes, props, embeddings, by back-reference)
    and return the model of what should be stored."""
    commands: list[Command] = []
    # Which create a node resolves to: creates of one entity name, or one memory text, in
    # one scope make one node.
    canonical: dict[tuple[str, str, str], int] = {}
    owner: list[int] = []
    for i, (label, props, scope) in enumerate(world["nodes"]):
        key_prop = {"Entity": "name", "Memory": "content"}.get(label)
        key = (label, scope, props[key_prop]) if key_prop else None
        owner.append(canonical.setdefault(key, i) if key else i)
        commands.append(CreateNode(label, props, scope=scope))
    specs = world["nodes"]
    links: list[tuple[int, Any]] = []
    for (src, dst, edge_type, edge_scope, offset), close in zip(world["links"], world["closes"], strict=True):
        a, b = specs[owner[src]][2], specs[owner[dst]][2]
        if a != b and "shared" not in (a, b):
            continue  # the cross-scope rule would refuse the batch; this test is about reads
        valid_from = None if offset is None else now + offset
        links.append((len(commands), close))
        commands.append(Link(Ref(src), Ref(dst), edge_type, scope=edge_scope, valid_from=valid_from))
    for position, close in links:
        if close != "open":
            valid_to = {"now": None, "later": now + 10, "earlier": now - 5}[close]
            commands.append(CloseEdge(Ref(position), valid_to=valid_to))
    for target, props in world["updates"]:
        commands.append(SetProps(Ref(target), props))
    for target, vector in world["embeddings"]:
        commands.append(SetEmbedding(Ref(target), "m", vector))

    produced, seq = eng.nodes.submit(commands)
    assert seq == eng.current_seq()

    nodes: dict[str, ModelNode] = {}
    for i, (label, props, scope) in enumerate(specs):
        node_id = produced[i]
        assert node_id is not None
        assert node_id == produced[owner[i]], "a create of an existing name or text returns that node"
        if owner[i] == i:
            nodes[node_id] = ModelNode(scope, label, dict(props))
    edges: dict[str, ModelEdge] = {}
    for position, close in links:
        link = commands[position]
        assert isinstance(link, Link)
        edge_id = produced[position]
        assert edge_id is not None
        assert isinstance(link.src, Ref) and isinstance(link.dst, Ref)
        src, dst = produced[link.src.index], produced[link.dst.index]
        assert src and dst
        edge = ModelEdge(src, dst, link.scope or "shared", now if link.valid_from is None else link.valid_from)
        if close != "open":
            edge.valid_to = {"now": now, "later": now + 10, "earlier": now - 5}[close]
        edges[edge_id] = edge
    for target, props in world["updates"]:
        updated = produced[target]
        assert updated is not None
        node = nodes[updated]
        for key, value in props.items():
            if value is None:
                node.props.pop(key, None)
            else:
                node.props[key] = value
    embedded = {produced[target] for target, _ in world["embeddings"]}
    return nodes, edges, {e for e in embedded if e is not None}


def reachable(
    seed: str, nodes: dict[str, ModelNode], edges: dict[str, ModelEdge], reads: Sequence[str], now: int
) -> tuple[set[str], set[str]]:
    """The model's traversal: every hop over edges valid now whose scope and far node are readable."""
    if nodes[seed].scope not in reads:
        return set(), set()
    seen, followed, frontier = {seed}, set(), [seed]
    for _ in range(4):
        following = []
        for edge_id, edge in edges.items():
            if edge.scope not in reads or not edge.valid_at(now):
                continue
            for here, there in ((edge.src, edge.dst), (edge.dst, edge.src)):
                if here in frontier and nodes[there].scope in reads:
                    followed.add(edge_id)
                    if there not in seen:
                        seen.add(there)
                        following.append(there)
        frontier = following
    return seen, followed


@SETTINGS
@given(worlds())
def test_scoped_reads_see_exactly_their_scopes(world: dict[str, Any]) -> None:
    with fresh_engine() as (eng, clock):
        now = clock.now
        nodes, edges, embedded = build(eng, now, world)
        for reads in READ_SETS:
            inside = {i for i, n in nodes.items() if n.scope in reads}

            for node_id, expected in nodes.items():
                found = eng.nodes.get_node(node_id, scopes=reads)
                if node_id in inside:
                    assert found is not None
                    assert (found.scope, found.label, dict(found.props)) == (
                        expected.scope,
                        expected.label,
                        expected.props,
                    )
                    assert eng.nodes.access_stats(node_id, scopes=reads) is not None
                else:
                    assert found is None
                    assert eng.nodes.access_stats(node_id, scopes=reads) is None

            for name in NAMES:
                hits = eng.nodes.find_by_prop("Entity", "name", name, scopes=reads)
                assert len(hits) == len({h.id for h in hits})
                assert {h.id for h in hits} == {
                    i for i in inside if nodes[i].label == "Entity" and nodes[i].props["name"] == name
                }
            for code in CODES:
                hits = eng.nodes.find_by_prop("Thing", "code", code, scopes=reads)
                assert {h.id for h in hits} == {
                    i
                    for i in inside
                    if nodes[i].label == "Thing"
                    and "code" in nodes[i].props
                    and same_value(nodes[i].props["code"], code)
                }

            for word in WORDS:
                scored = eng.nodes.search_text(word, k=100, scopes=reads)
                found_ids = [n.id for n, _ in scored]
                assert len(found_ids) == len(set(found_ids))
                assert all(score > 0 for _, score in scored)
                assert set(found_ids) == {
                    i
                    for i in inside
                    if (nodes[i].label == "Memory" and word in text_words(nodes[i].props["content"]))
                    or (nodes[i].label == "Thing" and word in text_words(nodes[i].props.get("note")))
                }

            scored = eng.nodes.search_vectors("m", [1.0, 2.0, 3.0], k=100, scopes=reads)
            assert {n.id for n, _ in scored} == embedded & inside
            assert [s for _, s in scored] == sorted((s for _, s in scored), reverse=True)

            for seed in nodes:
                found_nodes, found_edges = eng.nodes.traverse(seed, max_hops=4, scopes=reads)
                assert all(n.scope in reads for n in found_nodes)
                assert all(e.scope in reads for e in found_edges)
                want_nodes, want_edges = reachable(seed, nodes, edges, reads, now)
                assert {n.id for n in found_nodes} == want_nodes
                assert {e.id for e in found_edges} == want_edges


# -- batch atomicity ----------------------------------------------------------------------------------------


@dataclass
class State:
    """What the store should hold: nodes, edges and the `m` embeddings, by id."""

    nodes: dict[str, ModelNode] = field(default_factory=dict)
    edges: dict[str, dict[str, Any]] = field(default_factory=dict)
    vectors: dict[str, tuple[float, ...]] = field(default_factory=dict)
    gone_nodes: list[str] = field(default_factory=list)
    gone_edges: list[str] = field(default_factory=list)

    def copy(self) -> State:
        return State(
            {k: ModelNode(v.scope, v.label, dict(v.props)) for k, v in self.nodes.items()},
            {k: dict(v) for k, v in self.edges.items()},
            dict(self.vectors),
            list(self.gone_nodes),
            list(self.gone_edges),
        )


class Refused(Exception):
    """The model's verdict: this command fails (op is the CommandFailed op, or None)."""

    def __init__(self, op: str | None) -> None:
        super().__init__(op)
        self.op = op


def resolve(ref: Any, produced: list[str | None]) -> str:
    if isinstance(ref, Ref):
        value = produced[ref.index]
        if value is None:
            raise Refused(None)  # a back-reference to a command that produces no id
        return value
    return str(ref)


def simulate(state: State, batch: Sequence[Command], now: int) -> tuple[State, list[str | None]]:
    """Run the batch on a copy of the state; ids made here are placeholders `new:<i>`."""
    out = state.copy()
    produced: list[str | None] = []
    for i, command in enumerate(batch):
        made: str | None = None
        match command:
            case CreateNode(label=label, props=props, scope=scope):
                made = f"new:{i}"
                out.nodes[made] = ModelNode(scope or "shared", label, dict(props))
            case Link(src=src, dst=dst, edge_type=edge_type, valid_from=valid_from):
                a, b = resolve(src, produced), resolve(dst, produced)
                if a not in out.nodes or b not in out.nodes:
                    raise Refused("CreateEdge")
                scopes = {out.nodes[a].scope, out.nodes[b].scope}
                if len(scopes) > 1 and "shared" not in scopes:
                    raise Refused("CreateEdge")
                made = f"new:{i}"
                start = now if valid_from is None else valid_from
                out.edges[made] = {"from": a, "to": b, "type": edge_type, "valid_from": start, "valid_to": None}
            case SetProps(node=ref, props=props):
                node = out.nodes.get(resolve(ref, produced))
                if node is None:
                    raise Refused("SetNodeProps")
                for key, value in props.items():
                    if value is None:
                        node.props.pop(key, None)
                    else:
                        node.props[key] = value
            case RemoveNode(node=ref):
                node_id = resolve(ref, produced)
                if node_id not in out.nodes:
                    raise Refused("RemoveNode")
                del out.nodes[node_id]
                out.vectors.pop(node_id, None)
                for edge_id in [e for e, v in out.edges.items() if node_id in (v["from"], v["to"])]:
                    del out.edges[edge_id]
            case CloseEdge(edge=ref, valid_to=valid_to):
                edge = out.edges.get(resolve(ref, produced))
                if edge is None or edge["valid_to"] is not None:
                    raise Refused("CloseEdge")
                edge["valid_to"] = now if valid_to is None else valid_to
            case SetEmbedding(node=ref, vector=vector):
                node_id = resolve(ref, produced)
                if node_id not in out.nodes:
                    raise Refused("SetEmbedding")
                out.vectors[node_id] = tuple(vector)
        produced.append(made)
    return out, produced


def stored_state(eng: Engine) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Nodes, edges and embeddings as the store holds them (from an export)."""
    nodes: dict[str, Any] = {}
    edges: dict[str, Any] = {}
    vectors: dict[str, Any] = {}
    for record in eng.export():
        if record["type"] == "node":
            nodes[record["id"]] = (record["scope"], record["label"], record["props"])
        elif record["type"] == "edge":
            edges[record["id"]] = {
                "from": record["from"],
                "to": record["to"],
                "type": record["edge_type"],
                "valid_from": record["valid_from"],
                "valid_to": record["valid_to"],
            }
        elif record["type"] == "embedding":
            vectors[record["node"]] = (record["model"], record["vector"])
    return nodes, edges, vectors


def expected_state(state: State) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    nodes = {k: (v.scope, v.label, v.props) for k, v in state.nodes.items()}
    vectors = {k: ("m", struct.pack(f"<{len(v)}f", *v).hex()) for k, v in state.vectors.items()}
    return nodes, state.edges, vectors


VECTORS = [(1.0, 0.0), (0.0, 1.0), (0.5, -2.0)]


def node_ref(data: st.DataObject, state: State, creates: list[int]) -> Any:
    choices: list[Any] = [MISSING_NODE]
    choices += sorted(state.nodes) * 3 + state.gone_nodes[-3:]
    choices += [Ref(i) for i in creates] * 2
    return data.draw(st.sampled_from(choices))


def edge_ref(data: st.DataObject, state: State, links: list[int], quiet: list[int]) -> Any:
    choices: list[Any] = [MISSING_EDGE]
    choices += sorted(state.edges) * 3 + state.gone_edges[-3:]
    choices += [Ref(i) for i in links] * 2
    if quiet:
        choices.append(Ref(quiet[0]))  # a command that produced no id
    return data.draw(st.sampled_from(choices))


def draw_batch(data: st.DataObject, state: State, now: int) -> list[Command]:
    kinds = ["create", "props", "link", "close", "remove", "embed"]
    batch: list[Command] = []
    creates: list[int] = []
    links: list[int] = []
    quiet: list[int] = []
    for i in range(data.draw(st.integers(1, 6), label="batch size")):
        kind = data.draw(st.sampled_from(kinds))
        if kind == "create" or (not state.nodes and not creates and kind != "close"):
            props = data.draw(plain_props)
            batch.append(CreateNode("Thing", props, scope=data.draw(st.sampled_from(SCOPES))))
            creates.append(i)
        elif kind == "props":
            batch.append(SetProps(node_ref(data, state, creates), data.draw(update_props)))
            quiet.append(i)
        elif kind == "link":
            valid_from = data.draw(st.sampled_from([None, now - 50]))
            batch.append(
                Link(node_ref(data, state, creates), node_ref(data, state, creates), "e", valid_from=valid_from)
            )
            links.append(i)
        elif kind == "close":
            valid_to = data.draw(st.sampled_from([None, now + 50]))
            batch.append(CloseEdge(edge_ref(data, state, links, quiet), valid_to=valid_to))
            quiet.append(i)
        elif kind == "remove":
            batch.append(RemoveNode(node_ref(data, state, creates)))
            quiet.append(i)
        else:
            batch.append(SetEmbedding(node_ref(data, state, creates), "m", data.draw(st.sampled_from(VECTORS))))
            quiet.append(i)
    return batch


def search_model(state: State) -> dict[str, set[str]]:
    return {
        word: {i for i, n in state.nodes.items() if n.label == "Thing" and word in text_words(n.props.get("note"))}
        for word in WORDS
    }


def search_store(eng: Engine) -> dict[str, set[str]]:
    return {word: {n.id for n, _ in eng.nodes.search_text(word, k=100, scopes=list(SCOPES))} for word in WORDS}


@SETTINGS
@given(st.data())
def test_batches_are_all_or_nothing(data: st.DataObject) -> None:
    with fresh_engine() as (eng, clock):
        state = State()
        for _ in range(data.draw(st.integers(1, 8), label="batches")):
            clock.now += data.draw(st.integers(1, 100))
            batch = draw_batch(data, state, clock.now)
            seq = eng.current_seq()
            try:
                after, placeholders = simulate(state, batch, clock.now)
            except Refused as refused:
                try:
                    eng.nodes.submit(batch)
                except EngineError as exc:
                    if refused.op is not None:
                        assert isinstance(exc, CommandFailed), exc
                        assert exc.op == refused.op
                else:
                    raise AssertionError(f"the batch should have been refused ({refused.op}): {batch}")
                assert eng.current_seq() == seq
            else:
                produced, last = eng.nodes.submit(batch)
                assert last == seq + len(batch) == eng.current_seq()
                assert [p is None for p in produced] == [p is None for p in placeholders]
                real = {p: r for p, r in zip(placeholders, produced, strict=True) if p is not None and r is not None}
                made = [r for r in produced if r is not None]
                had_nodes = [
                    *state.nodes,
                    *(r for c, r in zip(batch, produced, strict=True) if isinstance(c, CreateNode)),
                ]
                had_edges = [*state.edges, *(r for c, r in zip(batch, produced, strict=True) if isinstance(c, Link))]
                assert len(set(made)) == len(made)
                state = rename(after, real)
                state.gone_nodes += [n for n in had_nodes if n is not None and n not in state.nodes]
                state.gone_edges += [e for e in had_edges if e is not None and e not in state.edges]
            assert stored_state(eng) == expected_state(state)
            assert search_store(eng) == search_model(state)
            assert {n.id for n, _ in eng.nodes.search_vectors("m", [1.0, 1.0], k=100, scopes=list(SCOPES))} == set(
                state.vectors
            )


def rename(state: State, real: dict[str, str]) -> State:
    """The state with placeholder ids replaced by the ids the engine gave; removed nodes and
    edges are remembered for later batches to refer to."""

    def r(value: str) -> str:
        return real.get(value, value)

    return State(
        {r(k): v for k, v in state.nodes.items()},
        {r(k): {**v, "from": r(v["from"]), "to": r(v["to"])} for k, v in state.edges.items()},
        {r(k): v for k, v in state.vectors.items()},
        list(state.gone_nodes),
        list(state.gone_edges),
    )
