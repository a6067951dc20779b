"""svmcore.app.headlines (a story): a demo's slides and their wording, compared with ==."""

from __future__ import annotations

import pytest

from svmcore.app.headlines import Slide, advice, check_story, compare, default_question, short_headline, story_slides
from svmcore.spec.errors import ConfigError
from tests.helpers import facts

MEMORY = facts(1, "completed", "memory", peak_mb=253.0, peak_phase="load", accuracy=0.751,
                  samples_per_s=280_000.0)
STREAM = facts(6, "completed", "stream", peak_mb=73.4, peak_phase="train", accuracy=0.750,
                  samples_per_s=200_000.0)
F32 = facts(7, "completed", "float32", peak_mb=180.0, accuracy=0.751, samples_per_s=290_000.0)
OOM = facts(8, "oom", "batch size 65,536", peak_mb=150.2, phase="train", cap="rlimit", cap_mb=150.0)


def test_the_headline_of_the_issue():
    assert short_headline(MEMORY, STREAM) == (
        "run 6 · stream: \u221271% peak, 1.4\u00d7 slower (within noise), \u22120.1 pt accuracy (within noise)")


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
              "Lowest exact peak: run 6 · stream, 73 MiB (\u221271%), accuracy 0.750.", (1, 6, 8)),
        Slide("advice", "What to do", "Use run 6 · stream: exact peak 253 MiB → 73 MiB (\u221271%), 1.4\u00d7 slower "
              "(within noise), accuracy \u22120.1 pt (within noise); it lowers the peak most of the remedies that keep "
              "accuracy within 1 point.",
              (1, 6, 8)))


def test_the_question_is_the_users_when_given():
    slides = story_slides(compare([MEMORY, F32], 1), "  Can we fit in 200 MiB? ")
    assert slides[0].title == "Can we fit in 200 MiB?"
    assert default_question(F32) == "Run 7 · float32 peaks at 180 MiB: what lowers it, and what does it cost?"


def test_no_remedy_completed():
    assert story_slides(compare([MEMORY, OOM], 1))[-2].headline == (
        "No remedy completed: nothing to weigh against the baseline.")


def test_what_to_do_weighs_the_peak_against_accuracy_and_noise():
    """Issue 43: the story ended on the trade-off chart; a closing slide says what to do,
    with its figures. A change of the peak within the run-to-run noise is no remedy; one that
    costs more than a point of accuracy is taken only when nothing cheaper lowers the peak."""
    same = facts(9, "completed", "seed 1", peak_mb=246.0, accuracy=0.751, samples_per_s=280_000.0)  # -2.8%
    assert advice(MEMORY, [same, OOM]) == ("Keep the baseline, run 1 · memory: no remedy lowered its exact peak "
                                           "(253 MiB) by more than the run-to-run noise (5%).")
    hashed = facts(10, "completed", "hashing 12 bits", peak_mb=60.0, accuracy=0.700, samples_per_s=300_000.0)
    assert advice(MEMORY, [hashed, F32]).startswith("Use run 7 · float32: exact peak 253 MiB → 180 MiB (\u221229%)")
    assert advice(MEMORY, [hashed]) == (
        "Use run 10 · hashing 12 bits: exact peak 253 MiB → 60 MiB (\u221276%), 1.1\u00d7 faster (within noise), "
        "accuracy \u22125.1 pt; it lowers the peak most, but every remedy that lowers it costs more than 1 point of "
        "accuracy.")


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
