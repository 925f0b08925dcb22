"""The native tool table: each tool's name, title, description, parameters, annotations,
output schema and body."""

from __future__ import annotations

from mnemodb.server.profile import Tool, tool
from mnemodb.server.profiles.native.handlers import NativeTools
from mnemodb.server.profiles.native.params import (
    ARRAY_OUTPUT,
    CLOSE_RELATION,
    CURSOR,
    DELETE,
    IDEMPOTENT_WRITE,
    INT_OUTPUT,
    LIMIT,
    MAX_BATCH,
    MAX_CHARS,
    MAX_LIMIT,
    NEW_ENTITY,
    NEW_MEMORY,
    NEW_RELATION,
    OBJECT_OUTPUT,
    PAGE_OUTPUT,
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
    text_field,
)
from mnemodb.server.schema import Arr, Bool, Enum, Int, Map, Obj, OneOrMany, Scalar, Str, Time


def tools(handlers: NativeTools) -> tuple[Tool, ...]:
    return (
        tool(
            "remember",
            "Remember",
            "Store new knowledge so later conversations can recall it: memories (facts, preferences, "
            "decisions, events; one self-contained fact each) and entities (named people, projects, "
            "services, modules) with observations. Several items in one call, all written or none (unless "
            "all_or_nothing is false: then each item's result says if it failed). "
            "Storing a memory's exact text again only merges its tags; naming an existing entity adds the "
            "new observations. Link memories to entities with `about`. To correct a fact, remember the new "
            "one with `supersedes` = the old memory's id (the old one stops being recalled, history stays). "
            "Not for editing in place (use update) or for relations between items (use relate).",
            strict_params(
                {
                    "memories": Arr(items=NEW_MEMORY, max_items=MAX_BATCH),
                    "entities": Arr(items=NEW_ENTITY, max_items=MAX_BATCH),
                    "all_or_nothing": Bool(description="Default true; false: each item succeeds or fails alone"),
                    "turns": Bool(
                        description="The memories are consecutive turns of a conversation, oldest first: "
                        "recall also finds each by the words of the two turns before it"
                    ),
                    "scope": SCOPE,
                }
            ),
            handlers.remember,
            WRITE,
            output_schema({"memories": ARRAY_OUTPUT, "entities": ARRAY_OUTPUT}),
        ),
        tool(
            "recall",
            "Recall",
            "Search memory: memories and entities matching `query`, most relevant first; without a query, "
            "the newest items (a listing). Use at the start of a task and before creating anything. "
            "Narrow with tags, types, min_importance, about (entity names), since/until, props. Words match "
            'by stem; for entities the query also takes "phrases", +required, -excluded and name:/type:/obs: '
            "fields; fuzzy tolerates typos; vector searches by embedding (with an embedder configured, the query "
            "also matches by meaning); why explains each score. Superseded memories are left out "
            "unless include_superseded. Returns previews: read one in full with get; walk its relations with "
            "explore; more results with next_cursor.",
            strict_params(
                {
                    "query": Str(description="Empty: list the newest items"),
                    "kinds": Arr(items=Enum(values=("memory", "entity")), min_items=1),
                    "tags": Arr(items=TEXT, description="All of these"),
                    "types": Arr(items=TEXT, description="Any of these"),
                    "min_importance": Int(minimum=0, maximum=10),
                    "about": Arr(items=TEXT, description="Memories linked to these entities"),
                    "since": Time(description="ISO 8601 or ms"),
                    "until": Time(description="ISO 8601 or ms, exclusive"),
                    "props": PROPS,
                    "include_superseded": Bool(),
                    "fuzzy": Bool(),
                    "pattern": Str(
                        min_length=1,
                        description="Entities with an observation matching this regex, or a preset: dated, "
                        "techdebt, deprecated, purpose, quirk",
                    ),
                    "vector": VECTOR,
                    "within": Arr(items=REF, max_items=1000, description="Only these items"),
                    "expand": Int(minimum=0, maximum=3, description="Relations away to include"),
                    "full": Bool(description="Whole texts, not previews"),
                    "why": Bool(description="Explain each score: every ranking's rank, weight and signals"),
                    "limit": LIMIT,
                    "cursor": CURSOR,
                    "max_chars": MAX_CHARS,
                    "scopes": SCOPES,
                }
            ),
            handlers.recall,
            READ,
            PAGE_OUTPUT,
        ),
        tool(
            "get",
            "Get",
            "Read items in full by reference: a memory's id or content hash, an entity's exact name or id, a "
            "relation's id. Returns the whole text, every observation, tags, properties, access counts and "
            "the item's current relations (past ones too with include_closed; as_of: as it all was then). "
            "Use after recall or explore to read a preview in full; to find items by words, use recall.",
            strict_params(
                {
                    "refs": OneOrMany(items=REF, max_items=MAX_LIMIT),
                    "include_closed": Bool(),
                    "as_of": Time(description="As it was then (ISO 8601 or ms)"),
                    "scopes": SCOPES,
                },
                "refs",
            ),
            handlers.get,
            READ,
            output_schema({"items": ARRAY_OUTPUT}),
        ),
        tool(
            "update",
            "Update",
            "Change one memory or entity in place; its id and relations stay. A memory: content, summary, "
            "importance, type, tags (replace all) or add_tags/remove_tags. An entity: name (rename), type, "
            "add_observations/remove_observations (exact text). Both: props (null removes one) and embedding. "
            "To record that a fact changed over time, prefer remember with supersedes, which keeps the old "
            "fact as history; to end a relation, use relate.",
            strict_params(
                {
                    "ref": REF,
                    "content": text_field(),
                    "summary": Str(),
                    "importance": Int(minimum=0, maximum=10),
                    "type": text_field(),
                    "tags": Arr(items=TEXT, description="Replace all"),
                    "add_tags": Arr(items=TEXT),
                    "remove_tags": Arr(items=TEXT),
                    "name": text_field("Rename an entity"),
                    "add_observations": Arr(items=TEXT),
                    "remove_observations": Arr(items=TEXT, description="Exact texts"),
                    "props": Map(values=Scalar(nullable=True), description="null removes one"),
                    "embedding": VECTOR,
                    "scopes": SCOPES,
                },
                "ref",
            ),
            handlers.update,
            UPDATE,
            output_schema({"item": OBJECT_OUTPUT, "changed": ARRAY_OUTPUT}),
        ),
        tool(
            "forget",
            "Forget",
            "Delete memories, entities (with all their relations) or relations, by reference (relations "
            "also by from, type and to). Permanent: a forgotten item's text leaves the change log too. "
            "To mark a fact as no longer true but keep its history, remember its replacement with "
            "supersedes, or close the relation with relate; to drop one observation, use update.",
            strict_params(
                {
                    "refs": OneOrMany(items=REF, max_items=MAX_BATCH),
                    "relations": Arr(
                        items=Obj(fields={"from": REF, "type": TEXT, "to": REF}, required=("from", "type", "to")),
                        max_items=MAX_BATCH,
                        description="Open relations to delete, named by their ends",
                    ),
                    "scopes": SCOPES,
                }
            ),
            handlers.forget,
            DELETE,
            output_schema({"results": ARRAY_OUTPUT}),
        ),
        tool(
            "relate",
            "Relate",
            "Add or close typed, directed relations between items (entities by name, memories by id or "
            "hash), all in one call. A relation holds from valid_from (default now); closing it sets "
            "valid_to, so it stops showing in explore but stays in history (explore as_of still sees it). "
            "Adding a relation that is already open returns it unchanged. To change a relation's type, close "
            "the old one and add the new one in the same call. Delete a wrong relation with forget.",
            strict_params(
                {
                    "add": Arr(items=NEW_RELATION, max_items=MAX_BATCH),
                    "close": Arr(items=CLOSE_RELATION, max_items=MAX_BATCH),
                    "scope": SCOPE,
                }
            ),
            handlers.relate,
            IDEMPOTENT_WRITE,
            output_schema({"added": ARRAY_OUTPUT, "closed": ARRAY_OUTPUT}),
        ),
        tool(
            "explore",
            "Explore",
            "Walk the graph from items: their neighbours (hops 1), a neighbourhood (more hops), or with "
            "`to`, the shortest chain of relations between two items; without `from`, every relation (of "
            "`types`, if given), newest first. Follows relations valid now (as_of: valid then; "
            "include_closed: ended ones too) and leaves out superseded memories (include_superseded). "
            "Filter by relation types and direction. Returns previews; use get for full items.",
            strict_params(
                {
                    "from": OneOrMany(items=REF, max_items=20),
                    "to": REF,
                    "hops": Int(
                        minimum=1, maximum=10, description="Default 1; with `to`, the longest path (default 6)"
                    ),
                    "direction": Enum(values=("out", "in", "both")),
                    "types": Arr(items=TEXT, description="Relation types"),
                    "as_of": Time(description="ISO 8601 or ms"),
                    "include_closed": Bool(),
                    "include_superseded": Bool(),
                    "full": Bool(),
                    "limit": Int(minimum=1, maximum=200, description="Default 50"),
                    "cursor": CURSOR,
                    "max_chars": MAX_CHARS,
                    "scopes": SCOPES,
                },
            ),
            handlers.explore,
            READ,
            output_schema(
                {
                    "items": ARRAY_OUTPUT,
                    "relations": ARRAY_OUTPUT,
                    "next_cursor": {"type": ["string", "null"]},
                    "path_found": {"type": "boolean"},
                },
                "items",
                "relations",
                "next_cursor",
            ),
        ),
        tool(
            "audit",
            "Audit",
            "Audit what changed, oldest first: the change log from `since` (a sequence number; poll with "
            "the previous call's next_since), or one item's whole history (`ref`). Only changes in scopes "
            "you may read. For the current state of items, use recall or get.",
            strict_params(
                {
                    "since": Int(minimum=0, description="Default 1"),
                    "ref": REF,
                    "limit": Int(minimum=1, maximum=500, description="Default 20"),
                    "max_chars": MAX_CHARS,
                    "scopes": SCOPES,
                }
            ),
            handlers.audit,
            READ,
            output_schema(
                {"changes": ARRAY_OUTPUT, "next_since": {"type": ["integer", "null"]}, "current_seq": INT_OUTPUT},
                "changes",
                "next_since",
            ),
        ),
        tool(
            "survey",
            "Survey",
            "Survey the memory you can read: counts of memories, entities, observations, relations and "
            "embeddings, the oldest and newest memory, the most used tags and types, the change log's "
            "position and the database size. Cheap; use it to get your bearings in an unfamiliar memory.",
            strict_params(
                {
                    "top": Int(minimum=1, maximum=100, description="Default 10"),
                    "scopes": SCOPES,
                }
            ),
            handlers.survey,
            READ,
            output_schema({"memories": INT_OUTPUT, "entities": INT_OUTPUT, "relations": INT_OUTPUT}),
        ),
    )
