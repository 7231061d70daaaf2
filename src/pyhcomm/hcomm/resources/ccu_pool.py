"""CCU resources: the pools of each IO die, resource descriptors, instances, and what a die holds.

Each device of Atlas 350 has two IO dies (``CCU_MAX_IODIE_NUM``), each with a CCU whose resources are
pools of numbered registers (:mod:`.engines.ccu` gives their totals and sources): missions
(``CCU_THREAD``), loops, variables (XN), addresses (GSA), events (CKE), CCU buffers (MS: 4 KiB slices),
instructions and cascade counters. A die can be disabled (``PYHCOMM_CCU_DIES``: the enabled dies of
every device; both by default).

* A resource descriptor (``HcommCcuInsResDescCreate``) names one die and a count per type.
* An instance (``HcommCcuInsCreate``) takes a contiguous block of each type on each die of its
  descriptors (counts rounded up to the type's granule), at once or not at all; missions in
  "fused" mode (the largest count asked, the same range on every enabled die). Instructions are not
  taken then: each kernel takes what it needs when its registration round ends. An instance hands
  its blocks out (:meth:`Instance.take`) to the kernels registered on it and to reservations
  (``HcommCcuVariableAlloc`` ...); they are given back only when the instance is destroyed.
* A die keeps the values of its registers between launches (:class:`Die`): variables and
  addresses (64-bit values), events (16-bit CKEs: a :class:`~pyhcomm.sim.notify.Notify` per bit, as
  a channel's, :mod:`.channel_registers`), the bytes of its CCU buffers (``Die.ms_storage``, data
  mode) at pseudo device addresses of their own (``Die.ms_addr``: what the record and the race
  detector see of them).

Memory tokens: a device's memory has one token (``mem_token``), what ``HcommCcuGetMemToken`` gives
for any of it; a CCU move checks that the token it is given is the token of the memory it touches.
pyhcomm's inference: example 05 takes its input buffer's token and uses it for its output buffer
(and for its peers' output buffers), so a token cannot be narrower than the device's memory.

State lives in the Sim (:func:`ccu_state`); a released device drops its dies, instances and descriptors.
"""
from __future__ import annotations

import contextvars

from ...defs.ccu import CCU_CKE_BITS, CCU_MAX_IODIE_NUM, CCU_MS_SIZE, CcuResult, HcommCcuResType
from ...errors import HcclError
from ...sim import LayerState, current_sim
from ...sim import memory
from ...sim.handles import HandleTable
from ...sim.notify import Notify
from .engines import ccu as _ccu_engine

R = HcommCcuResType
#: The resource types a descriptor counts (``HcommCcuResType`` without INVALID).
TYPES = tuple(t for t in R if t != R.HCOMM_CCU_RES_TYPE_INVALID)
#: Where pseudo addresses of CCU registers and buffers start in each device's address space: the top
#: 16 GiB of its 1 TiB (no allocation of pyhcomm's reaches there).
_WINDOW = memory.DEVICE_VA_STRIDE - (16 << 30)
#: Bytes of the pseudo address range of each die (registers, then buffers).
_DIE_SPAN = 4 << 30
#: A cascade counter block: 1022 counters, then the total and the expected count (``ccu_res.h``).
CASC_CNT_XN = 1024
TOKEN_BASE = 0x70CE_0000_0000_0000
#: Where the pseudo addresses of channel variable slots start (above every device's addresses).
_SLOTS_BASE = 0x7C00_0000_0000
#: The kernel registration running in this context (:mod:`pyhcomm.ccu`'s recorder), else None: host
#: calls that a kernel function must not make ask it.
recording_var: contextvars.ContextVar = contextvars.ContextVar("pyhcomm_ccu_recording", default=None)


class CcuError(HcclError):
    """A CCU call's failure: ``code`` is a ``CcuResult`` (the flat tier returns it)."""

    def __init__(self, code, api: str, message: str):
        super().__init__(CcuResult(code), api, message)


def ccu_error(code, api: str, message: str) -> CcuError:
    return CcuError(code, api, message)


def slot_addr(key, owner_rank: int, slot: int) -> int:
    """The pseudo address of variable slot ``slot`` of the end that rank ``owner_rank`` holds of the
    channel ``key`` (the channel's pairing key: both ends name the same address): what the record and
    the race detector see of a ``WriteVariableWithNotify`` and of a read of the slot."""
    return _SLOTS_BASE + ((hash((key, owner_rank)) & 0xFF_FFFF_FFFF) << 6) + slot * 8


def mem_token(device: int) -> int:
    """The CCU memory token of ``device``'s memory (see the module docstring)."""
    return TOKEN_BASE | device


class Pool:
    """One type's registers on one die: contiguous free ranges, first fit."""

    __slots__ = ("total", "free")

    def __init__(self, total: int):
        self.total = total
        self.free = [(0, total)] if total else []

    def take(self, n: int):
        """The start of ``n`` contiguous registers, now taken; None when no free range is that long."""
        for i, (lo, hi) in enumerate(self.free):
            if hi - lo >= n:
                if hi - lo == n:
                    del self.free[i]
                else:
                    self.free[i] = (lo + n, hi)
                return lo
        return None

    def give(self, start: int, n: int) -> None:
        """Give ``n`` registers from ``start`` back (merged with their free neighbours)."""
        if not n:
            return
        ranges = sorted(self.free + [(start, start + n)])
        merged = [ranges[0]]
        for lo, hi in ranges[1:]:
            if lo <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(hi, merged[-1][1]))
            else:
                merged.append((lo, hi))
        self.free = merged

    def largest(self) -> int:
        """The longest run of free registers."""
        return max((hi - lo for lo, hi in self.free), default=0)


class Die:
    """One IO die of one device: its pools and the values its registers keep."""

    def __init__(self, device: int, die: int, totals: dict, enabled: bool):
        self.device, self.die, self.enabled = device, die, enabled
        self.pools = {t: Pool(totals.get(t, 0)) for t in TYPES}
        self.xn: dict = {}          # variable id -> value
        self.gsa: dict = {}         # address id -> value
        self._cke: dict = {}        # event id -> its 16 bit registers
        self.ms_storage = None      # the bytes of its CCU buffers (data mode), made on first use
        self.base = memory.DEVICE_VA_BASE + device * memory.DEVICE_VA_STRIDE + _WINDOW + die * _DIE_SPAN
        ms = self.pools[R.HCOMM_CCU_RES_TYPE_CCU_BUF].total * CCU_MS_SIZE
        if ms:          # (what race reports say of its buffers' pseudo addresses)
            current_sim().record.note_allocation(_Noted(self.ms_addr(0), ms, device, f"CCU buffers (IO die {die})"))

    def cke(self, cid: int) -> list:
        """The bit registers of event ``cid`` (made on first use)."""
        bits = self._cke.get(cid)
        if bits is None:
            owner = f"device {self.device} die {self.die} CKE {cid}"
            counting = current_sim().runtime.notify_counting
            bits = self._cke[cid] = [Notify(owner, b, counting) for b in range(CCU_CKE_BITS)]
        return bits

    def register_addr(self, rtype, rid: int) -> int:
        """The address a host sees register ``rid`` of ``rtype`` at (``HcommCcuVariableGetAddr`` ...)."""
        return self.base + (int(rtype) << 24) + rid * 8

    def ms_addr(self, mid: int) -> int:
        """The pseudo device address of CCU buffer slice ``mid``."""
        return self.base + (1 << 30) + mid * CCU_MS_SIZE

    def ms(self):
        """The storage of this die's CCU buffers (every slice, ``CCU_MS_SIZE`` bytes each)."""
        if self.ms_storage is None:
            sim = current_sim()
            self.ms_storage = sim.backend.allocate(self.pools[R.HCOMM_CCU_RES_TYPE_CCU_BUF].total * CCU_MS_SIZE)
        return self.ms_storage


class _Noted:
    """A range the record notes as an allocation (for reports), though no memory backs it."""

    __slots__ = ("addr", "size", "device", "owner")

    def __init__(self, addr, size, device, owner):
        self.addr, self.size, self.device, self.owner = addr, size, device, owner


class ResDesc:
    """A resource descriptor: a die and a count per type (``HcommCcuResDescHandle``)."""

    def __init__(self, device: int, die: int):
        self.device, self.die = device, die
        self.nums = {t: 0 for t in TYPES}
        self.handle = 0


class Instance:
    """A CCU instance (``CcuInsHandle``): its blocks on each die and what it handed out of them."""

    def __init__(self, device: int, blocks: dict):
        self.device = device
        self.blocks = blocks            # die -> {type: (start, count)}
        self.used = {die: {t: 0 for t in TYPES} for die in blocks}
        self.owner = None               # the communicator it was assigned to (it destroys it)
        self.own = False                # a communicator's own (HcclCommQueryCcuIns)
        self.kernels: list = []         # its kernels, registered or in the open round
        self.round = None               # the kernels of the open registration round (None: none open)
        self.casc_blocks: dict = {}     # die -> the first variable of each of its cascade counter blocks
        self.casc: dict = {}            # die -> how many of them were handed out
        self.taken: list = []           # (die, type, start, count) of every block taken from the pools
        self.destroyed = False
        self.handle = 0

    def take(self, die: int, rtype, n: int, api: str) -> int:
        """``n`` more registers of ``rtype`` on ``die``: the id of the first (contiguous);
        ``CCU_E_UNAVAIL`` past what the instance holds there."""
        block = self.blocks.get(die, {}).get(rtype, (0, 0))
        used = self.used.get(die)
        if used is None or used[rtype] + n > block[1]:
            have = 0 if used is None else block[1] - used[rtype]
            raise ccu_error(CcuResult.CCU_E_UNAVAIL, api, f"CCU instance {self.handle} has {have} "
                            f"{R(rtype).name[len('HCOMM_CCU_RES_TYPE_'):]} left on die {die}, {n} more are needed")
        start = block[0] + used[rtype]
        used[rtype] += n
        return start

    def mark(self) -> dict:
        """What it handed out so far (to :meth:`rollback` to)."""
        return {die: dict(used) for die, used in self.used.items()}

    def rollback(self, mark: dict) -> None:
        self.used = {die: dict(used) for die, used in mark.items()}


class CcuState(LayerState):
    """The CCU's state in one Sim (:func:`ccu_state`)."""

    def __init__(self):
        self.descs = HandleTable("CCU resource descriptor", 0xCC0D_0000, 1)
        self.instances = HandleTable("CCU instance", 1, 1)          # valid handles start from 1
        self.kernels = HandleTable("CCU kernel", 0xCC0C_0000_0000, 0x10)
        self.reservations = HandleTable("CCU reservation", 0xCC0A_0000_0000, 0x10)
        self.dies: dict = {}            # (device, die) -> Die
        self.lanes: dict = {}           # thread handle -> {lane key: stream} (pyhcomm.ccu's missions)

    def die(self, device: int, die: int) -> Die:
        """Die ``die`` of ``device`` (made on first use from the product's totals)."""
        d = self.dies.get((device, die))
        if d is None:
            sim = current_sim()
            enabled = die in sim.config.ccu_dies
            d = self.dies[(device, die)] = Die(device, die, _ccu_engine.die_totals(sim.runtime.product), enabled)
        return d

    def release_device(self, sim, device_id: int) -> None:
        for key in [k for k in self.dies if k[0] == device_id]:
            del self.dies[key]
        for table in (self.instances, self.descs, self.kernels, self.reservations):
            for h, obj in list(table.by_handle.items()):
                if getattr(obj, "device", None) == device_id:
                    table.remove(h)


def ccu_state(sim=None) -> CcuState:
    """The CCU's state in ``sim`` (default: the current Sim)."""
    return (sim or current_sim()).layer_state(CcuState)


def check_product(api: str) -> None:
    """``HCCL_E_NOT_SUPPORT`` (5, ``CCU_E_NOT_SUPPORT``) where the product has no CCU."""
    product = current_sim().runtime.product
    if not _ccu_engine.die_count(product):
        raise ccu_error(CcuResult.CCU_E_NOT_SUPPORT, api, f"{product.name} has no CCU (Atlas 350 only)")


def check_die(die, api: str, name: str = "dieId") -> int:
    if isinstance(die, bool) or not isinstance(die, int) or not 0 <= die < CCU_MAX_IODIE_NUM:
        raise ccu_error(CcuResult.CCU_E_PARA, api, f"{name} {die!r} is outside [0, {CCU_MAX_IODIE_NUM})")
    return die


def current_device(api: str) -> int:
    dev = current_sim().runtime.current_device()
    if dev is None:
        raise ccu_error(CcuResult.CCU_E_INTERNAL, api, "no current device: call aclrtSetDevice first")
    return dev.id


def rounded(rtype, n: int) -> int:
    """``n`` rounded up to ``rtype``'s granule."""
    g = _ccu_engine.GRANULES.get(rtype, 1)
    return -(-n // g) * g
