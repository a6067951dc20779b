"""bench/compare.py's goal lines: a contender run several times keeps its fastest run and its
highest peak, and the peak line shows every run's peak, naming the one that was first on the
file (its prepare phase extracted the held-out rows)."""

from bench.compare import best_of, raised_goal_lines


def _run(train_s, peak, first):
    return {"train_s": train_s, "peak_rss_mb": peak, "first_pass_samples_per_s": 1e6 / train_s,
            "peaks": [[peak, first]]}


def test_repeated_runs_keep_the_fastest_run_the_highest_peak_and_every_peak():
    both = best_of(_run(2.0, 64.53, True), _run(1.5, 62.9, False))
    assert both["train_s"] == 1.5 and both["peak_rss_mb"] == 64.53 and both["runs"] == 2
    assert both["peaks"] == [[64.53, True], [62.9, False]]
    lines = raised_goal_lines(both, _run(3.0, 60.7, False), {})
    [two] = [line for line in lines if "exact peak, 2 threads" in line]
    assert two == ("- exact peak, 2 threads: 64.5 MiB (goal <= 64 MiB): NOT met; "
                   "each run: 64.5 (first on the file: extracted its held-out rows), 62.9")
    [one] = [line for line in lines if "exact peak, 1 thread" in line]
    assert one == "- exact peak, 1 thread: 60.7 MiB (goal <= 64 MiB): met"  # one run, not the first: nothing to add
