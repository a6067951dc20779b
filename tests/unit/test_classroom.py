"""svmcore.app.exercise (the class round): a class's round of guesses (kept in the data home) and its tally,
compared with ==."""

from __future__ import annotations

import html

import pytest

from svmcore.app.exercise import Bin, Classroom, answers_hidden, class_verdict, prepare_slots, tally
from svmcore.spec.errors import ConfigError

M = "\u2212"


def test_the_class_tally_keeps_the_empty_bins_between_guesses():
    assert tally([]) == ()
    assert tally([-30.0, -35.0, -5.0, 0.0, 12.0]) == (
        Bin(-40, -30, 1), Bin(-30, -20, 1), Bin(-20, -10, 0), Bin(-10, 0, 1), Bin(0, 10, 1), Bin(10, 20, 1))


def test_the_class_verdict_sets_the_median_guess_beside_the_measurement():
    assert class_verdict([-30.0, -40.0, -2.0], 1.0) == (
        f"The class's median guess was {M}30% (3 guesses, {M}40% to {M}2%); the exact peak changed +1%: 1 of 3 within "
        "5 points.")
    assert class_verdict([-20.0], -18.0) == (
        f"The class's median guess was {M}20% (1 guess); the exact peak changed {M}18%: 1 of 1 within 5 points.")
    assert class_verdict([], -18.0) is None and class_verdict([-20.0], None) is None


def test_answers_wait_for_the_teacher_in_teacher_mode_only():
    assert answers_hidden(teacher=True, revealed=False)
    assert not answers_hidden(teacher=True, revealed=True)
    assert not answers_hidden(teacher=False, revealed=False)  # alone, Learn's page is whole


def test_runs_at_once_as_the_memory_and_the_cores_allow():
    assert prepare_slots([300.0, 250.0], available_mb=2_000.0, cpus=2) == 2  # 1,400 MiB of room: four, two cores
    assert prepare_slots([900.0], available_mb=2_000.0, cpus=8) == 1
    assert prepare_slots([300.0], available_mb=100.0, cpus=8) == 1  # always one
    assert prepare_slots([], available_mb=100.0, cpus=8) == 1


def test_a_round_is_shared_through_the_home_and_a_reveal_waits_for_a_guess(tmp_path):
    room = Classroom(str(tmp_path))
    assert room.state().guesses == () and not room.state().teacher
    room.set_teacher(True)
    with pytest.raises(ConfigError, match="no guess is in yet"):
        room.reveal()
    room.submit("stream:default", -40, "  Ada \t L. ")
    other = Classroom(str(tmp_path))  # another server session, or the server after a restart
    [g] = other.state().guesses
    assert (g.choice, g.pct, g.who) == ("stream:default", -40.0, "Ada L.")
    assert other.reveal().revealed and other.state().guesses_for("stream:default") == [g]
    assert not room.new_round().revealed and room.state().guesses == () and room.state().teacher


@pytest.mark.parametrize(("pct", "who", "message"), [
    (None, "", "guess: type your guess first"),
    (-100, "", "guess: a change of the peak between -100% and +1000% (-100% given)"),
    (-20, "a\x1bb", "name: a name of printable characters"),
])
def test_a_guess_that_is_no_guess_is_refused(tmp_path, pct, who, message):
    with pytest.raises(ConfigError) as e:
        Classroom(str(tmp_path)).submit("stream:default", pct, who)
    assert str(e.value).startswith(message)
    assert Classroom(str(tmp_path)).state().guesses == ()


def test_the_tallys_lines_are_labelled_above_its_bars_on_their_two_sides():
    """The measured change and the forecast are labelled away from each other, above the bars
    (their labels were written over the tallest bar and over each other)."""
    from ui.exercise import guesses_figure

    view = {"bins": tally([-30.0, -10.0, -12.0, -11.0]), "measured_pct": -0.06, "forecast_pct": -1.2,
            "lower_bound": True}
    fig = guesses_figure(view)
    assert list(fig.layout.yaxis.range) == [0, 1.4 * 2]
    labels = {html.unescape(a.text): a.xanchor for a in fig.layout.annotations}  # as plotly.js shows them
    assert labels == {"measured ±0%": "left", "memory model's lower bound \u22121%": "right"}
