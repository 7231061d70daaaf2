"""The registers of a channel end whose engine has them (a CCU channel's): multi-bit sync registers
and variable slots.

A CCU channel end's notifies are sync registers (CKEs) of 16 bits: ``NotifyRecord(channel, idx, mask)``
sets the bits of ``mask`` in the peer's register ``idx``, ``NotifyWait(channel, idx, mask)`` waits for
them in this end's own and clears them. Each bit is a :class:`~pyhcomm.sim.notify.Notify` (a 1-bit
register: its records, generations and waits are what the record and the analyses see): bit ``b`` of
register ``k`` is notify ``b`` of the owner ``"<the end> CKE k"``. The variable slots are the values
``WriteVariableWithNotify`` writes into the peer's end (``GetResByChannel``: a kernel's view of its own
end's slot). The transport reaches a peer's registers (:meth:`pyhcomm.transport.base.Transport.ccu_signal`).
"""
from __future__ import annotations

from ...sim.notify import Notify


class ChannelRegisters:
    """The CKEs (``ckes[k][b]``: bit ``b`` of register ``k``) and the variable slots of one end."""

    __slots__ = ("owner", "ckes", "variables")

    def __init__(self, owner: str, ckes: int, bits: int, variables: int, counting: bool = False):
        self.owner = owner
        self.ckes = [[Notify(f"{owner} CKE {k}", b, counting) for b in range(bits)] for k in range(ckes)]
        self.variables = [0] * variables

    def bits(self, cke: int, mask: int) -> list:
        """The bit registers of ``mask`` in register ``cke``, lowest bit first."""
        row = self.ckes[cke]
        return [row[b] for b in range(len(row)) if mask >> b & 1]

    def __repr__(self):
        return f"<ChannelRegisters {self.owner}: {len(self.ckes)} CKEs, {len(self.variables)} variables>"
