"""The Learn page's claims table as HTML: seven columns of two-line cells, so that it
reads at 1024 px without scrolling sideways (a dataframe would cut its cells). The
rows come from ``svmcore.app.remedy_results.claims_row``; every piece is escaped."""

from __future__ import annotations

import html

VERDICT_CLASS = {"as claimed": "good", "more than claimed": "good", "not measured": "none"}
HEADERS = ("remedy and setup", "the advice claims", "run's exact peak (MiB)", "phases it acts on (MiB)",
           "at the peak: anonymous · file-backed (MiB)", "speed (samples/s) · accuracy (balanced)",
           "verdict · measured on")


def _verdict_class(verdict: str) -> str:
    if verdict in VERDICT_CLASS:
        return VERDICT_CLASS[verdict]
    if verdict.startswith(("not runnable", "not run")):
        return "none"
    if verdict.startswith("saves "):
        return "good"
    return "short"  # less than claimed, cannot lower, no saving, raises the peak, a run that failed


def claims_table_html(rows: list[dict]) -> str:
    """One ``<table class="claims">`` of the claims rows."""
    e = html.escape
    out = ['<table class="claims"><thead><tr>' + "".join(f"<th>{e(h)}</th>" for h in HEADERS) + "</tr></thead><tbody>"]
    for r in rows:
        verdict = r["verdict"]
        cells = [
            f"<b>{e(r['remedy'])}</b><br><small>{e(r['setup'])}</small>",
            e(r["the advice claims"]),
            e(r["run's exact peak (MiB)"]),
            e(r["phases it acts on (MiB)"]),
            e(r["at the peak: anonymous · file-backed (MiB)"]),
            f"{e(r['speed (samples/s)'])}<br><small>{e(r['accuracy (balanced)'])}</small>",
            f'<span class="{_verdict_class(verdict)}">{e(verdict)}</span><br><small>{e(r["measured on"])}</small>',
        ]
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return "".join(out) + "</tbody></table>"
