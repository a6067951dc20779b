"""read_ahead: a thread makes items ahead of the consumer, at most ``depth`` of them."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from svmcore.data.feeds.ahead import read_ahead


class _Counted:
    """An item that counts how many of its kind exist."""

    alive = 0
    most = 0
    lock = threading.Lock()

    def __init__(self, i: int):
        self.i = i
        with _Counted.lock:
            _Counted.alive += 1
            _Counted.most = max(_Counted.most, _Counted.alive)

    def __del__(self):
        with _Counted.lock:
            _Counted.alive -= 1


def _items(n: int):
    for i in range(n):
        yield _Counted(i)


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_no_more_than_depth_items_exist_ahead_of_the_consumers(depth):
    """A slow consumer: the thread never holds an item while it waits for room, nor one the
    consumer has let go, so at most ``depth`` items plus the consumer's own exist."""
    _Counted.alive = _Counted.most = 0
    got = []
    for item in read_ahead(_items(40), depth):
        got.append(item.i)
        time.sleep(0.002)  # the thread fills every place meanwhile
        item = None
    gc.collect()
    assert got == list(range(40))
    assert 1 < _Counted.most <= depth + 1  # it did read ahead, and no further
    assert _Counted.alive == 0


def test_an_error_in_the_thread_is_raised_in_the_consumer():
    def items():
        yield 1
        raise ValueError("bad line 7")

    it = read_ahead(items(), 2)
    assert next(it) == 1
    with pytest.raises(ValueError, match="bad line 7"):
        next(it)


def test_closing_early_stops_the_thread():
    started = threading.active_count()
    it = read_ahead(iter(range(10**6)), 3)
    assert next(it) == 0
    it.close()
    assert threading.active_count() == started
