"""The word index over entities follows every change to them.

It is an external-content index over the substring index's text: it has no copy of the
text, so a row it is not told to forget with the old text stays behind as wrong matches,
which FTS5's own integrity check does not see on such an index. Hypothesis drives random
changes through every path that rewrites an entity's text (create, add and delete
observations, rename and retype, delete) and checks after each that a word search finds
exactly the entities whose current text holds the word, and that the database's own checks
(`Store.check`; on SQLite, FTS5's check of each index's structure) find nothing wrong.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.helpers import store_at
from mnemodb.engine import Engine
from mnemodb.engine.graph import NewEntity
from mnemodb.engine.items import Patch

WORDS = ("amber", "basalt", "cobalt", "dune", "ember", "fjord")
NAMES = ("Aster", "Birch", "Cedar", "Dahlia")

_name = st.sampled_from(NAMES)
_words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("create"), _name, st.lists(_words, max_size=3)),
        st.tuples(st.just("add"), _name, st.lists(_words, min_size=1, max_size=2)),
        st.tuples(st.just("remove"), _name, _words),
        st.tuples(st.just("retype"), _name, st.sampled_from(WORDS)),
        st.tuples(st.just("rename"), _name, _name),
        st.tuples(st.just("delete"), _name, st.none()),
    ),
    max_size=25,
)


def _texts(engine: Engine) -> dict[str, str]:
    """Each entity's whole text (name, type, observations), lower-cased, by name."""
    graph = engine.graph.read()
    return {e.name: " ".join((e.name, e.entity_type, *e.observations)).lower() for e in graph.entities}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=_steps)
def test_the_word_index_follows_every_change(
    tmp_path_factory: pytest.TempPathFactory, steps: list[tuple[str, str, object]]
) -> None:
    db = tmp_path_factory.mktemp("words") / "memory.db"
    with Engine(store_at(db)) as engine:
        for kind, name, value in steps:
            exists = name in _texts(engine)
            if kind == "create" and not exists:
                assert isinstance(value, list)
                engine.graph.create_entities([NewEntity(name, "thing", tuple(value))])
            elif kind == "add" and exists:
                assert isinstance(value, list)
                engine.graph.add_observations([(name, value)])
            elif kind == "remove" and exists:
                assert isinstance(value, str)
                engine.graph.delete_observations([(name, [value])])
            elif kind == "retype" and exists:
                assert isinstance(value, str)
                engine.items.revise(name, Patch(entity_type=value))
            elif kind == "rename" and exists and value not in _texts(engine):
                assert isinstance(value, str)
                engine.items.revise(name, Patch(name=value))
            elif kind == "delete" and exists:
                engine.graph.delete_entities([name])
            texts = _texts(engine)
            for word in (*WORDS, *(n.lower() for n in NAMES)):
                page = engine.items.search(word, kinds=("entity",), limit=50)
                found = {f.item.name for f in page.found}  # type: ignore[union-attr]
                assert found == {n for n, text in texts.items() if word in text.split()}, (word, steps)
            assert engine.store.check().problems == (), steps
