"""The README's promises that can drift: the knob table and the test command."""

import os

from svmcore.cli.knobs import knobs_table

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _read(name):
    with open(os.path.join(ROOT, name)) as f:
        return f.read()


def test_readme_knob_table_is_the_registry():
    assert knobs_table(markdown=True) in _read("README.md"), "regenerate with: python -m svmcore knobs --markdown"


def test_ci_runs_the_readme_test_command():
    assert "make test" in _read("README.md")
    assert any(line.strip() == "make test" for line in _read(".ci/run").splitlines())
