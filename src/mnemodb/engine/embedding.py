"""Vectors derived from what memories and entities say, kept current in the background.

Nothing is queued in memory: what still needs a vector is read from the store (items with
no vector under the embedder's model, or one older than their last change), so a restart,
a crash or a second process loses nothing; the work is simply found again. A vector is
written only if the item has not changed since its text was read, and it carries the
count of changes the item had then, so an edit made while it was computed makes it stale
at once.

Derived vectors do not enter the change log: they follow from text that does, and any
replica or export can derive them again (`mnemodb reindex`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mnemodb.model.records import ENTITY, MEMORY, Entity, Memory
from mnemodb.search.embedders import Embedder, EmbedderUnavailable, EmbeddingFailed

if TYPE_CHECKING:
    import numpy as np

    from mnemodb.engine.engine import Engine

__all__ = ["EMBEDDED_LABELS", "BackgroundEmbedder", "Embeddings", "item_text"]

log = logging.getLogger(__name__)

EMBEDDED_LABELS = (MEMORY, ENTITY)
# After a query fails to embed, queries go by words alone for this long.
QUERY_PAUSE_S = 15.0
# An entity's text is its name, type and first observations; a model reads 256 tokens at most.
_ENTITY_TEXT_CHARS = 2000


def item_text(item: Memory | Entity) -> str:
    """The text a memory or entity is embedded as. A memory's context (the turns before it)
    is left out: the word index has it, and in the vector it blurs what the turn itself says
    (LoCoMo dev, fused: NDCG@10 58.7 without, 56.6 with)."""
    if isinstance(item, Memory):
        return item.content if not item.summary else f"{item.content}\n{item.summary}"
    head = f"{item.name} ({item.entity_type})" if item.entity_type else item.name
    if not item.observations:
        return head
    return f"{head}: {'; '.join(item.observations)}"[:_ENTITY_TEXT_CHARS]


class Embeddings:
    """The engine's embedder, and the work of keeping its vectors current."""

    def __init__(self, engine: Engine, embedder: Embedder | None) -> None:
        self._engine = engine
        self.embedder = embedder
        self.unavailable: str | None = None
        """Why the embedder cannot run here, once that is known (search then uses words only)."""
        self._queries_paused_until = 0.0
        self._wanted = threading.Event()
        self.on_wanted: Callable[[], None] | None = None
        """Told when a search would have used the embedder but it is not loaded yet (the
        background thread then loads it)."""

    @property
    def model(self) -> str | None:
        return None if self.embedder is None or self.unavailable else self.embedder.model

    def ready(self) -> bool:
        """True when a query can be embedded now, without loading a model first."""
        if self.embedder is None or self.unavailable:
            return False
        loaded = getattr(self.embedder, "loaded", None)
        return True if loaded is None else bool(loaded)

    def needs_loading(self) -> bool:
        """True for an embedder that must load (a local model) before it can embed."""
        embedder = self.embedder
        return embedder is not None and not self.unavailable and hasattr(embedder, "load") and not self.ready()

    def want(self) -> None:
        """A search would have embedded its query: have the model loaded for the next ones."""
        if not self._wanted.is_set():
            self._wanted.set()
            if self.on_wanted is not None:
                self.on_wanted()

    @property
    def wanted(self) -> bool:
        return self._wanted.is_set()

    def pending(self) -> bool:
        """True when some item needs a vector from the embedder."""
        if self.embedder is None:
            return False
        with self._engine.store.read() as tx:
            return bool(tx.unembedded(self.embedder.model, EMBEDDED_LABELS, 1))

    def query_vector(self, text: str) -> np.ndarray[Any, Any] | None:
        """`text` as a vector, or None when the embedder is not ready or failed (words only).

        A failure makes queries skip the embedder for `QUERY_PAUSE_S`: an endpoint that is
        down or hanging then costs one query a timeout, not every query."""
        if not self.ready() or not text.strip() or time.monotonic() < self._queries_paused_until:
            return None
        assert self.embedder is not None
        import numpy as np  # here, not at the top: a server with no embedder never loads numpy

        try:
            embed_query = getattr(self.embedder, "embed_query", None)
            vector = np.asarray(embed_query(text) if embed_query else self.embedder.embed([text])[0], np.float32)
            if vector.ndim != 1 or not vector.size or not np.isfinite(vector).all():
                raise EmbeddingFailed(f"the query's vector has shape {vector.shape} or values that are not finite")
        except Exception as exc:  # whatever an optional embedder does, search goes on by words
            self._queries_paused_until = time.monotonic() + QUERY_PAUSE_S
            log.warning("searching by words only for %.0f s: the query could not be embedded: %s", QUERY_PAUSE_S, exc)
            return None
        return vector

    def coverage(self) -> tuple[int, int]:
        """(items with a current vector, items)."""
        model = self.embedder.model if self.embedder is not None else ""
        with self._engine.store.read() as tx:
            return tx.embedding_coverage(model, EMBEDDED_LABELS)

    def embed_pending(self, limit: int = 64, *, after: int = 0) -> tuple[int, int]:
        """Embed up to `limit` items past pk `after` that need a vector: (the number written,
        the last pk looked at, 0 when there was none).

        Raises EmbedderUnavailable (it cannot run here) or EmbeddingFailed (try later)."""
        if self.embedder is None:
            return 0, 0
        model = self.embedder.model
        engine = self._engine
        with engine.store.read() as tx:
            pks = tx.unembedded(model, EMBEDDED_LABELS, limit, after=after)
            items: dict[int, Memory | Entity] = {**tx.memories_by_pk(pks), **tx.entities_by_pk(pks)}
            versions = tx.node_versions(pks)
        work = [(pk, items[pk]) for pk in pks if pk in items]
        if not work:
            return 0, (pks[-1] if pks else 0)
        vectors = self.embedder.embed([item_text(item) for _, item in work])
        written = 0
        with engine.upkeep() as tx:
            dim = tx.embedding_dim(model)
            if dim is not None and dim != vectors.shape[1]:
                raise EmbedderUnavailable(
                    f"the embedder gives {vectors.shape[1]}-dimensional vectors but the store holds "
                    f"{dim}-dimensional ones under {model!r}: give this model another name"
                )
            now = tx.node_versions([pk for pk, _ in work])
            for (pk, item), vector in zip(work, vectors, strict=True):
                # Changed (or gone) since its text was read: the next round embeds the new text.
                if pk not in now or now[pk] != versions[pk]:
                    continue
                tx.set_embedding(
                    pk,
                    model,
                    vector.astype("<f4").tobytes(),
                    int(vectors.shape[1]),
                    item.updated_at,
                    node_version=versions[pk],
                )
                written += 1
        return written, pks[-1]

    def reindex(self, *, batch: int = 512, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed everything that needs it, in the calling thread; the number of vectors written.
        `progress(done, total)` is told after every batch."""
        done, total = self.coverage()
        if progress is not None:
            progress(done, total)
        written = after = 0
        while True:
            count, after = self.embed_pending(batch, after=after)
            if not after:
                return written
            written += count
            if progress is not None:
                progress(min(total, done + written), total)


class BackgroundEmbedder:
    """A daemon thread that embeds new and changed items while the server answers.

    It looks for work when woken, and otherwise whenever the change log has moved (checked
    every `poll` seconds, which also catches writes by other processes on the same file).
    A failing endpoint is retried with a growing pause; an embedder that cannot run here
    stops the thread, and search goes on with words."""

    def __init__(self, embeddings: Embeddings, *, batch: int = 256, poll: float = 0.5, max_pause: float = 60.0) -> None:
        self._embeddings = embeddings
        self._batch = batch
        self._poll = poll
        self._max_pause = max_pause
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._idle = threading.Event()
        self._thread = threading.Thread(target=self._run, name="mnemodb-embedder", daemon=True)
        self.embedded = 0
        self.last_error: str | None = None

    def start(self) -> BackgroundEmbedder:
        self._thread.start()
        return self

    def wake(self) -> None:
        self._wake.set()

    def stop(self, timeout: float = 0.5) -> bool:
        """Ask the thread to stop and wait up to `timeout` seconds: False when it is still
        busy then (loading a model, which cannot be interrupted, or embedding a batch). What
        it was doing is lost, not damaged: vectors are written in whole transactions, and
        the work is found again at the next start."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)
        return not self._thread.is_alive()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def wait_idle(self, timeout: float) -> bool:
        """Block until the thread has looked for work and found none left (for tests and
        tools). False at once when the thread is not running, else False on timeout."""
        if not self._thread.is_alive():
            return False
        self._idle.clear()
        self._wake.set()
        deadline = time.monotonic() + timeout
        while self._thread.is_alive():
            if self._idle.wait(min(0.1, max(0.0, deadline - time.monotonic()))):
                return True
            if time.monotonic() >= deadline:
                return False
        return False

    def _run(self) -> None:
        embeddings = self._embeddings
        engine = embeddings._engine
        seen = -1
        pause = self._poll
        embeddings.on_wanted = self.wake
        while not self._stop.is_set():
            try:
                with engine.store.read() as tx:
                    seq = tx.current_seq()
                if embeddings.needs_loading():
                    # A model takes seconds of CPU and hundreds of MB to load: only once
                    # something needs a vector, or a search would have used one.
                    if not embeddings.wanted and not ((seq != seen or self._wake.is_set()) and embeddings.pending()):
                        seen = seq
                        self._wake.clear()
                        self._idle.set()
                        self._sleep(self._poll)
                        continue
                    embedder = embeddings.embedder
                    load = getattr(embedder, "load", None)  # only embedders with a model to load have one
                    if embedder is not None and load is not None:
                        log.info("loading the embedding model %s", embedder.model)
                        load()
                    if self._stop.is_set():
                        return
                    seen = -1
                if seq != seen or self._wake.is_set():
                    self._wake.clear()
                    after = -1
                    while after and not self._stop.is_set():
                        count, after = embeddings.embed_pending(self._batch, after=max(after, 0))
                        self.embedded += count
                    seen = seq
                    with engine.store.read() as tx:
                        if tx.current_seq() != seq:
                            # Written to during the round (perhaps behind the cursor): look again
                            # now, and do not report idle with work left.
                            continue
                self.last_error = None
                pause = self._poll
                self._idle.set()
            except EmbedderUnavailable as exc:
                embeddings.unavailable = str(exc)
                log.warning("embedding is off, search uses words only: %s", exc)
                self._idle.set()
                return
            except EmbeddingFailed as exc:
                self.last_error = str(exc)
                pause = min(self._max_pause, max(pause * 2, 1.0))
                log.warning("embedding paused for %.0f s: %s", pause, exc)
            except Exception as exc:  # a store error must not kill the thread silently
                if self._stop.is_set():
                    return  # the store closed under a round that was ending anyway
                self.last_error = repr(exc)
                pause = min(self._max_pause, max(pause * 2, 1.0))
                log.exception("embedding paused for %.0f s", pause)
            self._sleep(pause)

    def _sleep(self, seconds: float) -> None:
        """Wait for a wake-up or `seconds`, but not at all once asked to stop: the round may
        have cleared the wake-up `stop` set, and would then sleep a whole poll."""
        if not self._stop.is_set():
            self._wake.wait(seconds)
