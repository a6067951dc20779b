"""``sp``: scipy.sparse, imported on first use. The data modules name it at module
level but the lean worker path (native parser and solver) never touches it, so it
never loads scipy (~15 MiB of floor)."""

from __future__ import annotations


class _LazySparse:
    def __getattr__(self, name: str):
        import scipy.sparse

        return getattr(scipy.sparse, name)


sp = _LazySparse()
