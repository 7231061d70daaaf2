"""A PNG timeline of a :class:`~pyhcomm.timing.timeline.Timeline` (needs the ``plot`` extra:
``pip install pyhcomm[plot]``, matplotlib).

One row per stream (grouped by rank, host effects on a ``host`` row of their rank), a bar per
entry from start to end coloured by kind (transfers, local copies and reduces, notify records and
waits, kernel launches, host effects), thin lines for the notify arrows, and the modeled time of
each collective call in the title, a legend of what is drawn right of the axes. Rows beyond
``max_rows`` are left out (the title says how many).
"""
from __future__ import annotations

from ..sim.kinds import Trace

COLOURS = {"transfer": "#d62728", "copy": "#1f77b4", "reduce": "#9467bd", "record": "#2ca02c",
           "wait": "#98df8a", "kernel": "#ff7f0e", "host": "#7f7f7f", "other": "#bcbd22"}
ARROW = "#555555"       # the notify arrows
US = 1e6


def _family(ev) -> str:
    """The colour key of an entry: its kind's trace category (host effects: ``host``)."""
    return "host" if ev.entry == "host" else ev.kind.trace.value


def write_png(tl, path, max_rows: int = 64, width: float = 14.0) -> int:
    """Draw ``tl`` into the PNG file ``path``; returns the number of rows drawn.

    Raises ``ImportError`` naming the ``plot`` extra when matplotlib is not installed.
    """
    fig, rows = figure(tl, max_rows, width)
    import matplotlib.pyplot as plt
    try:
        fig.savefig(path, dpi=110, bbox_inches="tight")     # (tight: the legend, right of the axes, is kept)
    finally:
        plt.close(fig)
    return rows


def figure(tl, max_rows: int = 64, width: float = 14.0):
    """The timeline of ``tl`` as a matplotlib figure (the caller closes it) and its number of rows.
    The legend lists only the colours drawn (and the notify arrows when there are some), right of
    the axes, clear of them and of their labels."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("the PNG timeline needs matplotlib: pip install 'pyhcomm[plot]'") from exc
    keys, bars, dropped = _rows(tl, max_rows)
    fig, ax = plt.subplots(figsize=(width, 1.0 + 0.32 * max(1, len(keys))))
    index = {k: n for n, k in enumerate(keys)}
    drawn = _bars(ax, keys, bars)
    arrows = _arrows(ax, tl, keys, bars, index)
    labels = []
    for rank, stream in keys:
        who = f"rank {rank}" if rank >= 0 else f"device {-1 - rank}"
        labels.append(f"{who} host" if stream == "host" else f"{who} 0x{stream:x}")
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels(labels, fontsize=6)
    ax.invert_yaxis()
    ax.set_xlabel("virtual time (us)")
    ax.set_title(_title(tl, dropped), fontsize=9)
    _legend(ax, drawn, arrows, len(keys))
    return fig, len(keys)


def _rows(tl, max_rows: int) -> tuple:
    """``(row keys in drawing order, key -> [(begin, end, colour key, entry)], rows left out)``:
    a row per (rank, stream), host effects on a ``(rank, "host")`` row."""
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
    return keys[:max_rows], bars, max(0, len(keys) - max_rows)


def _bars(ax, keys, bars) -> set:
    """Draw the bars of the rows ``keys``; returns the colour keys drawn."""
    drawn = set()
    for y, key in enumerate(keys):
        by_colour: dict = {}
        for begin, end, fam, _i in bars[key]:
            by_colour.setdefault(fam, []).append((begin * US, max((end - begin) * US, 1e-3)))
        for fam, xs in by_colour.items():
            ax.broken_barh(xs, (y - 0.4, 0.8), facecolors=COLOURS[fam], linewidth=0)
            drawn.add(fam)
    return drawn


def _arrows(ax, tl, keys, bars, index) -> bool:
    """Draw the notify arrows between bars drawn; returns whether there was one."""
    from matplotlib.collections import LineCollection
    where = {}
    for key in keys:
        for begin, end, _f, i in bars[key]:
            where[i] = (begin, end, index[key])
    segments = []
    for a in tl.arrows:
        if a.kind == "notify" and a.src in where and a.dst in where:
            s, d = where[a.src], where[a.dst]
            segments.append([(s[1] * US, s[2]), (max(s[1], d[0]) * US, d[2])])
    if segments:
        ax.add_collection(LineCollection(segments, colors=ARROW, linewidths=0.3, alpha=0.5))
    return bool(segments)


def _title(tl, dropped: int) -> str:
    title = tl.model.product if tl.model is not None else "timeline"
    if tl.calls:
        title += ": " + ", ".join(f"{c.name} {c.seconds * US:.1f} us" for c in tl.calls[:4])
        if len(tl.calls) > 4:
            title += f" (+{len(tl.calls) - 4} calls)"
    if dropped:
        title += f" ({dropped} rows not shown)"
    return title


def _legend(ax, drawn: set, arrows: bool, rows: int) -> None:
    """The legend of what was drawn, in :data:`COLOURS` order, right of the axes (in columns of
    about as many entries as there are rows, so that it is no taller than they are)."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    handles = [Patch(color=c, label=k) for k, c in COLOURS.items() if k in drawn]
    if arrows:
        handles.append(Line2D([], [], color=ARROW, linewidth=0.8, label="notify"))
    if handles:
        per_column = max(2, 2 * rows)
        ax.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0,
                  frameon=False, ncol=-(-len(handles) // per_column))
