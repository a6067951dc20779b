"""svmcore.app.story: a demo's slides and their wording, compared with ==."""

from __future__ import annotations

import pytest

from svmcore.app.headlines import RunFacts, compare
from svmcore.app.story import Slide, check_story, default_question, short_headline, story_slides
from svmcore.spec.errors import ConfigError

MEMORY = RunFacts(1, "completed", "memory", peak_mb=253.0, peak_phase="load", accuracy=0.751,
                  samples_per_s=280_000.0)
STREAM = RunFacts(6, "completed", "stream", peak_mb=73.4, peak_phase="train", accuracy=0.750,
                  samples_per_s=200_000.0)
F32 = RunFacts(7, "completed", "float32", peak_mb=180.0, accuracy=0.751, samples_per_s=290_000.0)
OOM = RunFacts(8, "oom", "batch size 65,536", peak_mb=150.2, phase="train", cap="rlimit", cap_mb=150.0)


def test_the_headline_of_the_issue():
    assert short_headline(MEMORY, STREAM) == "run 6 · stream: \u221271% peak, 1.4\u00d7 slower, \u22120.1 pt accuracy"


def test_a_remedy_at_the_same_accuracy_and_speed():
    assert short_headline(MEMORY, F32) == "run 7 · float32: \u221229% peak, same speed, \u00b10.0 pt accuracy"


def test_a_remedy_that_did_not_complete_says_how_it_ended():
    assert short_headline(MEMORY, OOM) == ("run 8 · batch size 65,536: ran out of memory in train: exact peak "
                                           "150 MiB under a 150 MiB rlimit cap")


def test_the_slides_of_a_story():
    slides = story_slides(compare([MEMORY, STREAM, OOM], 1))
    assert slides == (
        Slide("question", "Run 1 · memory peaks at 253 MiB: what lowers it, and what does it cost?",
              "Baseline run 1 · memory; remedies: run 6 · stream, run 8 · batch size 65,536. Exact peaks are the "
              "kernel's high-water mark.", (1,)),
        Slide("baseline", "The baseline: run 1 · memory", "run 1 · memory: completed: exact peak 253 MiB, owned by load",
              (1,)),
        Slide("remedy", "Remedy: run 6 · stream", short_headline(MEMORY, STREAM), (1, 6)),
        Slide("remedy", "Remedy: run 8 · batch size 65,536", short_headline(MEMORY, OOM), (1, 8)),
        Slide("tradeoff", "The trade-off: exact peak against accuracy",
              "Lowest exact peak: run 6 · stream, 73 MiB (\u221271%), accuracy 0.750.", (1, 6, 8)))


def test_the_question_is_the_users_when_given():
    slides = story_slides(compare([MEMORY, F32], 1), "  Can we fit in 200 MiB? ")
    assert slides[0].title == "Can we fit in 200 MiB?"
    assert default_question(F32) == "Run 7 · float32 peaks at 180 MiB: what lowers it, and what does it cost?"


def test_no_remedy_completed():
    assert story_slides(compare([MEMORY, OOM], 1))[-1].headline == (
        "No remedy completed: nothing to weigh against the baseline.")


@pytest.mark.parametrize(("baseline", "remedies", "message"), [
    (None, [2], "story: choose a baseline run"),
    (1, [], "story: choose at least one remedy run to compare with the baseline"),
    (1, [2, 3, 4, 5], "story: choose at most 3 remedy runs (4 chosen)"),
    (1, [1, 2], "story: run 1 is the baseline; it cannot also be a remedy"),
])
def test_a_story_that_cannot_be_told(baseline, remedies, message):
    with pytest.raises(ConfigError) as e:
        check_story(baseline, remedies)
    assert str(e.value) == message


def test_a_baseline_that_did_not_complete_is_refused():
    with pytest.raises(ConfigError) as e:
        story_slides(compare([OOM, MEMORY], 8))
    assert str(e.value) == ("story: the baseline, run 8 · batch size 65,536, ran out of memory in train: exact peak "
                            "150 MiB under a 150 MiB rlimit cap; choose a completed run")
