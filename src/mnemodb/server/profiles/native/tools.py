"""The native tool table: each tool's name, title, description, parameters, annotations,
output schema and body."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from mnemodb.server.profile import Tool, ToolAnnotations, ToolParams, ToolRun
from mnemodb.server.profiles.native.handlers import NativeTools
from mnemodb.server.profiles.native.params import (
    CLOSE_RELATION,
    CURSOR,
    DELETE,
    IDEMPOTENT_WRITE,
    LIMIT,
    MAX_BATCH,
    MAX_CHARS,
    MAX_LIMIT,
    NEW_ENTITY,
    NEW_MEMORY,
    NEW_RELATION,
    PROPS,
    READ,
    REF,
    SCOPE,
    SCOPES,
    TEXT,
    UPDATE,
    VECTOR,
    WRITE,
    output_schema,
    strict_params,
)
from mnemodb.server.schema import Arr, Bool, Enum, Int, Map, Obj, OneOrMany, Scalar, Str, Time


def _tool(
    name: str,
    description: str,
    params: ToolParams,
    run: ToolRun,
    annotations: ToolAnnotations,
    output: Mapping[str, Any],
) -> Tool:
    """A native tool. It has no title: one would only repeat its name, capitalised, in
    every listing, and hosts show the name where a title is missing."""
    return Tool(
        name=name, description=description, params=params, run=run, annotations=annotations, output_schema=output
    )


def tools(handlers: NativeTools) -> tuple[Tool, ...]:
    # Every conversation pays for these words before its first call (tests/server/
    # test_native_listing.py bounds them): each description says what the tool does, when
    # it is the right one and which tool to use instead; a parameter is described only where
    # its name and type leave something out.
    return (
        _tool(
            "remember",
            "Store memories (one self-contained fact, preference, decision or event each) and entities (people, "
            "projects, services...) with observations; all or none unless all_or_nothing is false. The same text "
            "again merges tags; a known entity's name adds observations. `about` links memories to entities. When "
            "a fact changes, remember the new one with `supersedes` (the old one leaves recall, its history "
            "stays). Not for edits (use update) or relations (use relate).",
            strict_params(
                {
                    "memories": Arr(items=NEW_MEMORY, max_items=MAX_BATCH),
                    "entities": Arr(items=NEW_ENTITY, max_items=MAX_BATCH),
                    "all_or_nothing": Bool(),
                    "turns": Bool(description="Conversation turns, oldest first: each also found by the two before it"),
                    "scope": SCOPE,
                }
            ),
            handlers.remember,
            WRITE,
            output_schema("memories", "entities"),
        ),
        _tool(
            "recall",
            "Search memories and entities, best first; no query lists the newest. Use at the start of a task and "
            'before creating anything. Words match by stem; for entities also "phrases", +required, -excluded, '
            "name:/type:/obs:; with an embedder, meaning too. Returns previews: get reads one in full, explore "
            "walks its relations, next_cursor pages on.",
            strict_params(
                {
                    "query": Str(),
                    "kinds": Arr(items=Enum(values=("memory", "entity")), min_items=1),
                    "tags": Arr(items=TEXT, description="All of these"),
                    "types": Arr(items=TEXT, description="Any of these"),
                    "min_importance": Int(minimum=0, maximum=10),
                    "about": Arr(items=TEXT, description="Memories about these entities"),
                    "since": Time(),
                    "until": Time(description="Exclusive"),
                    "props": PROPS,
                    "include_superseded": Bool(),
                    "fuzzy": Bool(description="Tolerate typos"),
                    "pattern": Str(
                        min_length=1,
                        description="Observation regex or preset: dated, techdebt, deprecated, purpose, quirk",
                    ),
                    "vector": replace(VECTOR, description="Search by embedding"),
                    "within": Arr(items=REF, max_items=1000, description="Only these items"),
                    "expand": Int(minimum=0, maximum=3, description="Relations away to include"),
                    "full": Bool(description="Whole texts, not previews"),
                    "why": Bool(description="Explain each score"),
                    "limit": LIMIT,
                    "cursor": CURSOR,
                    "max_chars": MAX_CHARS,
                    "scopes": SCOPES,
                }
            ),
            handlers.recall,
            READ,
            output_schema("items", "next_cursor"),
        ),
        _tool(
            "get",
            "Read items in full by ref (memory id or hash, entity name or id, relation id), with their current "
            "relations (include_closed: ended ones too; as_of: as then). Use after recall or explore to read a "
            "preview in full; to find items by words, use recall.",
            strict_params(
                {
                    "refs": OneOrMany(items=REF, max_items=MAX_LIMIT),
                    "include_closed": Bool(),
                    "as_of": Time(),
                    "scopes": SCOPES,
                },
                "refs",
            ),
            handlers.get,
            READ,
            output_schema("items"),
        ),
        _tool(
            "update",
            "Change one memory or entity in place; its id and relations stay. Memories: content, summary, "
            "importance, tags; entities: name, observations; both: type, props (null removes one), embedding. For "
            "a fact that changed over time, prefer remember with supersedes (keeps history); to end a relation, "
            "use relate.",
            strict_params(
                {
                    "ref": REF,
                    "content": TEXT,
                    "summary": Str(),
                    "importance": Int(minimum=0, maximum=10),
                    "type": TEXT,
                    "tags": Arr(items=TEXT, description="Replaces all"),
                    "add_tags": Arr(items=TEXT),
                    "remove_tags": Arr(items=TEXT),
                    "name": TEXT,
                    "add_observations": Arr(items=TEXT),
                    "remove_observations": Arr(items=TEXT, description="Exact texts"),
                    "props": Map(values=Scalar(nullable=True)),
                    "embedding": VECTOR,
                    "scopes": SCOPES,
                },
                "ref",
            ),
            handlers.update,
            UPDATE,
            output_schema("item", "changed"),
        ),
        _tool(
            "forget",
            "Delete memories, entities (with their relations) or relations, by refs or (relations) by from, type "
            "and to. Permanent: the text leaves the change log too. To keep history, remember a replacement with "
            "supersedes or close the relation with relate; to drop one observation, use update.",
            strict_params(
                {
                    "refs": OneOrMany(items=REF, max_items=MAX_BATCH),
                    "relations": Arr(
                        items=Obj(fields={"from": REF, "type": TEXT, "to": REF}, required=("from", "type", "to")),
                        max_items=MAX_BATCH,
                    ),
                    "scopes": SCOPES,
                }
            ),
            handlers.forget,
            DELETE,
            output_schema("results"),
        ),
        _tool(
            "relate",
            "Add or close typed, directed relations (entities by name, memories by id or hash); valid_from and "
            "valid_to default to now. A closed relation leaves explore but stays in history and as_of. To change a "
            "type, close the old and add the new in one call. Delete a wrong relation with forget.",
            strict_params(
                {
                    "add": Arr(items=NEW_RELATION, max_items=MAX_BATCH),
                    "close": Arr(items=CLOSE_RELATION, max_items=MAX_BATCH),
                    "scope": SCOPE,
                }
            ),
            handlers.relate,
            IDEMPOTENT_WRITE,
            output_schema("added", "closed"),
        ),
        _tool(
            "explore",
            "Walk relations from items: neighbours, a neighbourhood (hops), or with `to` the shortest path; "
            "without `from`, all relations (of `types`), newest first. Only relations valid now (as_of: then; "
            "include_closed: ended ones too). Returns previews; get reads items in full.",
            strict_params(
                {
                    "from": OneOrMany(items=REF, max_items=20),
                    "to": REF,
                    "hops": Int(minimum=1, maximum=10, description="Default 1; with `to`, the longest path, 6"),
                    "direction": Enum(values=("out", "in", "both")),
                    "types": Arr(items=TEXT, description="Relation types"),
                    "as_of": Time(),
                    "include_closed": Bool(),
                    "include_superseded": Bool(),
                    "full": Bool(),
                    "limit": Int(minimum=1, maximum=200),
                    "cursor": CURSOR,
                    "max_chars": MAX_CHARS,
                    "scopes": SCOPES,
                },
            ),
            handlers.explore,
            READ,
            output_schema("items", "relations", "next_cursor"),
        ),
        _tool(
            "audit",
            "What changed, oldest first: the change log from `since` (a sequence number; poll with "
            "next_since), or one item's history (`ref`), in scopes you may read. For items' current state, "
            "use recall or get.",
            strict_params(
                {
                    "since": Int(minimum=0),
                    "ref": REF,
                    "limit": Int(minimum=1, maximum=500),
                    "max_chars": MAX_CHARS,
                    "scopes": SCOPES,
                }
            ),
            handlers.audit,
            READ,
            output_schema("changes", "next_since"),
        ),
        _tool(
            "survey",
            "Counts of memories, entities, observations, relations and embeddings; oldest and newest memory; top "
            "tags and types; the change log's position; database size. Cheap: get your bearings in an unfamiliar "
            "memory.",
            strict_params(
                {
                    "top": Int(minimum=1, maximum=100, description="Tags and types to list"),
                    "scopes": SCOPES,
                }
            ),
            handlers.survey,
            READ,
            output_schema("memories", "entities", "relations"),
        ),
    )
