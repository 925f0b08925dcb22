"""The access recorder: reads tallied in memory and written to the store's `node_access`
in batches, on a real database of the chosen store."""

from __future__ import annotations

import threading
from collections.abc import Mapping

import pytest

from mnemodb.engine import Engine
from mnemodb.engine.access import AccessRecorder

T0 = 1_700_000_000_000


class Batches:
    """Writes each batch to the engine's store and keeps a copy of what it wrote."""

    def __init__(self, eng: Engine) -> None:
        self._store = eng.store
        self.written: list[dict[int, tuple[int, int]]] = []
        self.arrived = threading.Event()

    def __call__(self, hits: Mapping[int, tuple[int, int]]) -> None:
        self._store.bump_access(hits)
        self.written.append(dict(hits))
        self.arrived.set()


def memories(eng: Engine, count: int) -> list[int]:
    return [eng.memories.store(f"access recorder memory {i}").memory.pk for i in range(count)]


def counts(eng: Engine, pks: list[int]) -> dict[int, int]:
    with eng.store.read() as tx:
        return tx.access_counts(pks)


def test_repeated_reads_of_a_node_are_one_row_with_their_sum_and_latest_time(eng: Engine) -> None:
    first, second = memories(eng, 2)
    batches = Batches(eng)
    recorder = AccessRecorder(batches, interval=3600)
    recorder.record([first, second], T0)
    recorder.record([first], T0 + 5)
    recorder.record([first, first], T0 + 9)
    recorder.flush()
    assert batches.written == [{first: (4, T0 + 9), second: (1, T0)}]
    assert counts(eng, [first, second]) == {first: 4, second: 1}
    with eng.store.read() as tx:
        assert tx.access_of(first).last_at == T0 + 9
    recorder.close()


def test_a_full_batch_is_written_without_waiting_for_the_interval(eng: Engine) -> None:
    pks = memories(eng, 3)
    batches = Batches(eng)
    recorder = AccessRecorder(batches, interval=3600, batch=3)
    try:
        recorder.record(pks[:2], T0)
        recorder.record(pks[2:], T0 + 1)
        # The interval is an hour: only a full batch can have woken the thread.
        assert batches.arrived.wait(30), "a full batch was not written"
        assert batches.written == [{pks[0]: (1, T0), pks[1]: (1, T0), pks[2]: (1, T0 + 1)}]
        assert counts(eng, pks) == dict.fromkeys(pks, 1)
    finally:
        recorder.close()


def test_past_capacity_new_nodes_are_dropped_and_waiting_ones_keep_counting(eng: Engine) -> None:
    held, also_held, dropped = memories(eng, 3)
    recorder = AccessRecorder(Batches(eng), interval=3600, batch=2, capacity=2)
    # Over capacity within one read: the batch's wake-up is only noticed once this
    # read has let go, so nothing is written in between.
    recorder.record([held, also_held, dropped, held], T0)
    recorder.close()
    assert counts(eng, [held, also_held, dropped]) == {held: 2, also_held: 1}


def test_close_writes_what_is_waiting_and_later_reads_are_written_by_flush(eng: Engine) -> None:
    (pk,) = memories(eng, 1)
    batches = Batches(eng)
    recorder = AccessRecorder(batches, interval=3600)
    recorder.record([pk], T0)
    recorder.close()
    assert counts(eng, [pk]) == {pk: 1}
    recorder.record([pk], T0 + 1)
    recorder.flush()
    assert counts(eng, [pk]) == {pk: 2}
    assert len(batches.written) == 2


def test_nothing_waiting_writes_nothing(eng: Engine) -> None:
    batches = Batches(eng)
    recorder = AccessRecorder(batches, interval=3600)
    recorder.record([], T0)
    recorder.flush()
    recorder.close()
    assert batches.written == []


@pytest.mark.parametrize(
    ("interval", "batch", "capacity"),
    [(0.0, 10, 10), (-1.0, 10, 10), (1.0, 0, 10), (1.0, 10, 5)],
)
def test_settings_that_cannot_work_are_refused(interval: float, batch: int, capacity: int) -> None:
    with pytest.raises(ValueError, match="interval must be positive"):
        AccessRecorder(lambda hits: None, interval=interval, batch=batch, capacity=capacity)


def test_reads_that_fit_and_reads_that_overflow_count_alike(eng: Engine) -> None:
    a, b, c, d = memories(eng, 4)
    batches = Batches(eng)
    recorder = AccessRecorder(batches, interval=3600, batch=3, capacity=3)
    recorder.close()  # no thread: what is waiting is written by flush alone
    recorder.record([a, b, a], T0)  # fits: 2 nodes waiting of 3
    recorder.record((pk for pk in [a, c, c]), T0 + 1)  # 2 + 3 may not fit: counted one by one
    recorder.record([d, b], T0 + 2)  # full: d dropped, b counted
    recorder.flush()
    assert batches.written == [{a: (3, T0 + 1), b: (2, T0 + 2), c: (2, T0 + 1)}]
