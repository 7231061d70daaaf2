"""A PNG timeline of a :class:`~pyhcomm.timing.timeline.Timeline` (needs the ``plot`` extra:
``pip install pyhcomm[plot]``, matplotlib).

One row per stream (grouped by rank, host effects on a ``host`` row of their rank), a bar per
entry from start to end coloured by kind (transfers, local copies and reduces, notify records and
waits, kernel launches, host effects), thin lines for the notify arrows, and the modeled time of
each collective call in the title. Rows beyond ``max_rows`` are left out (the title says how many).
"""
from __future__ import annotations

from ..sim.kinds import Trace

COLOURS = {"transfer": "#d62728", "copy": "#1f77b4", "reduce": "#9467bd", "record": "#2ca02c",
           "wait": "#98df8a", "kernel": "#ff7f0e", "host": "#7f7f7f", "other": "#bcbd22"}


def _family(ev) -> str:
    """The colour key of an entry: its kind's trace category (host effects: ``host``)."""
    return "host" if ev.entry == "host" else ev.kind.trace.value


def write_png(tl, path, max_rows: int = 64, width: float = 14.0) -> int:
    """Draw ``tl`` into the PNG file ``path``; returns the number of rows drawn.

    Raises ``ImportError`` naming the ``plot`` extra when matplotlib is not installed.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.collections import LineCollection
        from matplotlib.patches import Patch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the PNG timeline needs matplotlib: pip install 'pyhcomm[plot]'") from exc
    from .trace import rank_of_device
    rows: dict = {}
    bars: dict = {}
    rank_of = rank_of_device(tl.events)
    for i, ev in enumerate(tl.events):
        end = tl.end[i]
        if end != end or end == float("inf") or ev.kind.trace is Trace.CALL:
            continue
        rank = ev.rank if ev.rank is not None else rank_of.get(ev.device, -1 - (ev.device or 0))
        key = (rank, "host") if ev.entry == "host" else (rank, ev.stream or 0)
        if key not in rows:
            rows[key] = None
        begin = tl.issue[i] if ev.entry == "host" else tl.start[i]
        bars.setdefault(key, []).append((begin, end, _family(ev), i))
    keys = sorted(rows, key=lambda k: (k[0] if k[0] >= 0 else 1 << 30, k[1] == "host", str(k[1])))
    dropped = max(0, len(keys) - max_rows)
    keys = keys[:max_rows]
    index = {k: n for n, k in enumerate(keys)}
    us = 1e6
    fig, ax = plt.subplots(figsize=(width, 1.0 + 0.32 * max(1, len(keys))))
    for key in keys:
        y = index[key]
        spans = bars[key]
        by_colour: dict = {}
        for begin, end, fam, _i in spans:
            by_colour.setdefault(fam, []).append((begin * us, max((end - begin) * us, 1e-3)))
        for fam, xs in by_colour.items():
            ax.broken_barh(xs, (y - 0.4, 0.8), facecolors=COLOURS[fam], linewidth=0)
    where = {}
    for key in keys:
        for begin, end, _f, i in bars[key]:
            where[i] = (begin, end, index[key])
    segments = []
    for a in tl.arrows:
        if a.kind == "notify" and a.src in where and a.dst in where:
            s, d = where[a.src], where[a.dst]
            segments.append([(s[1] * us, s[2]), (max(s[1], d[0]) * us, d[2])])
    if segments:
        ax.add_collection(LineCollection(segments, colors="#555555", linewidths=0.3, alpha=0.5))
    labels = []
    for rank, stream in keys:
        who = f"rank {rank}" if rank >= 0 else f"device {-1 - rank}"
        labels.append(f"{who} host" if stream == "host" else f"{who} 0x{stream:x}")
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("virtual time (us)")
    title = tl.model.product if tl.model is not None else "timeline"
    if tl.calls:
        title += ": " + ", ".join(f"{c.name} {c.seconds * us:.1f} us" for c in tl.calls[:4])
        if len(tl.calls) > 4:
            title += f" (+{len(tl.calls) - 4} calls)"
    if dropped:
        title += f" ({dropped} rows not shown)"
    ax.set_title(title, fontsize=9)
    ax.legend(handles=[Patch(color=c, label=k) for k, c in COLOURS.items()], fontsize=6, ncol=8,
              loc="upper center", bbox_to_anchor=(0.5, -0.1 if len(keys) > 4 else -0.3))
    fig.subplots_adjust(left=0.16, right=0.99, top=0.93, bottom=0.16 if len(keys) > 4 else 0.35)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return len(keys)
