"""What the replay needs of the one-sided transfers of a record: bytes, link protocol, remote device.

Read through the transfer kinds' accessors (:mod:`pyhcomm.sim.kinds`: ``nbytes``, ``channel``,
``remote``, the peer's address), a column at a time: a 1024-rank run has millions of transfers,
and the accessors of a transfer task read its slots.
"""
from __future__ import annotations

import numpy as np

from ..analysis.graph import int_column
from ..sim.memory import DEVICE_VA_BASE, DEVICE_VA_STRIDE, device_of_address


def transfer_columns(graph, at, objs, record) -> tuple:
    """Of the transfers at positions ``at`` of ``graph`` (``objs``: their entries): their sizes (a
    numpy int64 array), the protocol names of their channels (a list; None: unknown) and the
    devices their bytes land on or come from (a numpy int64 array, -1: unknown)."""
    sizes = np.fromiter(graph.read(at, "nbytes", objs), np.int64, len(objs))
    channels = graph.read(at, "channel", objs)
    info_of = record.channel_info.get
    protocol_of = {}
    for ch in dict.fromkeys(channels):
        info = info_of(ch)
        protocol_of[ch] = info[0] if info else None
    protocols = list(map(protocol_of.__getitem__, channels))
    return sizes, protocols, devices_of(graph.read(at, "remote", objs))


def devices_of(addresses) -> np.ndarray:
    """The device of each of ``addresses`` (device addresses, a list of ints; None: unknown) as a
    numpy int64 array, -1 for none."""
    try:
        addr = np.fromiter(addresses, np.int64, len(addresses))
    except (OverflowError, TypeError):
        return int_column([None if a is None else device_of_address(a) for a in addresses])
    return np.where(addr >= DEVICE_VA_BASE, (addr - DEVICE_VA_BASE) // DEVICE_VA_STRIDE, -1)


__all__ = ["transfer_columns", "devices_of"]
