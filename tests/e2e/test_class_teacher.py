"""Issue 43 in a real browser (Debian chromium via Playwright) against a real
``streamlit run app.py`` server whose runs are real worker processes: the class exercise
in teacher mode, at 1024x768 and 1400x900. The measured answers are hidden until guesses
are in and the teacher reveals them; two learners guess from their own browsers (a blank
guess to start, "smaller batches" in the list); the reveal tallies both beside the
measurement made ahead of the class, with no run started while the class waits.

One class round covers both sizes: the teacher's page at 1024x768 (teacher mode, the panel,
a guess, the reveal), the second learner's browser at 1400x900 (the class's mode, a guess),
then the teacher's revealed page is resized to 1400x900 and checked again (the verdict, the
tally, the table). Before, the whole round ran once at each size (two rounds, ~13 s more).
"""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from svmcore.app.exercise import Classroom
from tests.e2e.conftest import Server
from tests.e2e.test_browser import click_to_rerun, no_exception, open_app, screenshot, set_number, settle
from tests.helpers import make_history

pytestmark = pytest.mark.e2e

CHOICE = "Smaller batches: batch size 1,024 → 256"
PREPARE_SCRIPT = r"""
import json, sys, time
from svmcore.app.lab import Lab

home = sys.argv[1]
lab = Lab(home)
done = lab.exercise.prepare(quick=True, keys=["batch:default-1024"])
deadline = time.monotonic() + 170
while time.monotonic() < deadline and lab.exercise.prepared(quick=True)["running"]:
    time.sleep(0.2)
print(json.dumps({"pair": lab.exercise.measured("batch:default-1024", quick=True)}))
"""


@pytest.fixture(scope="module")
def class_server(tmp_path_factory, artifacts_dir):
    """The batch remedy's pair measured ahead (quick size), as "Measure every remedy ahead" does."""
    home = str(tmp_path_factory.mktemp("e2e-class") / "home")
    os.makedirs(home)
    made = make_history(PREPARE_SCRIPT, home, {})
    assert made["pair"], made
    server = Server(home, os.path.join(artifacts_dir, "streamlit-class.log"))
    server.prepared = made
    yield server
    server.stop()


def _guess(page: Page, pct: int) -> None:
    guess = page.get_by_label("Your guess: change of the exact peak (%)", exact=True)
    expect(guess).to_have_value("")  # blank: the learner's own number (it came prefilled at -30)
    box = page.get_by_role("combobox", name="Your pick")
    box.scroll_into_view_if_needed()
    box.click()
    page.get_by_role("option", name=CHOICE, exact=True).click()
    settle(page)
    set_number(page, "Your guess: change of the exact peak (%)", pct)
    click_to_rerun(page, page.get_by_role("button", name="Submit my guess"), "Submit my guess")


def _teacher_panel(page: Page) -> None:
    """The teacher's controls, open (they start open while the answers are hidden)."""
    if not page.get_by_role("button", name="Reveal the answers").is_visible():
        page.get_by_text("For the teacher", exact=True).click()
    expect(page.get_by_role("button", name="Reveal the answers")).to_be_visible()


def _learn(page: Page, server) -> None:
    open_app(page, server, "Learn", heading="Learn the remedies")
    settle(page)
    page.get_by_text("quick: a tenth of the rows (savings differ)").click()
    settle(page)


TEACHER, LEARNER = (1024, 768), (1400, 900)  # the two sizes: the teacher's page ends at the learner's too


def _revealed(page: Page) -> None:
    """The teacher's page after the reveal: the verdict, one tally bar count per guess, the table."""
    verdict = page.get_by_test_id("stAlert").filter(has_text="The class's median guess was")
    expect(verdict).to_contain_text(re.compile(r"\(2 guesses, \u221230% to \u221210%\); the exact peak changed "))
    bars = page.wait_for_function("""() => {
        const el = document.querySelector('[class*="st-key-class_tally"] .js-plotly-plot');
        return el && el.data && el.data[0].y.reduce((a, b) => a + b, 0);
    }""", timeout=30_000).json_value()  # the tally: one bar count per guess
    assert bars == 2, bars
    expect(verdict).to_be_visible()
    expect(page.get_by_role("heading", name="The advice, confronted")).to_be_visible()


def test_teacher_mode_hides_the_answers_until_the_class_has_guessed_and_the_teacher_reveals(
        class_server, page: Page, browser):
    """Issue 43: the measured table sat right under the guess box, the guess came prefilled at
    -30%, "smaller batches" was not in the list, and only one learner's guess was kept."""
    room = Classroom(class_server.home)
    room.set_teacher(False)
    room.new_round()
    runs = len(class_server.runs())
    size = TEACHER
    page.set_viewport_size({"width": size[0], "height": size[1]})
    _learn(page, class_server)
    expect(page.get_by_role("heading", name="The advice, confronted")).to_be_visible()  # alone: the page whole
    click_to_rerun(page, page.get_by_text("Teacher mode: a class guesses"), "Teacher mode",
                   done=lambda: page.locator(".st-key-exercise_teacher input").is_checked())  # a second click undoes
    expect(page.get_by_role("heading", name="The advice, confronted")).to_have_count(0)
    expect(page.get_by_text("Teacher mode: the measured answers")).to_be_visible()
    _teacher_panel(page)
    expect(page.get_by_role("button", name="Reveal the answers")).to_be_disabled()  # no guess in yet

    _guess(page, -30)
    expect(page.get_by_text(re.compile(r"Your guess is in\. 1 guess\(es\) in this round"))).to_be_visible()
    expect(page.get_by_role("heading", name="The advice, confronted")).to_have_count(0)  # still the teacher's
    screenshot(page, f"class-guessed-{size[0]}x{size[1]}")

    other = browser.new_context(viewport={"width": LEARNER[0], "height": LEARNER[1]})
    try:  # a second learner, from their own browser: the class's mode, the same round
        student = other.new_page()
        _learn(student, class_server)
        expect(student.locator(".st-key-exercise_teacher input")).to_be_checked()
        _guess(student, -10)
        expect(student.get_by_text(re.compile(r"Your guess is in\. 2 guess\(es\) in this round"))).to_be_visible()
        no_exception(student)
    finally:
        other.close()

    _learn(page, class_server)  # the teacher's page, again: two guesses in
    _teacher_panel(page)
    click_to_rerun(page, page.get_by_role("button", name="Reveal the answers"), "Reveal the answers")
    _revealed(page)
    assert len(class_server.runs()) == runs  # measured ahead: the class waited for no run
    no_exception(page)
    screenshot(page, f"class-revealed-{size[0]}x{size[1]}")
    # the revealed page at the other size: laid out again by the browser, the same answers shown
    page.set_viewport_size({"width": LEARNER[0], "height": LEARNER[1]})
    _revealed(page)
    no_exception(page)
    screenshot(page, f"class-revealed-{LEARNER[0]}x{LEARNER[1]}")
