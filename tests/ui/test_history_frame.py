"""The Compare tables built from history rows, whatever the filter leaves."""

from ui.compare import COLUMNS, history_frame
from tests.helpers import facts


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


def test_the_data_parallel_columns_show_only_when_a_data_parallel_run_is_listed():
    # the walk's table had two columns of "None" on every one of 33 single-process runs
    plain = history_frame([_row(1, 10.0), _row(2, 20.0)])
    assert "coordinator_mb" not in plain and "largest_worker_mb" not in plain
    mixed = history_frame([_row(1, 10.0), dict(_row(2, 20.0), coordinator_mb=168.0, largest_worker_mb=300.0)])
    assert list(mixed["coordinator_mb"].isna()) == [True, False] and "largest_worker_mb" in mixed


def test_knobs_that_differ_keep_whole_numbers_whole_and_dash_a_missing_one():
    from ui.compare import knob_frame

    df = knob_frame({"rows": [30000, None], "mode": ["memory", "stream"]}, [7, 18])
    assert df.to_dict() == {"run 7": {"rows": "30000", "mode": "memory"}, "run 18": {"rows": "–", "mode": "stream"}}


def test_a_big_number_that_did_not_move_reads_plus_minus_zero_in_grey_as_the_headline_says():
    # the walk saw "−0%" under a run whose headline said "±0%"
    from ui.compare import BigNumber, numbers

    run = facts(2, "completed", peak_mb=184.2, samples_per_s=1000.0, accuracy=0.8)
    rows = numbers(run, {"peak_pct": -0.3, "speed_ratio": 0.5, "accuracy": 0.0001})
    assert rows == [BigNumber("exact peak", "184 MiB", "\u00b10%", "off"),
                    BigNumber("samples/s", "1,000", "-50%", "normal"),
                    BigNumber("accuracy", "0.800", "\u00b10.000", "off"),
                    BigNumber("balanced accuracy", "–", None, "normal")]
