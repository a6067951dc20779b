"""Charts for a file that opens offline: each figure as a div, the first carrying
plotly.js itself (no CDN), shared by Compare's and Story's HTML exports."""

from __future__ import annotations

from collections.abc import Sequence

import plotly.graph_objects as go

CONFIG = {"displaylogo": False}


def chart_divs(figures: Sequence[go.Figure], ids: Sequence[str] | None = None, config: dict | None = None
               ) -> list[str]:
    """One HTML fragment per figure; plotly.js is inlined in the first one only."""
    return [f.to_html(full_html=False, include_plotlyjs=i == 0, config=config or CONFIG,
                      div_id=None if ids is None else ids[i])
            for i, f in enumerate(figures)]
