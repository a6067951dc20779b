"""File names the UI shows are plain text (issue 18: an upload named ``__init__.svm``
was shown as "Saved as **init**-327fe055.svm", the name read as Markdown). Each body is
rendered with a CommonMark renderer (markdown-it, what Streamlit's Markdown follows) and
its visible text compared with the name as written."""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

from svmcore.store.sqlite import Store
from tests.ui.test_apptest import assert_clean, open_page
from tests.ui.test_train_compare_apptest import imported_run

GOOD = b"1 1:0.5 2:1\n-1 2:0.25\n1 1:1\n-1 3:1\n"
NAMES = ("__init__.svm", "*star*.svm", "a_b_c_.svm")


def shown(markdown: str) -> str:
    """The text a browser shows for a Markdown body (tags dropped, entities resolved)."""
    rendered = MarkdownIt("commonmark").render(markdown)
    return html.unescape(re.sub(r"<[^>]+>", "", rendered)).strip()


def test_an_uploaded_file_name_is_shown_as_written(app_home):
    at = open_page("pages/4_Data.py")
    at.file_uploader(key="upload").set_value(("__init__.svm", GOOD, "text/plain"))
    at.run()
    assert_clean(at)
    assert len(at.success) == 1, [s.value for s in at.success]
    text = shown(at.success[0].value)
    assert re.match(r"Saved as __init__-[0-9a-f]{8}\.svm; it is now in the dataset list", text), text


def test_compare_shows_dataset_names_as_written(app_home):
    s = Store(app_home)
    try:
        made = [imported_run(s, dataset=f"/data/{name}") for name in NAMES[:2]]
    finally:
        s.close()
    at = open_page("pages/1_Compare.py")
    assert_clean(at)
    block = next(m.value for m in at.markdown if "compareHeadline" in m.value)
    headline = shown(block)
    # each run named by what it changed against the baseline: its file (issue 43)
    assert f"run {made[1]} · *star*.svm vs run {made[0]} · baseline" in headline, headline
    warning = shown(next(w.value for w in at.warning))
    assert f"run {made[0]}: __init__.svm" in warning and f"run {made[1]}: *star*.svm" in warning, warning
    at.toggle(key="present").set_value(True).run()
    assert_clean(at)
    titles = [shown(m.value) for m in at.markdown if "(baseline)" in m.value or "&#9632;" in m.value]
    assert any(f"run {made[0]} · baseline" in t for t in titles), titles
    assert any(f"run {made[1]} · *star*.svm" in t for t in titles), titles


def test_a_file_where_the_home_needs_a_folder_is_one_error_on_every_page(app_home):
    import os

    with open(os.path.join(app_home, "runs"), "w") as f:
        f.write("not a folder")
    from tests.ui.test_apptest import PAGES
    for page in PAGES:
        at = open_page(page)
        assert_clean(at)
        errors = [shown(e.value) for e in at.error]
        assert len(errors) == 1 and "runs is a file, not a folder (the home keeps its run folders there)" in errors[0], \
            (page, errors)
