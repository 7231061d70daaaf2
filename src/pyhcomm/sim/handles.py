"""Opaque handles: deterministic nonzero integers, one disjoint range per kind of object.

Real handles are object addresses; ours are table keys, so an unknown or stale handle is
recognised instead of being dereferenced.
"""
from __future__ import annotations

import threading


class HandleTable:
    """Maps handles of one kind to live objects."""

    def __init__(self, kind: str, base: int, step: int):
        self.kind = kind
        self._base = base
        self._step = step
        self._next = base
        #: handle -> live object (read it for a lookup on a hot path; change it only through the methods)
        self.by_handle: dict[int, object] = {}
        self._lock = threading.Lock()

    def add(self, obj) -> int:
        with self._lock:
            h = self._next
            self._next += self._step
            self.by_handle[h] = obj
            return h

    def get(self, handle):
        return self.by_handle.get(handle)

    def remove(self, handle) -> None:
        self.by_handle.pop(handle, None)

    def values(self):
        return list(self.by_handle.values())

    def reset(self) -> None:
        """Forget every object and restart numbering (runtime reset only)."""
        with self._lock:
            self.by_handle.clear()
            self._next = self._base


class Handles:
    """The handle tables of one Sim: values restart with every Sim, so they are deterministic."""

    __slots__ = ("streams", "threads", "comms", "notifies", "kernels", "channels", "misc")

    def __init__(self):
        self.streams = HandleTable("stream", 0x5710_0000_0000, 0x100)
        self.threads = HandleTable("thread", 0x7410_0000_0000, 0x40)
        self.comms = HandleTable("communicator", 0xC044_0000_0000, 0x1000)
        self.notifies = HandleTable("notify", 0x6E00_0000_0000, 0x40)
        self.kernels = HandleTable("kernel", 0x4B00_0000_0000, 0x100)
        self.channels = HandleTable("channel", 0xC4A0_0000_0000, 0x80)
        self.misc = HandleTable("object", 0x0B1E_0000_0000, 0x40)   # endpoints, teams, windows, configs ...
