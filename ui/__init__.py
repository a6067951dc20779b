"""Streamlit-only helpers: the shared Lab, knob widgets generated from the registry,
and the live run panel. svmcore never imports this package."""

# pandas whole before any page draws: plotly looks for pandas in sys.modules without importing it,
# so while one session's script thread was still importing pandas, another session's chart found
# the module half-initialised ("partially initialized module 'pandas' has no attribute 'Series'",
# seen in the e2e suite). A thread that imports this package waits until it is done.
import pandas  # noqa: F401
