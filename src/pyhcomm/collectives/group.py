"""Group calls: ``HcclGroupStart`` ... ``HcclGroupEnd`` run the calls between them as one.

HCCL (HCOMM's ``HcclGroupStart`` page) merges, per host thread, several communicator inits and
destroys, or several point-to-point calls, or several collectives issued between the two calls.
Modeled here:

* The group belongs to the calling host program (a rank's thread or greenlet). Starts nest; the
  outermost ``HcclGroupEnd`` runs the group. ``HcclGroupEnd`` without a start is ``HCCL_E_PARA``.
* A call inside a group checks its arguments at once (a bad one fails there, and is not kept),
  then is kept instead of enqueued.
* Point-to-point (``HcclSend`` / ``HcclRecv``): at the end, the kept calls of each (communicator,
  stream) run as one batch (:func:`.dispatch.end_group`), so their order on a rank no longer
  matters: two ranks that both send first no longer deadlock. ``HcclBatchSendRecv`` inside a
  group is ``HCCL_E_NOT_SUPPORT`` (HCCL forbids it there).
* Collectives: at the end they are enqueued in call order (HCCL requires that they do not
  depend on each other). Atlas 350 does not merge collectives: ``HCCL_E_NOT_SUPPORT``.
* Communicator management (``HcclCommInitRootInfo``, ``HcclCommInitClusterInfo``,
  ``HcclCommDestroy``): an init joins its rank at once and returns the communicator; the waits
  for the other ranks, and the destroys, happen at the end. One host thread can so set up the
  communicators of several devices (``aclrtSetDevice(i)`` + init, per device) without blocking
  on the first.
* Kinds do not mix: a collective in a group of point-to-point calls (or the reverse) is
  ``HCCL_E_PARA``.

The end stops at the first kept call that fails and returns its code (the group is cleared
either way).
"""
from __future__ import annotations

from ..errors import not_support, para
from ..sim.runtime import program_ctx
from .support import check_product

P2P, COLLECTIVE, MANAGEMENT = "point-to-point", "collective", "communicator management"


class Group:
    """One host program's open group: nesting depth, kind, and the kept calls."""

    __slots__ = ("depth", "kind", "p2p", "ops")

    def __init__(self):
        self.depth = 0
        self.kind = None
        self.p2p: list = []     # (comm handle, stream, (is_send, buf, nbytes, peer), nslaves)
        self.ops: list = []     # callables issuing one kept collective (or finishing a management call)

    def clear(self) -> None:
        self.kind, self.p2p, self.ops = None, [], []


def _group() -> Group:
    ctx = program_ctx()
    g = ctx.group
    if g is None:
        g = ctx.group = Group()
    return g


def active() -> bool:
    """Whether the calling host program is between ``HcclGroupStart`` and ``HcclGroupEnd``."""
    g = program_ctx().group
    return g is not None and g.depth > 0


def start(api: str = "HcclGroupStart") -> None:
    """Open (or nest) a group."""
    check_product(api)
    _group().depth += 1


def _kind(api: str, kind: str) -> Group:
    g = _group()
    if g.kind not in (None, kind):
        raise para(api, f"a {kind} call cannot join a group of {g.kind} calls (HCCL does not mix them)")
    g.kind = kind
    return g


def keep_p2p(api: str, comm_handle, stream, is_send: bool, buf: int, nbytes: int, peer: int) -> None:
    """Keep a checked ``HcclSend`` / ``HcclRecv`` for the end of the group."""
    _kind(api, P2P).p2p.append((comm_handle, stream, (is_send, buf, nbytes, peer)))


def keep_collective(api: str, enqueue) -> None:
    """Keep a checked collective (``enqueue()`` issues it) for the end of the group."""
    from ..sim import current_sim
    if current_sim().runtime.product.is_950:
        raise not_support(api, f"{current_sim().runtime.product.name} does not merge collectives in a group")
    _kind(api, COLLECTIVE).ops.append(enqueue)


def keep_operator(enqueue) -> None:
    """Keep an operator of ``HcclGroupEnqueueOp`` (``enqueue()`` launches it): any kind of group,
    on every product that has groups; it runs after the group's point-to-point batches."""
    _group().ops.append(enqueue)


def keep_management(api: str, finish) -> None:
    """Keep the rest of a communicator init or destroy (``finish()``) for the end of the group."""
    _kind(api, MANAGEMENT).ops.append(finish)


def refuse_batch(api: str) -> None:
    """``HcclBatchSendRecv`` has no place in a group."""
    if active():
        raise not_support(api, "HcclBatchSendRecv cannot be called between HcclGroupStart and HcclGroupEnd")


def end(api: str = "HcclGroupEnd") -> tuple:
    """Close a group. The outermost end returns what it kept and clears the group:
    ``(batches, ops)``, ``batches`` a list of ``(comm handle, stream, items)`` (the point-to-point
    calls of one communicator and stream, in call order: one batch each), ``ops`` the kept
    collectives and operators, in call order; an inner end returns ``([], [])``.
    :func:`.dispatch.end_group` runs them (the batches first)."""
    check_product(api)
    g = _group()
    if g.depth == 0:
        raise para(api, "HcclGroupEnd without HcclGroupStart")
    g.depth -= 1
    if g.depth:
        return [], []
    p2p, ops = g.p2p, g.ops
    g.clear()
    batches: dict = {}
    for comm_handle, stream, item in p2p:
        batches.setdefault((comm_handle, stream), []).append(item)
    return [(comm_handle, stream, items) for (comm_handle, stream), items in batches.items()], ops
