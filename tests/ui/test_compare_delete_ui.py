"""Compare's Delete acts only on the rows the user selected, names them and asks once
(issue 18: with nothing selected, "Delete 2 selected" deleted the two newest runs, the
"showing the latest 2" fallback, in one click). The browser side is in
tests/e2e/test_train_compare.py."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from svmcore.store.sqlite import Store
from tests.ui.test_apptest import assert_clean, has_key, open_page, store_runs, texts
from tests.ui.test_train_compare_apptest import imported_run


def three_runs(home: str) -> list[int]:
    s = Store(home)
    try:
        return [imported_run(s, batch_size=b) for b in (256, 512, 1024)]
    finally:
        s.close()


def ids(home: str) -> list[int]:
    return sorted(r.id for r in store_runs(home))


def select_rows(at: AppTest, *rows: int) -> AppTest:
    at.session_state["history"] = {"selection": {"rows": list(rows), "columns": []}}
    return at.run()


def table_ids(at: AppTest) -> list[int]:
    return [int(i) for i in at.dataframe(key="history").value["id"]]


def test_with_nothing_selected_delete_is_off_and_deletes_nothing(app_home):
    made = three_runs(app_home)
    at = open_page("pages/1_Compare.py")
    assert_clean(at)
    assert any("Nothing selected: showing the latest 2" in t for t in texts(at.caption))
    button = at.button(key="delete")
    assert button.disabled, button.label  # before the fix: "Delete 2 selected", and a click deleted both
    assert not [b.label for b in at.button if "Delete" in b.label and not b.disabled]
    assert ids(app_home) == made


def test_delete_names_the_selected_run_asks_once_and_deletes_only_it(app_home):
    made = three_runs(app_home)
    at = open_page("pages/1_Compare.py")
    order = table_ids(at)
    select_rows(at, 1)
    assert_clean(at)
    target = order[1]
    at.button(key="delete").click().run()
    assert_clean(at)
    assert ids(app_home) == made, "the first click must only ask"
    question = " ".join(texts(at.warning))
    assert f"Delete run: run {target}" in question and "cannot be undone" in question, question
    for other in set(made) - {target}:
        assert f"run {other}" not in question
    at.button(key="delete_confirm").click().run()
    assert_clean(at)
    assert ids(app_home) == sorted(set(made) - {target})
    assert any(f"Deleted run {target}" in t for t in texts(at.info))
    assert table_ids(at) == [i for i in order if i != target]
    assert at.button(key="delete").disabled  # the selection was emptied


def test_keep_them_deletes_nothing_and_a_changed_selection_drops_the_question(app_home):
    made = three_runs(app_home)
    at = open_page("pages/1_Compare.py")
    select_rows(at, 0, 2)
    at.button(key="delete").click().run()
    assert "Delete 2 runs" in " ".join(texts(at.warning))
    at.button(key="delete_keep").click().run()
    assert_clean(at)
    assert not has_key(at, "delete_confirm") and ids(app_home) == made
    at.button(key="delete").click().run()
    assert has_key(at, "delete_confirm")
    select_rows(at, 0)  # another selection: the question about the two runs is gone
    assert_clean(at)
    assert not has_key(at, "delete_confirm") and ids(app_home) == made


def test_a_selection_is_emptied_when_the_rows_shown_change(app_home):
    """A selection is row positions: once a run appears (or a filter or delete changes the
    rows), the ticked position would point at another run, so the selection goes."""
    three_runs(app_home)
    at = open_page("pages/1_Compare.py")
    select_rows(at, 0)
    assert not at.button(key="delete").disabled
    s = Store(app_home)
    try:
        imported_run(s, batch_size=2048)  # e.g. a sweep's run finishing while the page is open
    finally:
        s.close()
    at.run()
    assert_clean(at)
    assert at.button(key="delete").disabled, "the ticked position now shows another run"
    select_rows(at, 0)
    assert not at.button(key="delete").disabled  # a selection made on the rows shown stands
