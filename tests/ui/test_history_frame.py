"""The Compare tables built from history rows, whatever the filter leaves."""

from ui.compare import COLUMNS, history_frame


def _row(run_id, speed):
    return dict.fromkeys(COLUMNS) | {"id": run_id, "status": "oom", "samples_per_s": speed, "tags": ["x"],
                                      "started": 1.7e9}


def test_a_table_of_runs_that_all_ran_out_of_memory_has_no_speed_and_no_error():
    # filtered to oom runs, no row had a speed: rounding a column of None crashed the page
    df = history_frame([_row(1, None), _row(2, None)])
    assert df["samples_per_s"].isna().all() and list(df["id"]) == [1, 2]


def test_speeds_are_rounded_and_a_missing_one_stays_missing():
    df = history_frame([_row(1, 1234.6), _row(2, None)])
    assert df["samples_per_s"].iloc[0] == 1235 and df["samples_per_s"].isna().iloc[1]


def test_knobs_that_differ_keep_whole_numbers_whole_and_dash_a_missing_one():
    from ui.compare import knob_frame

    df = knob_frame({"rows": [30000, None], "mode": ["memory", "stream"]}, [7, 18])
    assert df.to_dict() == {"run 7": {"rows": "30000", "mode": "memory"}, "run 18": {"rows": "–", "mode": "stream"}}
