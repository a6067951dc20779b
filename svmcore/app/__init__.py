"""The dashboard's facade: ``Lab`` (one method per user action) and the remedies the
Learn page teaches.

Rule: may import every layer below; never streamlit (the ``ui`` package and the pages
import this, not the other way round).
"""
