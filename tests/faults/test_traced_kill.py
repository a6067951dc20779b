"""A traced run that dies mid-phase: memray's file has no trailer, and its sites are still read,
the phase it died in included (the case a trace is most wanted for: an oom kill)."""

from svmcore.data.files import make_dataset
from svmcore.spec.status import RunStatus
from tests.helpers import _run


def test_a_traced_run_that_dies_in_train_names_what_it_held_there(store, tmp_path):
    make_dataset("sparse-text", rows=4000, features=2000, nnz_per_row=20, seed=1, out=str(tmp_path / "d.svm"))
    # 40 MiB kept by our own code at the start of train, then the process ends without a word (as a SIGKILL)
    run = _run(store, fault="hog:40@train,exit:9@train", dataset=str(tmp_path / "d.svm"), mode="memory",
               parser="native", solver="native", epochs=1, monitor="off", trace=True)
    assert run.wait(180) != RunStatus.COMPLETED
    t = store.get_run(run.run_id).summary.trace
    assert t is not None and t.error is None, t
    train = t.at("train")
    top = train.sites[0]
    assert (top.file, top.function) == ("svmcore/worker/faults.py", "fire"), train.sites
    assert 40 * 2**20 <= top.bytes <= 40 * 2**20 + 4096 and top.allocations == 1
    assert train.traced_bytes >= top.bytes
