"""Choosing a sweep executor: bad choices are refused with a message naming them."""

import pytest

from svmcore.engine.queue import RunQueue
from svmcore.spec.errors import ConfigError
from svmcore.sweeps.executors import LocalExecutor, make_executor


def test_unknown_executor_is_refused(store):
    with pytest.raises(ConfigError, match="executor: unknown executor 'ray'; choose one of local, dask"):
        make_executor("ray", store)


def test_local_executor_refuses_a_scheduler(store):
    with pytest.raises(ConfigError, match="scheduler: a scheduler address is only used with the dask executor"):
        make_executor("local", store, scheduler="tcp://127.0.0.1:8786")


def test_local_executor_uses_the_given_queue(store):
    queue = RunQueue(store)
    ex = make_executor("local", store, queue)
    assert isinstance(ex, LocalExecutor) and ex.queue is queue
    assert ex.describe() == {"executor": "local"}
    assert not ex.cancel(12345)  # not one of its runs
