"""``svmcore knobs``: every knob, from the one registry (the README's table too)."""

from __future__ import annotations

from svmcore.spec.knobs import KNOBS


def knobs_table(markdown: bool = True) -> str:
    rows = []
    for k in KNOBS.values():
        default = ("auto" if k.auto else "unset") if k.default is None else k.default
        rows.append((f"`{k.flag}`", k.describe_allowed(), str(default), k.help, k.trades))
    if not markdown:
        return "\n\n".join(f"{r[0]} ({r[1]}; default {r[2]})\n  {r[3]}\n  trades: {r[4]}" for r in rows)
    out = ["| flag | allowed | default | what it does | what it trades |", "|---|---|---|---|---|"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in rows]
    return "\n".join(out)


def add_parser(sub) -> None:
    kn = sub.add_parser("knobs", help="list every knob: allowed values, default, what it trades")
    kn.add_argument("--markdown", action="store_true", help="as a Markdown table (the README's)")
    kn.set_defaults(handler=cmd_knobs, uses_home=False)


def cmd_knobs(args, home: str) -> int:
    print(knobs_table(markdown=args.markdown))
    return 0
