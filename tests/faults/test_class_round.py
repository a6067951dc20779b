"""The class exercise's round (svmcore.app.exercise): a damaged file and guesses from many
browsers at once, on the real file in a data home."""

from __future__ import annotations

import json
import os
import threading

from svmcore.app.exercise import Classroom, Guess


def test_a_damaged_round_file_starts_a_new_round_and_says_so(tmp_path, caplog):
    os.makedirs(tmp_path / "exercise")
    (tmp_path / "exercise" / "class.json").write_text('{"teacher": true, "guesses": [{"choice": "gc:def')  # cut short
    assert Classroom(str(tmp_path)).state().guesses == ()
    assert "could not be read" in caplog.text and "a new round starts" in caplog.text
    Classroom(str(tmp_path)).submit("gc:default", 5)
    assert json.loads((tmp_path / "exercise" / "class.json").read_text())["guesses"][0]["choice"] == "gc:default"
    assert Guess("gc:default", 5.0).who == ""


def test_guesses_from_many_browsers_at_once_are_all_kept(tmp_path):
    """A round is written whole and renamed under one lock: 8 sessions guessing 20 times each
    at once leave 160 guesses and a file that always reads."""
    room = Classroom(str(tmp_path))
    read_errors = []

    def guess(k: int) -> None:
        for i in range(20):
            room.submit("stream:default", -k - i / 100, f"learner {k}")
            try:
                json.loads((tmp_path / "exercise" / "class.json").read_text())
            except ValueError as e:  # a half-written file seen by a reader
                read_errors.append(e)

    threads = [threading.Thread(target=guess, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    got = Classroom(str(tmp_path)).state().guesses
    assert len(got) == 160 and read_errors == []
    assert sorted({g.who for g in got}) == [f"learner {k}" for k in range(8)]
    assert [f for f in os.listdir(tmp_path / "exercise") if f != "class.json"] == []  # no temporary left
