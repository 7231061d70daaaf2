"""Point-to-point: HcclSend, HcclRecv, HcclBatchSendRecv and the grouped sends and receives, one
engine (:func:`..pairwise.batch_send_recv`: the receiver reads what the sender staged, hcomm-api
S2). A rank connects to the peers its items name, a thread per peer. No closed form yet.
"""
from __future__ import annotations

from ..algorithm import Algorithm, Implementation, Op, item_peers
from ..pairwise import batch_send_recv


def thread_per_peer(call) -> int:
    """The main thread serves the first peer, a slave each of the others."""
    return max(0, len(set(call.peers)) - 1)


P2P = Algorithm("p2p", "sends and receives: the receiver reads what the sender staged, a thread per peer", tuple(
    Implementation(op, batch_send_recv, slaves=thread_per_peer, peers=item_peers)
    for op in (Op.HCCL_CMD_SEND, Op.HCCL_CMD_RECEIVE, Op.HCCL_CMD_BATCH_SEND_RECV)))
