"""get_changes (with --allow-unscoped-changes): the change log in topodb's op JSON.

Seqs start at 1 with no gaps; ops are externally tagged with alphabetical keys, scopes
are `"Shared"` or `{"Id": ULID}`, property values `{"Str"|"Int"|"Float"|"Bool": v}` and a
removed property `null`. `since_seq` is inclusive (0 means 1), past the end is `[]`,
and mnemodb's `limit` pages.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from topodb_support import MISSING, SCOPE_A, Topo

pytestmark = pytest.mark.inprocess


def test_ops_from_every_write_tool(tmp_path: Path) -> None:
    with Topo.in_process(tmp_path / "agent.db", "--allow-unscoped-changes") as topo:
        assert topo.seq() == 0
        assert topo.ok("get_changes", {"since_seq": 0}) == {"ops": []}

        ada = topo.entity("Ada")
        memory = topo.memory("Ada wrote notes", scope=SCOPE_A, props={"n": 1, "f": 1.5, "b": True, "s": "x"})
        edge = topo.link(memory, ada, "mentions", scope=SCOPE_A, props={"w": 2}, valid_from=1_700_000_000_000)
        topo.ok("set_node_props", {"id": ada, "props": {"gone": "soon"}})
        topo.ok("set_node_props", {"id": ada, "props": {"gone": None, "role": "x"}})
        topo.ok("set_node_props", {"id": ada, "props": {}})
        topo.ok("close_edge", {"id": edge, "valid_to": 1_700_000_001_000})
        topo.ok("set_embedding", {"id": ada, "model": "m", "vector": [0.3, 0.9]})
        topo.ok("set_embedding", {"id": memory, "model": "m", "vector": [1, 0]})
        late = topo.link(ada, ada, "self")
        topo.ok("close_edge", {"id": late})
        assert topo.ok("remove_node", {"id": memory}) == {"seq": 12}

        # Reads and refused writes add nothing.
        topo.ok("get_node", {"id": ada})
        topo.ok("search_memories", {"query": "notes"})
        topo.error("set_node_props", {"id": MISSING, "props": {}})
        topo.error(
            "submit_batch", {"commands": [{"op": "create_entity", "name": "no"}, {"op": "remove_node", "id": MISSING}]}
        )
        assert topo.seq() == 12

        everything = topo.ok("get_changes", {"since_seq": 0})["ops"]
        assert topo.ok("get_changes", {"since_seq": 1})["ops"] == everything
        assert [entry["seq"] for entry in everything] == list(range(1, 13))
        assert all(list(entry) == ["op", "seq"] for entry in everything)
        ops = [entry["op"] for entry in everything]
        assert ops[0] == {
            "CreateNode": {"id": ada, "label": "Entity", "props": {"name": {"Str": "Ada"}}, "scope": "Shared"}
        }
        assert ops[1] == {
            "CreateNode": {
                "id": memory,
                "label": "Memory",
                "props": {
                    "b": {"Bool": True},
                    "content": {"Str": "Ada wrote notes"},
                    "f": {"Float": 1.5},
                    "n": {"Int": 1},
                    "s": {"Str": "x"},
                },
                "scope": {"Id": SCOPE_A},
            }
        }
        assert ops[2] == {
            "CreateEdge": {
                "from": memory,
                "id": edge,
                "props": {"w": {"Int": 2}},
                "scope": {"Id": SCOPE_A},
                "to": ada,
                "ty": "mentions",
                "valid_from": 1_700_000_000_000,
            }
        }
        assert ops[3] == {"SetNodeProps": {"id": ada, "props": {"gone": {"Str": "soon"}}}}
        assert ops[4] == {"SetNodeProps": {"id": ada, "props": {"gone": None, "role": {"Str": "x"}}}}
        assert ops[5] == {"SetNodeProps": {"id": ada, "props": {}}}
        assert ops[6] == {"CloseEdge": {"id": edge, "valid_to": 1_700_000_001_000}}
        # f32 values, widened: the vector as the engine stored it.
        assert ops[7] == {
            "SetEmbedding": {"id": ada, "model": "m", "vector": [0.30000001192092896, 0.8999999761581421]}
        }
        assert ops[8] == {"SetEmbedding": {"id": memory, "model": "m", "vector": [1.0, 0.0]}}
        text = topo.reply("get_changes", {"since_seq": 9, "limit": 1})["result"]["content"][0]["text"]
        assert '"vector":[1.0,0.0]' in text
        # Times left to "now" are resolved before logging: the log holds numbers.
        created_late = ops[9]["CreateEdge"]
        assert created_late["id"] == late and created_late["scope"] == "Shared"
        assert isinstance(created_late["valid_from"], int)
        assert ops[10]["CloseEdge"]["id"] == late and isinstance(ops[10]["CloseEdge"]["valid_to"], int)
        assert ops[10]["CloseEdge"]["valid_to"] >= created_late["valid_from"]
        assert ops[11] == {"RemoveNode": {"id": memory}}

        assert topo.ok("get_changes", {"since_seq": 12})["ops"] == everything[11:]
        assert topo.ok("get_changes", {"since_seq": 13}) == {"ops": []}
        assert topo.ok("get_changes", {"since_seq": 2**64 - 1}) == {"ops": []}
        assert topo.ok("db_info")["current_seq"] == everything[-1]["seq"]

        # mnemodb's `limit` pages through the log.
        pages, since = [], 0
        while True:
            page = topo.ok("get_changes", {"since_seq": since, "limit": 5})["ops"]
            if not page:
                break
            assert len(page) <= 5
            pages.append(page)
            since = page[-1]["seq"] + 1
        assert [len(p) for p in pages] == [5, 5, 2]
        assert [entry for page in pages for entry in page] == everything
        assert topo.ok("get_changes", {"since_seq": 4, "limit": 2})["ops"] == everything[3:5]
        assert topo.error("get_changes", {"since_seq": 1, "limit": 0})


def test_seq_of_each_write_is_its_place_in_the_log(tmp_path: Path) -> None:
    with Topo.in_process(tmp_path / "agent.db", "--allow-unscoped-changes") as topo:
        node = topo.entity("seq probe")
        seqs = [
            topo.ok("set_node_props", {"id": node, "props": {"a": 1}})["seq"],
            topo.ok("set_embedding", {"id": node, "model": "m", "vector": [1]})["seq"],
        ]
        edge = topo.link(node, node, "t")
        seqs.append(topo.ok("close_edge", {"id": edge})["seq"])
        ids = topo.ok(
            "submit_batch", {"commands": [{"op": "create_entity", "name": "b1"}, {"op": "create_entity", "name": "b2"}]}
        )
        seqs.append(topo.ok("remove_node", {"id": node})["seq"])
        assert seqs == [2, 3, 5, 8]
        ops = topo.ok("get_changes", {"since_seq": 6})["ops"]
        assert [(o["seq"], o["op"]["CreateNode"]["id"]) for o in ops[:2]] == [(6, ids["ids"][0]), (7, ids["ids"][1])]


def test_limit_accepts_every_uint64(tmp_path: Path) -> None:
    with Topo.in_process(tmp_path / "agent.db", "--allow-unscoped-changes") as topo:
        topo.entity("big limit")
        assert len(topo.ok("get_changes", {"since_seq": 0, "limit": 2**63 - 1})["ops"]) == 1
        assert len(topo.ok("get_changes", {"since_seq": 0, "limit": 2**64 - 1})["ops"]) == 1
