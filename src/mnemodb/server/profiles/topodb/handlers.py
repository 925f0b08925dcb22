"""The topodb tools' bodies over the engine's property graph."""

from __future__ import annotations

from pathlib import PurePath
from typing import Any

from mnemodb.engine import Engine
from mnemodb.engine.properties import (
    CloseEdge,
    CreateNode,
    Link,
    RemoveNode,
    SetEmbedding,
    SetProps,
)
from mnemodb.engine.tokens import current_grant
from mnemodb.server.profiles.topodb.batch import parse_batch
from mnemodb.server.profiles.topodb.wire import (
    CHANGES_DISABLED,
    MAX_K,
    SortedReply,
    ToolError,
    edge_json,
    f32,
    floatless,
    node_json,
    op_json,
    parse_id,
    prop_value,
    props_in,
    read_scopes,
    vector_in,
    write_scope,
)
from mnemodb.server.serde_params import I64_MAX


class TopodbTools:
    """The tool bodies, bound to the server's settings."""

    def __init__(self, *, db_path: str, allow_unscoped_changes: bool) -> None:
        self.db_path = db_path
        self.allow_unscoped_changes = allow_unscoped_changes

    def db_info(self, engine: Engine, a: dict[str, Any]) -> Any:
        # A call under a token (a team server) gets the file's name only: where the server
        # keeps its files is the operator's business, and the directories often name a user.
        # The key stays, since topodb clients read it.
        path = self.db_path if current_grant() is None else PurePath(self.db_path).name
        return {
            "current_seq": engine.current_seq(),
            "default_read_scopes": list(engine.read_scopes),
            "default_scope": engine.write_scope,
            "path": path,
        }

    def get_node(self, engine: Engine, a: dict[str, Any]) -> Any:
        node_id = parse_id(a["id"])
        node = engine.nodes.get_node(node_id, scopes=read_scopes(a), as_of=a["as_of"])
        if node is None:
            return {"found": False}
        return SortedReply({"found": True, "node": node_json(node)}, floatless([node]))

    def find_by_prop(self, engine: Engine, a: dict[str, Any]) -> Any:
        value = prop_value(a["value"])
        nodes = engine.nodes.find_by_prop(a["label"], a["prop"], value, scopes=read_scopes(a))
        return SortedReply({"nodes": [node_json(n) for n in sorted(nodes, key=lambda n: n.id)]}, floatless(nodes))

    def search_memories(self, engine: Engine, a: dict[str, Any]) -> Any:
        hits = engine.nodes.search_text(a["query"], k=min(a["k"], MAX_K), scopes=read_scopes(a))
        return SortedReply({"hits": [{"node": node_json(node), "score": f32(score)} for node, score in hits]})

    def traverse(self, engine: Engine, a: dict[str, Any]) -> Any:
        seed = parse_id(a["seed_id"])
        nodes, edges = engine.nodes.traverse(
            seed,
            max_hops=a["max_hops"],
            direction=a["direction"],
            edge_types=a["edge_types"],
            scopes=read_scopes(a),
            as_of=a["as_of"],
        )
        return SortedReply(
            {"subgraph": {"edges": [edge_json(e) for e in edges], "nodes": [node_json(n) for n in nodes]}},
            floatless(nodes) and floatless(edges),
        )

    def access_stats(self, engine: Engine, a: dict[str, Any]) -> Any:
        node_id = parse_id(a["id"])
        stats = engine.nodes.access_stats(node_id, scopes=read_scopes(a))
        if stats is None:
            return {"found": False}
        count, last = stats
        return {"access_count": count, "found": True, "last_accessed_at": last}

    def search_vectors(self, engine: Engine, a: dict[str, Any]) -> Any:
        scopes = read_scopes(a)
        vector = vector_in(a["vector"])
        candidates = [parse_id(c) for c in a["candidates"]] if a["candidates"] is not None else None
        hits = engine.nodes.search_vectors(
            a["model"], vector, k=min(a["k"], MAX_K), candidates=candidates, scopes=scopes
        )
        return SortedReply({"hits": [{"node": node_json(node), "score": f32(score)} for node, score in hits]})

    def get_changes(self, engine: Engine, a: dict[str, Any]) -> Any:
        if not self.allow_unscoped_changes:
            raise ToolError(CHANGES_DISABLED)
        since = min(max(1, a["since_seq"]), I64_MAX)
        limit = min(a["limit"], I64_MAX) if a["limit"] is not None else None
        changes = engine.changes(since, limit)
        return {"ops": [{"op": op_json(c), "seq": c.seq} for c in changes]}

    def create_memory(self, engine: Engine, a: dict[str, Any]) -> Any:
        props = props_in(a["props"], reserved="content") if a["props"] is not None else {}
        command = CreateNode("Memory", {"content": a["content"], **props}, write_scope(a))
        ids, _ = engine.nodes.submit([command])
        return {"id": ids[0]}

    def create_entity(self, engine: Engine, a: dict[str, Any]) -> Any:
        props = props_in(a["props"], reserved="name") if a["props"] is not None else {}
        command = CreateNode("Entity", {"name": a["name"], **props}, write_scope(a))
        ids, _ = engine.nodes.submit([command])
        return {"id": ids[0]}

    def link(self, engine: Engine, a: dict[str, Any]) -> Any:
        src, dst = parse_id(a["from_id"]), parse_id(a["to_id"])
        props = props_in(a["props"]) if a["props"] is not None else {}
        command = Link(src, dst, a["edge_type"], props, write_scope(a), a["valid_from"])
        ids, _ = engine.nodes.submit([command])
        return {"id": ids[0]}

    def set_node_props(self, engine: Engine, a: dict[str, Any]) -> Any:
        node_id = parse_id(a["id"])
        _, seq = engine.nodes.submit([SetProps(node_id, props_in(a["props"], removals=True))])
        return {"seq": seq}

    def remove_node(self, engine: Engine, a: dict[str, Any]) -> Any:
        _, seq = engine.nodes.submit([RemoveNode(parse_id(a["id"]))])
        return {"seq": seq}

    def close_edge(self, engine: Engine, a: dict[str, Any]) -> Any:
        _, seq = engine.nodes.submit([CloseEdge(parse_id(a["id"], "edge"), a["valid_to"])])
        return {"seq": seq}

    def set_embedding(self, engine: Engine, a: dict[str, Any]) -> Any:
        node_id = parse_id(a["id"])
        _, seq = engine.nodes.submit([SetEmbedding(node_id, a["model"], vector_in(a["vector"]))])
        return {"seq": seq}

    def submit_batch(self, engine: Engine, a: dict[str, Any]) -> Any:
        ids, _ = engine.nodes.submit(parse_batch(a["commands"]))
        return {"ids": ids}
