"""Streamlit-only helpers: the shared Lab, knob widgets generated from the registry,
and the live run panel. svmcore never imports this package."""
