"""The documentation's promises that can drift: the README stays a short front door whose
links work, the knob table is the registry, the benchmarks page is generated from the
committed results, and CI runs the README's test command."""

import os
import re

from bench.report import render
from svmcore.cli.knobs import knobs_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = ["README.md"] + [os.path.join("docs", f) for f in sorted(os.listdir(os.path.join(ROOT, "docs")))]


def _read(name):
    with open(os.path.join(ROOT, name)) as f:
        return f.read()


def test_readme_is_a_front_door_under_8_kb():
    assert len(_read("README.md").encode()) < 8 * 1024


def test_every_relative_link_and_image_in_the_docs_exists():
    for doc in DOCS:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", _read(doc)):
            if re.match(r"^[a-z]+://", target):
                continue
            path = os.path.normpath(os.path.join(ROOT, os.path.dirname(doc), target))
            assert os.path.exists(path), f"{doc} links to {target}, which does not exist"


def test_the_knob_table_is_the_registry():
    assert knobs_table(markdown=True) in _read("docs/knobs.md"), "regenerate: python -m svmcore knobs --markdown"


def test_the_benchmarks_page_is_generated_from_the_results():
    assert _read("docs/benchmarks.md") == render(), "regenerate: python bench/report.py"


def test_ci_runs_the_readme_test_command():
    assert "make test" in _read("README.md")
    ci = [line.strip() for line in _read(".ci/run").splitlines()]
    assert "make test" in ci and "make test-slow" in ci


def test_make_test_and_make_test_slow_run_every_test_once_between_them():
    import re

    makefile = _read("Makefile")
    marks = {t: re.search(rf"^{t}:.*\n\t.* -m \"([^\"]+)\"", makefile, re.M).group(1) for t in ("test", "test-slow")}
    assert marks == {"test": "not slow and not e2e", "test-slow": "slow or e2e"}
