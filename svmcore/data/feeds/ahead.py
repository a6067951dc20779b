"""``read_ahead``: items made by a thread ahead of their consumer (the parsers and the spill's
window reads release the GIL, so reading overlaps training)."""

from __future__ import annotations

import queue
import threading
from typing import Iterator


def read_ahead(items: Iterator, depth: int = 3) -> Iterator:
    """``items`` produced by a thread. At most ``depth`` items exist ahead of the consumer's:
    the thread waits for a free place before it makes the next item, and drops its reference
    once the item is handed over, so no item is held while blocked on a full queue or after
    the consumer has let it go. An exception in the thread is raised here; closing the
    generator stops the thread."""
    q: queue.SimpleQueue = queue.SimpleQueue()
    room = threading.Semaphore(depth)
    stop = threading.Event()
    done = object()

    def work():
        try:
            it = iter(items)
            while True:
                while not room.acquire(timeout=0.1):
                    if stop.is_set():
                        return
                if stop.is_set():
                    return
                out = [next(it, done)]
                if out[0] is done:
                    q.put(done)
                    return
                q.put(out.pop())  # not held here once queued
        except BaseException as e:  # handed to the training thread
            q.put(e)

    t = threading.Thread(target=work, name="svmcore-reader", daemon=True)
    t.start()
    try:
        while True:
            box = [q.get()]
            room.release()
            if box[0] is done:
                return
            if isinstance(box[0], BaseException):
                raise box[0]
            yield box.pop()  # handed on, not held here while the consumer works on it
    finally:
        stop.set()
        t.join(timeout=5)
