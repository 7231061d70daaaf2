"""The DSL's resources and values: ``Variable``, ``Address``, ``Event``, ``CcuBuffer``, ``LocalAddr``,
``RemoteAddr``, ``Array``, ``GetResByChannel`` (``AscendC::ccu``'s names).

Making one allocates a register of the kernel's die from the instance (:mod:`.recorder`); an
``Array`` allocates contiguous ones (what loop groups' clone offsets need). Values are computed
when the kernel runs, not when it is recorded: ``v.assign(x)`` (an int, another register or an
expression such as ``a + b``), ``v += x``; a comparison (``v != 0``, ``v < w``) is a condition for
``ccu.If``, never a Python bool. ``LocalAddr`` / ``RemoteAddr`` hold an address register and a
token variable: ``.addr`` / ``.token`` are the registers, and assigning either (``dst.addr = src.addr``)
records a copy of the value, as C++'s ``operator=`` does (never an alias).
"""
from __future__ import annotations

from ..defs.ccu import CCU_CHANNEL_VARIABLES, CcuResult as C
from ..hcomm.resources.ccu_pool import R, ccu_error
from .program import CKE, GSA, MS, XN, ChanVar, Cond, Expr, Reg
from .recorder import current

_SPACE = {XN: R.HCOMM_CCU_RES_TYPE_VARIABLE, GSA: R.HCOMM_CCU_RES_TYPE_ADDRESS, CKE: R.HCOMM_CCU_RES_TYPE_EVENT,
          MS: R.HCOMM_CCU_RES_TYPE_CCU_BUF}


def operand(value, name: str):
    """What an instruction reads: a register of a Variable / Address, an expression, or an int."""
    if isinstance(value, (Variable, Address)):
        return value.ref
    if isinstance(value, Expr):
        return value
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 1 << 64:
        raise ccu_error(C.CCU_E_PARA, name, f"{value!r} is not a Variable, an Address, an expression or a uint64")
    return value


class _Res:
    """A resource: one register of the kernel's die (allocated, bound to a reservation, or given)."""

    __slots__ = ("ref",)
    space = XN
    kind_name = "Variable"

    def __init__(self, handle=None, index: int = 0, _ref=None):
        if _ref is not None:
            self.ref = _ref
        elif handle is not None:
            self.ref = _reserved(self.space, handle, index, self.kind_name)
        else:
            rec = current(f"ccu.{self.kind_name}")
            start = rec.take(_SPACE[self.space], 1)
            self.ref = Reg(self.space, start, start + 1)

    __hash__ = object.__hash__

    def __repr__(self):
        return f"<ccu.{self.kind_name} {self.ref!r}>"


class _Value(_Res):
    """What Variable and Address share: assignments, arithmetic, comparisons."""

    __slots__ = ()

    def assign(self, value):
        """Record ``self = value`` (an int, a Variable / Address, an expression)."""
        name = f"ccu.{self.kind_name}.assign"
        current(name).emit("assign", name, dst=self.ref, value=operand(value, name))
        return C.CCU_SUCCESS

    def _update(self, op: str, other):
        name = f"ccu.{self.kind_name} {op}="
        current(name).emit("assign", name, dst=self.ref, value=Expr(op, self.ref, operand(other, name)))
        return self

    def __iadd__(self, other):
        return self._update("+", other)

    def __isub__(self, other):
        return self._update("-", other)

    def __add__(self, other):
        return Expr("+", self.ref, operand(other, "ccu +"))

    def __sub__(self, other):
        return Expr("-", self.ref, operand(other, "ccu -"))

    __hash__ = _Res.__hash__

    def _cond(self, cmp, other):
        return Cond(self.ref, cmp, operand(other, f"ccu {cmp}"))

    def __eq__(self, other):
        return self._cond("==", other)

    def __ne__(self, other):
        return self._cond("!=", other)

    def __lt__(self, other):
        return self._cond("<", other)

    def __le__(self, other):
        return self._cond("<=", other)

    def __gt__(self, other):
        return self._cond(">", other)

    def __ge__(self, other):
        return self._cond(">=", other)

    def __bool__(self):
        raise TypeError(f"a CCU {self.kind_name} has no value while the kernel is recorded (it exists when the "
                        "kernel runs): compare it inside ccu.If(...)")


class Variable(_Value):
    """A 64-bit variable (XN). ``Variable()`` allocates one; ``Variable(handle, index)`` binds register
    ``index`` of a reservation (``HcommCcuVariableAlloc``)."""

    __slots__ = ()

    def __imul__(self, other):
        return self._update("*", other)

    def __mul__(self, other):
        return Expr("*", self.ref, operand(other, "ccu *"))

    def __and__(self, other):
        return Expr("&", self.ref, operand(other, "ccu &"))

    def __or__(self, other):
        return Expr("|", self.ref, operand(other, "ccu |"))

    def __xor__(self, other):
        return Expr("^", self.ref, operand(other, "ccu ^"))

    def __invert__(self):
        return Expr("~", self.ref)


class Address(_Value):
    """An address register (GSA): assignments and additions only."""

    __slots__ = ()
    space = GSA
    kind_name = "Address"


class Event(_Res):
    """A 16-bit event register (CKE): ``EventRecord`` / ``EventWait`` and the moves' completion masks."""

    __slots__ = ()
    space = CKE
    kind_name = "Event"


class CcuBuffer(_Res):
    """A CCU buffer slice (MS, 4 KiB)."""

    __slots__ = ()
    space = MS
    kind_name = "CcuBuffer"


def _reserved(space, handle, index, kind_name):
    """The register ``index`` of reservation ``handle`` (the kernel's die and instance)."""
    from ..hcomm.resources.ccu_reserve import get_reservation
    name = f"ccu.{kind_name}"
    rec = current(name)
    res = get_reservation(handle, _SPACE[space], name)
    if res.instance is not rec.instance or res.die != rec.die:
        raise ccu_error(C.CCU_E_PARA, name, f"reservation {handle} is of another instance or die")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < res.num:
        raise ccu_error(C.CCU_E_PARA, name, f"index {index!r} is outside [0, {res.num})")
    return Reg(space, res.start + index, res.start + res.num)


class _Addr:
    """What LocalAddr and RemoteAddr are: an Address and a token Variable."""

    __slots__ = ("_addr", "_token")
    remote = False

    def __init__(self, addr=None, token=None, _regs=None):
        if _regs is not None:
            self._addr, self._token = _regs
            return
        self._addr, self._token = Address(), Variable()
        if addr is not None:
            self._addr.assign(addr)
        if token is not None:
            self._token.assign(token)

    @property
    def addr(self) -> Address:
        return self._addr

    @addr.setter
    def addr(self, value) -> None:
        if value is not self._addr:
            self._addr.assign(value)

    @property
    def token(self) -> Variable:
        return self._token

    @token.setter
    def token(self, value) -> None:
        if value is not self._token:
            self._token.assign(value)

    def set(self, addr, token):
        """Record both assignments."""
        self.addr, self.token = addr, token
        return C.CCU_SUCCESS

    def __repr__(self):
        return f"<ccu.{type(self).__name__} {self._addr.ref!r} token {self._token.ref!r}>"


class LocalAddr(_Addr):
    """Memory of this device: an address and its token (``HcommCcuGetMemToken``)."""

    __slots__ = ()


class RemoteAddr(_Addr):
    """Memory of the channel's peer: an address and the peer's token."""

    __slots__ = ()
    remote = True


_ARRAYS = {Variable: XN, Address: GSA, Event: CKE, CcuBuffer: MS}


class Array:
    """``n`` contiguous resources of ``kind`` (Variable, Address, Event, CcuBuffer, LocalAddr,
    RemoteAddr); ``Array(Variable, n, handle=h)`` binds ``n`` registers of a reservation."""

    def __init__(self, kind, n: int, handle=None):
        name = "ccu.Array"
        if isinstance(n, bool) or not isinstance(n, int) or n < 0:
            raise ccu_error(C.CCU_E_PARA, name, f"n {n!r} must be a non-negative int")
        self.kind = kind
        if kind in (LocalAddr, RemoteAddr):
            addrs, tokens = Array(Address, n), Array(Variable, n)
            self.items = [kind(_regs=(a, t)) for a, t in zip(addrs, tokens)]
            return
        space = _ARRAYS.get(kind)
        if space is None:
            raise ccu_error(C.CCU_E_PARA, name, f"an Array holds Variable, Address, Event, CcuBuffer, LocalAddr or "
                                                f"RemoteAddr, not {kind!r}")
        if handle is not None:
            regs = [_reserved(space, handle, i, kind.kind_name) for i in range(n)]
        else:
            start = current(name).take(_SPACE[space], n) if n else 0
            regs = [Reg(space, start + i, start + n) for i in range(n)]
        self.items = [kind(_ref=r) for r in regs]

    def __getitem__(self, i):
        return self.items[i]

    def __len__(self):
        return len(self.items)

    def __iter__(self):
        return iter(self.items)

    def size(self) -> int:
        return len(self.items)


def channel_end(channel, name: str):
    """The end of a CCU channel the kernel uses (``CCU_E_PARA`` for anything else)."""
    from ..sim import current_sim
    rec = current(name)
    end = current_sim().handles.channels.get(channel) if type(channel) is int and channel else None
    if end is None or end.registers is None or end.closed:
        raise ccu_error(C.CCU_E_PARA, name, f"channel {channel!r} is not a live CCU channel (HcclChannelAcquire with "
                                            "COMM_ENGINE_CCU)")
    if end.comm.device != rec.device:
        raise ccu_error(C.CCU_E_PARA, name, f"channel 0x{channel:x} is of device {end.comm.device}, the kernel's "
                                            f"instance of device {rec.device}")
    if rec.die != CHANNEL_DIE:
        raise ccu_error(C.CCU_E_PARA, name, f"channel 0x{channel:x} is on IO die {CHANNEL_DIE}, the kernel is "
                                            f"registered on die {rec.die}")
    rec.use_channel(end)
    return end


#: The IO die of every UB endpoint in pyhcomm's topology (``HcclRankGraphGetEndpointInfo``'s
#: ``ENDPOINT_ATTR_DIE_ID`` on Atlas 350): a kernel that uses channels runs on it.
CHANNEL_DIE = 0


def GetResByChannel(kind, channel, index: int):  # noqa: N802
    """Variable slot ``index`` of this end of ``channel`` (the slot its peer's
    ``WriteVariableWithNotify`` writes). Only Variables exist by channel."""
    name = "ccu.GetResByChannel"
    if kind is not Variable:
        raise ccu_error(C.CCU_E_PARA, name, "GetResByChannel gives Variables only")
    end = channel_end(channel, name)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < CCU_CHANNEL_VARIABLES:
        raise ccu_error(C.CCU_E_PARA, name, f"index {index!r} is outside [0, {CCU_CHANNEL_VARIABLES})")
    return Variable(_ref=ChanVar(end, index))


__all__ = ["Variable", "Address", "Event", "CcuBuffer", "LocalAddr", "RemoteAddr", "Array", "GetResByChannel"]
