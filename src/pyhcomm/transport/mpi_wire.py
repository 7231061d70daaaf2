"""The messages of the MPI link, as bytes: what :mod:`.mpi_link` sends and receives on its tag.

A message is a byte buffer whose first byte says what it is:

* ``C`` (:data:`CONTROL`): a pickled control tuple ``(kind, ...)``; byte 1 says whether it is
  *counted* (termination detection counts the messages that carry work, :mod:`.mpi_termination`,
  and leaves out its own and the link's bookkeeping).
* ``D`` (:data:`DATA`): a data-plane header of :data:`HDR` bytes (the kind, 7 pad bytes, then
  eight int64 words ``op, end id, address, size, aux, request id, where, extra``), followed by
  the payload when it is at most :data:`EAGER` bytes (``where`` is :data:`INLINE`).
* A larger payload (``where`` is :data:`BULK`) is a message of its own, sent right after its
  header and received in place by whoever handles the header (MPI keeps the order of the
  messages of one sender on one tag).

Everything travels on :data:`TAG`; heartbeats on :data:`TAG_BEAT` (:mod:`.mpi_liveness`). Neither
matches a message of the program's own.
"""
from __future__ import annotations

import pickle

import numpy as np

TAG = 0x5AC0            # every pyhcomm message (one tag: MPI keeps their order per sender)
TAG_BEAT = 0x5AC1       # heartbeats
EAGER = 1 << 16         # payloads up to this many bytes travel inside their header message
HDR = 72                # kind byte + 7 pad + 8 int64 words
CONTROL, DATA = ord("C"), ord("D")

# data-plane operations (word 0 of a ``D`` header)
PUT, NOTIFY, GET, GOT, ACC, FENCE, FENCED = range(1, 8)
INLINE, BULK = 1, 2     # word 6: where the payload is


def control(msg: tuple, counted: bool):
    """The ``C`` message of control tuple ``msg``."""
    body = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
    buf = np.empty(8 + len(body), np.uint8)
    buf[0] = CONTROL
    buf[1] = 1 if counted else 0
    buf[8:] = np.frombuffer(body, np.uint8)
    return buf


def read_control(buf, n: int):
    """``(counted, tuple)`` of the ``C`` message in ``buf[:n]``."""
    return bool(buf[1]), pickle.loads(buf[8:n].tobytes())


def data(op: int, tid: int, addr: int, size: int, aux: int, reqid: int, extra: int, payload):
    """``(header message, where)`` of a data-plane message; the payload (a uint8 array or None)
    is copied inside when small (:data:`INLINE`), else it is to be sent after (:data:`BULK`)."""
    if payload is not None and len(payload) <= EAGER:
        buf = np.empty(HDR + len(payload), np.uint8)
        buf[HDR:] = payload
        where = INLINE
    else:
        buf = np.empty(HDR, np.uint8)
        where = 0 if payload is None else BULK
    buf[0] = DATA
    buf[8:HDR].view(np.int64)[:] = (op, tid, addr, size, aux, reqid, where, extra)
    return buf, where


def read_data(buf, n: int):
    """The eight words of the ``D`` message in ``buf[:n]``, then its inline payload (a view into
    ``buf``) or None."""
    words = buf[8:HDR].view(np.int64).tolist()
    return words, (buf[HDR:n] if words[6] == INLINE else None)
