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


def test_ratios_round_by_round_pair_each_run_with_the_peer_run_after_it():
    """With --repeat each goal also gives ours over VW round by round and the median: a fast
    VW run is set against the lean run beside it, not against our fastest."""
    def run(train_s, later):
        return {"train_s": train_s, "peak_rss_mb": 60.0, "first_pass_samples_per_s": 9e5, "later_samples_per_s": later}
    lean = best_of(best_of(run(2.0, 4.0e6), run(1.8, 4.4e6)), run(1.9, 4.2e6))
    vw = best_of(best_of(run(3.0, 1.0e6), run(2.9, 2.0e6)), run(3.1, 1.4e6))
    assert lean["rates"] == [[9e5, 4.0e6], [9e5, 4.4e6], [9e5, 4.2e6]]
    lines = raised_goal_lines(lean, {}, vw)
    [later] = [line for line in lines if line.startswith("- later passes")]
    by_round = lines[lines.index(later) + 1]
    assert later.startswith("- later passes: 4,400,000 samples/s vs VW's cache pass 2,000,000: 2.20x") \
        and later.endswith("NOT met (each one's fastest run)")
    assert by_round == "  - run by run, each round's two runs one after the other: 4.00x, 2.20x, 3.00x; median 3.00x: met"
