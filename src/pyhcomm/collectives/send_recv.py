"""Point-to-point Send/Recv by one-sided read: scenario S2 of hcomm-api §8 (EX04).

The sender stages its data in its own HCCL buffer; the receiver reads it from there. One thread
per rank, one channel between the two ranks (run with ``peers=[peer]``). Per loop, ``S`` bytes
(the whole HCCL buffer)::

    sender   : copy in[k] -> ccl --> record peer ACK ............................... wait DATA | loop k+1
    receiver :                       wait ACK --> Read(out[k] <- peer ccl) --> record peer DATA | loop k+1

ACK says "chunk k is staged"; DATA says "I have read it", so the sender neither overwrites its
HCCL buffer nor lets its stream complete before the read is done. A Send is therefore a
rendezvous: two ranks that exchange data order their calls oppositely (one sends first, the
other receives first); both sending first, or both receiving first, is a deadlock, which the
scheduler reports naming the notify each side waits for. The two directions of a pair use
disjoint notifies (a rank's ACK is recorded by its peer's Sends only and waited by its own Recvs;
DATA the other way round), so they never confuse each other's handshakes.
"""
from __future__ import annotations

from ..hcomm.local import local_copy
from .context import buffer_parts, chunk_bytes
from .patterns import ACK, DATA, pull, record, wait


@buffer_parts(lambda n: 1)
def send(ctx, buf: int, nbytes: int, peer: int) -> None:
    """Issue the sender's side: ``nbytes`` at ``buf`` to ``peer``."""
    t, ch = ctx.main, ctx.channel(peer)
    chunk = chunk_bytes(ctx, 1)
    for done in range(0, nbytes, chunk):
        local_copy(t, ctx.ccl, buf + done, min(chunk, nbytes - done))
        record(t, ch, ACK)
        wait(t, ch, DATA)


@buffer_parts(lambda n: 1)
def recv(ctx, buf: int, nbytes: int, peer: int) -> None:
    """Issue the receiver's side: ``nbytes`` from ``peer`` into ``buf``."""
    t, ch = ctx.main, ctx.channel(peer)
    chunk = chunk_bytes(ctx, 1)
    for done in range(0, nbytes, chunk):
        pull(t, ch, buf + done, ctx.peer_ccl(peer), min(chunk, nbytes - done))
