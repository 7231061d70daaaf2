"""What a registered CCU kernel is: its instructions, as data (the recorder makes them, a mission runs them).

Operands: :class:`Reg` (a register of the kernel's die: a variable ``xn``, an address ``gsa``, an
event ``cke``, a CCU buffer ``ms``; ``end`` is the end of the block it was allocated in, the bound a
loop group's clone offsets must stay within), :class:`ChanVar` (a variable slot of one of the
kernel's channel ends), :class:`Expr` (arithmetic on operands, evaluated when the instruction runs)
and plain ints (immediates). Instructions are :class:`Op` values: ``code`` says which, ``site`` is
the kernel source line that recorded it (``(code, offset)``, see :mod:`pyhcomm.sim.task`), the
other attributes its operands.
"""
from __future__ import annotations

XN, GSA, CKE, MS = "xn", "gsa", "cke", "ms"
MASK64 = (1 << 64) - 1


class Reg:
    """A register of the kernel's die: ``space`` (``xn``, ``gsa``, ``cke``, ``ms``), its id, the end
    of its block (exclusive)."""

    __slots__ = ("space", "id", "end")

    def __init__(self, space: str, rid: int, end: int):
        self.space, self.id, self.end = space, rid, end

    def shifted(self, by: int) -> "Reg":
        return Reg(self.space, self.id + by, self.end) if by else self

    def __repr__(self):
        return f"{self.space}[{self.id}]"


class ChanVar:
    """Variable slot ``index`` of channel end ``channel`` (a :class:`~pyhcomm.hcomm.resources.channel.ChannelEnd`)."""

    __slots__ = ("channel", "index")

    def __init__(self, channel, index: int):
        self.channel, self.index = channel, index

    def __repr__(self):
        return f"channel 0x{self.channel.handle:x} variable {self.index}"


class Expr:
    """``a <op> b`` (``op``: ``+ - * & | ^``, or ``~`` with ``b`` None), evaluated when it runs."""

    __slots__ = ("op", "a", "b")

    def __init__(self, op: str, a, b=None):
        self.op, self.a, self.b = op, a, b

    def __repr__(self):
        return f"~{self.a!r}" if self.op == "~" else f"({self.a!r} {self.op} {self.b!r})"


#: Expression operators on two 64-bit values.
BINARY = {"+": lambda a, b: (a + b) & MASK64, "-": lambda a, b: (a - b) & MASK64,
          "*": lambda a, b: (a * b) & MASK64, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
          "^": lambda a, b: a ^ b}
#: Conditions (``CcuConditionType``): name -> test.
COMPARE = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
           ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


class Cond:
    """``lhs <cmp> rhs`` of a runtime branch (``ccu.If``)."""

    __slots__ = ("lhs", "cmp", "rhs")

    def __init__(self, lhs, cmp: str, rhs):
        self.lhs, self.cmp, self.rhs = lhs, cmp, rhs

    def __bool__(self):
        raise TypeError("a CCU condition has no value while the kernel is recorded: branch on it with "
                        "`with ccu.If(cond):` (a Python `if` decides once, at registration)")

    def __repr__(self):
        return f"{self.lhs!r} {self.cmp} {self.rhs!r}"


class Mem:
    """A memory operand: an address register and a token register (``LocalAddr`` / ``RemoteAddr``)."""

    __slots__ = ("addr", "token", "remote")

    def __init__(self, addr: Reg, token, remote: bool):
        self.addr, self.token, self.remote = addr, token, remote

    def shifted(self, _by: int) -> "Mem":
        return self


class Buf:
    """A CCU buffer operand: its first slice (a move may run on into the next slices of its block)."""

    __slots__ = ("reg",)

    def __init__(self, reg: Reg):
        self.reg = reg

    def shifted(self, by: int) -> "Buf":
        return Buf(self.reg.shifted(by)) if by else self


class Op:
    """One instruction (see the module docstring)."""

    __slots__ = ("code", "site", "f")

    def __init__(self, code: str, site, **fields):
        self.code, self.site, self.f = code, site, fields

    def __getattr__(self, name):
        try:
            return self.f[name]
        except KeyError:
            raise AttributeError(name) from None

    def __repr__(self):
        return f"<{self.code} {self.f}>"


class Loop:
    """A loop's body (moves and waits) and how it gets its iteration count and address stride:
    ``param`` (a packed variable: ``ctxId << 45 | stride << 13 | iterations``), ``config``
    (``(iterations, stride)`` constants) or ``v2`` (two variables: iterations, stride)."""

    __slots__ = ("body", "param", "config", "v2", "site")

    def __init__(self, body: list, site, param=None, config=None, v2=None):
        self.body, self.site, self.param, self.config, self.v2 = body, site, param, config, v2


class Kernel:
    """A registered kernel (``CcuKernelHandle``): its program and what it took of its instance."""

    def __init__(self, name: str, instance, die: int, device: int, program: list, arg_ids: frozenset,
                 instructions: int, channels: tuple):
        self.name, self.instance, self.die, self.device = name, instance, die, device
        self.program, self.arg_ids, self.count = program, arg_ids, instructions
        self.channels = channels
        self.instructions = None        # (first, count) of its die's instruction pool, once translated
        self.handle = 0

    @property
    def ready(self) -> bool:
        """Translated (``HcommCcuKernelRegisterEnd``): it may be launched."""
        return self.instructions is not None

    @property
    def task_args(self) -> int:
        """``HcommCcuGetTaskArgsNum``: the largest ``LoadArg`` id plus one (0: none)."""
        return max(self.arg_ids) + 1 if self.arg_ids else 0

    def __repr__(self):
        return f"<CCU kernel {self.name!r} die {self.die}: {self.count} instructions>"
