"""The server-memory JSONL format: reading, importing through the graph API, writing back.

Real files and a real SQLite database throughout. The upstream-shaped file below is what
the official server writes (compact lines, upstream key order, "\\n" between lines and
none after the last), plus extra fields as better-memory keeps them.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity, NewRelation
from mnemodb.interop.server_memory import (
    CHUNK_LINES,
    EntityLine,
    LineError,
    OtherLine,
    RelationLine,
    export_server_memory,
    import_server_memory,
    js_number,
    malformed_lines,
    read_text,
    server_memory_lines,
)
from support import SCOPE_A

SCOPE_B = "01HV7N8Q3Y2J6W5X4Z9A0B1C2E"

UPSTREAM_LINES = [
    '{"type":"entity","name":"John_Smith","entityType":"person","observations":["Speaks fluent Spanish",'
    '"Graduated in 2019"]}',
    '{"type":"entity","name":"Anthropic","entityType":"organization","observations":[],'
    '"createdAt":"2025-01-15T10:00:00.000Z","tags":["ai","lab"],"meta":{"zeta":1,"alpha":[true,null,1.5]}}',
    '{"type":"entity","name":"Zoë \u2013 東京","entityType":"ville","observations":["naïve café ☕","emoji 🧠",'
    '"quote \\" backslash \\\\ tab \\t control \\u0001 newline \\n","raw line separator \u2028 kept"]}',
    '{"type":"entity","name":"Numbers","entityType":"test","observations":["[2025-11-26] dated"],'
    '"small":0.00001,"tiny":1e-7,"big":1e+21,"wide":123456789012345680000,"neg":-2.5,"int":42}',
    '{"type":"relation","from":"John_Smith","to":"Anthropic","relationType":"works_at","since":2024,"confidence":0.75}',
    '{"type":"relation","from":"Zoë \u2013 東京","to":"John_Smith","relationType":"hosts"}',
    '{"type":"relation","from":"Anthropic","to":"Numbers","relationType":"counts"}',
]
UPSTREAM = "\n".join(UPSTREAM_LINES)


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def exported(engine: Engine, scopes: list[str] | None = None) -> str:
    out = io.StringIO()
    export_server_memory(engine, out, scopes=scopes)
    return out.getvalue()


def names(engine: Engine) -> list[str]:
    return [e.name for e in engine.graph.read().entities]


# -- round trip ----------------------------------------------------------------------------------------------


def test_an_upstream_file_round_trips_byte_for_byte(tmp_path: Path, engine: Engine) -> None:
    source = write(tmp_path / "memory.jsonl", UPSTREAM)
    result = import_server_memory(engine, source)
    assert (result.entities_created, result.relations_created, result.skipped) == (4, 3, ())
    target = tmp_path / "back.jsonl"
    with open(target, "w", encoding="utf-8", newline="") as out:
        counts = export_server_memory(engine, out)
    assert (counts.entities, counts.relations) == (4, 3)
    assert target.read_bytes() == source.read_bytes()
    assert not target.read_bytes().endswith(b"\n")


def test_extra_fields_are_kept_in_their_order(tmp_path: Path, engine: Engine) -> None:
    import_server_memory(engine, write(tmp_path / "memory.jsonl", UPSTREAM))
    graph = engine.graph.read()
    anthropic = next(e for e in graph.entities if e.name == "Anthropic")
    assert list(anthropic.extra) == ["createdAt", "tags", "meta"]
    assert list(anthropic.extra["meta"]) == ["zeta", "alpha"]
    assert anthropic.extra["meta"]["alpha"] == [True, None, 1.5]
    works_at = next(r for r in graph.relations if r.type == "works_at")
    assert dict(works_at.extra) == {"since": 2024, "confidence": 0.75}
    assert list(works_at.extra) == ["since", "confidence"]


def test_extras_written_before_the_known_fields_come_back_after_them(tmp_path: Path, engine: Engine) -> None:
    line = '{"b":2,"type":"entity","a":1,"observations":["x"],"entityType":"t","name":"N"}'
    import_server_memory(engine, write(tmp_path / "m.jsonl", line))
    assert exported(engine) == '{"type":"entity","name":"N","entityType":"t","observations":["x"],"b":2,"a":1}'


def test_unicode_is_stored_as_text_not_escapes(tmp_path: Path, engine: Engine) -> None:
    import_server_memory(engine, write(tmp_path / "memory.jsonl", UPSTREAM))
    zoe = engine.graph.open(["Zoë \u2013 東京"]).entities[0]
    assert zoe.observations[:2] == ("naïve café ☕", "emoji 🧠")
    assert zoe.observations[2] == 'quote " backslash \\ tab \t control \x01 newline \n'
    assert engine.graph.search("東京").entities[0].name == "Zoë \u2013 東京"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (-0.0, "0"),
        (1.5, "1.5"),
        (-2.5, "-2.5"),
        (0.1, "0.1"),
        (100.0, "100"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e300, "1.5e+300"),
        (0.000001, "0.000001"),
        (0.0000012, "0.0000012"),
        (1e-7, "1e-7"),
        (1.23e-18, "1.23e-18"),
        (5e-324, "5e-324"),
        (123456789.123, "123456789.123"),
        (1.2345678901234568e20, "123456789012345680000"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
        (float("inf"), "null"),
    ],
)
def test_numbers_are_written_as_javascript_writes_them(value: float, text: str) -> None:
    assert js_number(value) == text


# -- reading ------------------------------------------------------------------------------------------------


def test_reader_returns_entities_relations_and_other_types_with_line_numbers() -> None:
    text = (
        '{"type":"entity","name":"A","entityType":"t","observations":["o"]}\r\n'
        "\r\n"
        '   \n{"type":"relation","from":"A","to":"B","relationType":"r","w":1}\r\n'
        '{"type":"note","text":"not ours"}'
    )
    parsed = list(read_text(text))
    assert parsed == [
        EntityLine(1, NewEntity("A", "t", ("o",), {})),
        RelationLine(4, NewRelation("A", "B", "r", {"w": 1})),
        OtherLine(5, "note"),
    ]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "not JSON (Expecting property name enclosed in double quotes at column 2)"),
        ('["an", "array"]', "not a JSON object but an array"),
        ("42", "not a JSON object but a number"),
        ('{"name":"A"}', 'no "type" field'),
        ('{"type":7}', '"type" must be a string, not a number'),
        ('{"type":"entity","entityType":"t","observations":[]}', 'entity has no "name"'),
        (
            '{"type":"entity","name":null,"entityType":"t","observations":[]}',
            'entity "name" must be a string, not null',
        ),
        ('{"type":"entity","name":"","entityType":"t","observations":[]}', 'entity "name" is empty'),
        ('{"type":"entity","name":"A","observations":[]}', 'entity has no "entityType"'),
        ('{"type":"entity","name":"A","entityType":"t"}', 'entity has no "observations"'),
        (
            '{"type":"entity","name":"A","entityType":"t","observations":"one"}',
            'entity "observations" must be an array of strings',
        ),
        (
            '{"type":"entity","name":"A","entityType":"t","observations":["ok",3]}',
            'entity "observations" must be an array of strings',
        ),
        ('{"type":"relation","from":"A","relationType":"r"}', 'relation has no "to"'),
        (
            '{"type":"relation","from":"A","to":["B"],"relationType":"r"}',
            'relation "to" must be a string, not an array',
        ),
        ('{"type":"relation","from":"A","to":"B","relationType":""}', 'relation "relationType" is empty'),
        (
            '{"type":"entity","name":"\\ud800","entityType":"t","observations":[]}',
            "entity holds text that is not valid Unicode (a lone surrogate)",
        ),
        (
            '{"type":"entity","name":"A","entityType":"t","observations":[],"x":NaN}',
            "not JSON (NaN is not a JSON value)",
        ),
        (
            '{"type":"entity","name":"A","entityType":"t","observations":[],"x":1e999}',
            "not JSON (the number 1e999 is out of range)",
        ),
    ],
)
def test_malformed_lines_say_why(line: str, reason: str) -> None:
    text = '{"type":"entity","name":"First","entityType":"t","observations":[]}\n\n' + line
    assert list(read_text(text))[1:] == [LineError(3, reason)]


def test_a_line_that_is_not_utf8_is_malformed(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(b'{"type":"entity","name":"A","entityType":"t","observations":[]}\n{"name":"caf\xe9"}')
    assert malformed_lines(path) == (LineError(2, "not UTF-8 text"),)


def test_a_byte_order_mark_on_the_first_line_is_tolerated(tmp_path: Path, engine: Engine) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"type":"entity","name":"A","entityType":"t","observations":[]}')
    result = import_server_memory(engine, path)
    assert (result.entities_created, result.skipped) == (1, ())


def test_crlf_files_import_and_export_with_lf(tmp_path: Path, engine: Engine) -> None:
    result = import_server_memory(engine, write(tmp_path / "crlf.jsonl", UPSTREAM.replace("\n", "\r\n") + "\r\n"))
    assert (result.entities_created, result.relations_created, result.skipped) == (4, 3, ())
    assert exported(engine) == UPSTREAM


# -- malformed lines: skip or abort --------------------------------------------------------------------------

MIXED = "\n".join(
    [
        '{"type":"entity","name":"A","entityType":"t","observations":["a1"]}',
        "{oops",
        '{"type":"entity","name":"B","entityType":"t","observations":["b1"]}',
        '{"type":"relation","from":"A","to":"B","relationType":"knows"}',
        '{"type":"entity","name":"C","entityType":"t","observations":"nope"}',
        '{"type":"metadata","version":2}',
    ]
)


def test_skip_imports_the_good_lines_and_lists_the_bad_ones(tmp_path: Path, engine: Engine) -> None:
    result = import_server_memory(engine, write(tmp_path / "mixed.jsonl", MIXED), on_error="skip")
    assert [e.line for e in result.skipped] == [2, 5]
    assert "not JSON" in result.skipped[0].reason
    assert "observations" in result.skipped[1].reason
    assert (result.entities_created, result.relations_created, result.ignored, result.lines) == (2, 1, 1, 6)
    assert not result.aborted
    assert names(engine) == ["A", "B"]


def test_abort_writes_nothing_and_lists_every_bad_line(tmp_path: Path, engine: Engine) -> None:
    result = import_server_memory(engine, write(tmp_path / "mixed.jsonl", MIXED), on_error="abort")
    assert result.aborted
    assert [e.line for e in result.skipped] == [2, 5]
    assert (result.entities_created, result.relations_created) == (0, 0)
    assert engine.current_seq() == 0
    assert engine.graph.read().entities == ()


def test_abort_imports_a_clean_file(tmp_path: Path, engine: Engine) -> None:
    result = import_server_memory(engine, write(tmp_path / "memory.jsonl", UPSTREAM), on_error="abort")
    assert not result.aborted
    assert exported(engine) == UPSTREAM


# -- duplicates and dangling relations ----------------------------------------------------------------------


def test_a_repeated_name_is_merged_into_the_first_entity(tmp_path: Path, engine: Engine) -> None:
    text = "\n".join(
        [
            '{"type":"entity","name":"A","entityType":"person","observations":["one","two"],"x":1}',
            '{"type":"entity","name":"B","entityType":"t","observations":[]}',
            '{"type":"entity","name":"A","entityType":"robot","observations":["two","three"],"y":2}',
        ]
    )
    result = import_server_memory(engine, write(tmp_path / "dup.jsonl", text))
    assert (result.entities_created, result.entities_merged) == (2, 1)
    [a] = engine.graph.open(["A"]).entities
    assert (a.entity_type, a.observations, dict(a.extra)) == ("person", ("one", "two", "three"), {"x": 1})
    assert names(engine) == ["A", "B"]


def test_a_repeated_name_merges_across_chunks(tmp_path: Path, engine: Engine) -> None:
    lines = ['{"type":"entity","name":"First","entityType":"t","observations":["early"]}']
    lines += [
        json.dumps({"type": "entity", "name": f"E{i}", "entityType": "t", "observations": []})
        for i in range(CHUNK_LINES + 10)
    ]
    lines.append('{"type":"entity","name":"First","entityType":"other","observations":["early","late"]}')
    result = import_server_memory(engine, write(tmp_path / "many.jsonl", "\n".join(lines)))
    assert (result.entities_created, result.entities_merged, result.observations_added) == (CHUNK_LINES + 11, 1, 1)
    assert (result.entities_updated, result.entities_unchanged) == (0, 0)
    [first] = engine.graph.open(["First"]).entities
    assert (first.entity_type, first.observations) == ("t", ("early", "late"))


def test_relations_without_both_ends_are_reported_and_skipped(tmp_path: Path, engine: Engine) -> None:
    engine.graph.create_entities([NewEntity("Stored", "t")])
    text = "\n".join(
        [
            '{"type":"entity","name":"A","entityType":"t","observations":[]}',
            '{"type":"relation","from":"A","to":"Ghost","relationType":"haunts"}',
            '{"type":"relation","from":"A","to":"Stored","relationType":"uses"}',
            '{"type":"relation","from":"Nobody","to":"Ghost","relationType":"x"}',
        ]
    )
    result = import_server_memory(engine, write(tmp_path / "dangling.jsonl", text))
    assert result.skipped == (
        LineError(2, 'relation from "A" to "Ghost": no entity named "Ghost"'),
        LineError(4, 'relation from "Nobody" to "Ghost": no entity named "Nobody" or "Ghost"'),
    )
    assert result.relations_created == 1
    assert [(r.from_name, r.to_name, r.type) for r in engine.graph.read().relations] == [("A", "Stored", "uses")]


def test_a_relation_may_come_before_its_entities(tmp_path: Path, engine: Engine) -> None:
    text = "\n".join(
        [
            '{"type":"relation","from":"A","to":"B","relationType":"knows"}',
            '{"type":"entity","name":"A","entityType":"t","observations":[]}',
            '{"type":"entity","name":"B","entityType":"t","observations":[]}',
        ]
    )
    result = import_server_memory(engine, write(tmp_path / "order.jsonl", text))
    assert (result.relations_created, result.skipped) == (1, ())


def test_relations_repeated_in_the_file_are_created_once(tmp_path: Path, engine: Engine) -> None:
    line = '{"type":"relation","from":"A","to":"A","relationType":"self"}'
    text = '{"type":"entity","name":"A","entityType":"t","observations":[]}\n' + line + "\n" + line
    result = import_server_memory(engine, write(tmp_path / "rel.jsonl", text))
    assert (result.relations_created, result.relations_unchanged) == (1, 1)


def test_a_relation_between_two_private_scopes_is_skipped(tmp_path: Path, engine: Engine) -> None:
    engine.graph.create_entities([NewEntity("Theirs", "t")], scope=SCOPE_B)
    text = '{"type":"entity","name":"Mine","entityType":"t","observations":[]}\n'
    text += '{"type":"relation","from":"Mine","to":"Theirs","relationType":"r"}'
    result = import_server_memory(
        engine, write(tmp_path / "scopes.jsonl", text), scope=SCOPE_A, scopes=[SCOPE_A, SCOPE_B]
    )
    assert result.entities_created == 1
    assert result.skipped == (
        LineError(2, 'relation from "Mine" to "Theirs": the two entities live in different private scopes'),
    )
    assert engine.graph.read(scopes=[SCOPE_A]).entities[0].name == "Mine"


# -- idempotence ----------------------------------------------------------------------------------------------


def test_importing_twice_changes_nothing_the_second_time(tmp_path: Path, engine: Engine) -> None:
    source = write(tmp_path / "memory.jsonl", UPSTREAM)
    first = import_server_memory(engine, source)
    assert first.changed
    seq = engine.current_seq()
    second = import_server_memory(engine, source)
    assert not second.changed
    assert (second.entities_created, second.relations_created, second.observations_added) == (0, 0, 0)
    assert (second.entities_unchanged, second.relations_unchanged) == (4, 3)
    assert engine.current_seq() == seq
    assert exported(engine) == UPSTREAM


def test_existing_entities_get_the_observations_they_lack(tmp_path: Path, engine: Engine) -> None:
    engine.graph.create_entities([NewEntity("John_Smith", "person", ("Graduated in 2019", "Likes chess"))])
    result = import_server_memory(engine, write(tmp_path / "memory.jsonl", UPSTREAM))
    assert (result.entities_created, result.entities_updated, result.observations_added) == (3, 1, 1)
    [john] = engine.graph.open(["John_Smith"]).entities
    assert john.observations == ("Graduated in 2019", "Likes chess", "Speaks fluent Spanish")


def test_import_writes_to_the_engine_scope(tmp_path: Path, db_path: Path) -> None:
    with Engine.open(str(db_path), write_scope=SCOPE_A) as scoped:
        import_server_memory(scoped, write(tmp_path / "memory.jsonl", UPSTREAM))
        assert exported(scoped) == UPSTREAM
        assert exported(scoped, ["shared"]) == ""


# -- writing --------------------------------------------------------------------------------------------------


def test_export_is_the_graph_read_returns(engine: Engine) -> None:
    graph = engine.graph
    graph.create_entities([NewEntity("B", "t", ("b",)), NewEntity("A", "t", (), {"k": "v"})])
    graph.create_relations([NewRelation("A", "B", "r2"), NewRelation("B", "A", "r1", {"w": 2})])
    graph.create_entities([NewEntity("C", "t")])
    graph.create_relations([NewRelation("C", "A", "r3")])
    graph.delete_relations([NewRelation("A", "B", "r2")])
    read = graph.read()
    expected = [
        json.loads(line) for line in exported(engine).split("\n")
    ]  # every line parses, and says what read() says
    assert [(e["name"], e["observations"]) for e in expected if e["type"] == "entity"] == [
        (e.name, list(e.observations)) for e in read.entities
    ]
    assert [(r["from"], r["to"], r["relationType"]) for r in expected if r["type"] == "relation"] == [
        (r.from_name, r.to_name, r.type) for r in read.relations
    ]
    assert [kind for kind, _ in server_memory_lines(engine)] == ["entity"] * 3 + ["relation"] * 2


def test_an_empty_graph_exports_an_empty_file(engine: Engine) -> None:
    assert exported(engine) == ""


def test_large_files_import_in_chunks_with_progress(tmp_path: Path, engine: Engine) -> None:
    count = CHUNK_LINES * 2 + 7
    lines = [
        json.dumps(
            {"type": "entity", "name": f"E{i}", "entityType": "t", "observations": [f"o{i}"]}, separators=(",", ":")
        )
        for i in range(count)
    ]
    lines += [
        json.dumps(
            {"type": "relation", "from": f"E{i}", "to": f"E{i + 1}", "relationType": "next"}, separators=(",", ":")
        )
        for i in range(count - 1)
    ]
    source = write(tmp_path / "big.jsonl", "\n".join(lines))
    seen: list[int] = []
    result = import_server_memory(engine, source, progress=seen.append)
    assert (result.entities_created, result.relations_created) == (count, count - 1)
    assert sum(seen) == result.lines == len(lines)
    assert len(seen) > 4  # several chunks, not one
    assert exported(engine).encode() == source.read_bytes()
