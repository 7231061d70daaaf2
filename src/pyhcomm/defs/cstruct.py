"""C structs for the flat C tier: named fields with pyhccl's defaults, and raw unions.

pyhccl binds every C struct as a class whose default constructor zero-fills it (an enum field is
its value 0, a nested struct is zero-filled, a ``raws`` byte array is all zeros). A
:class:`CStruct` subclass lists its fields once in ``_fields_`` as ``(name, default)`` pairs; a
default that is a class (or any callable) is called to make a fresh value per instance.

A C union is a byte array: ``raw_bytes("raws", 128)`` makes a ``raws`` attribute (``bytes`` when
read, copied into the struct when set) and :class:`RawField` reads or writes one member of the
union at its C offset, little-endian as on the hosts CANN runs on. Writing ``raws`` is thus the
same as writing the members through it, as with the real struct.
"""
from __future__ import annotations

import struct

from ..errors import para, ptr


def raw_bytes(name: str, size: int, doc: str = ""):
    """A ``bytes`` attribute of ``size`` bytes stored in ``_<name>`` (a bytearray).

    Setting it copies the value in and zero-fills the rest; more than ``size`` bytes is a
    ``ValueError`` (a C array cannot grow)."""
    slot = "_" + name

    def get(self) -> bytes:
        return bytes(getattr(self, slot))

    def set_(self, value) -> None:
        data = bytes(value)
        if len(data) > size:
            raise ValueError(f"{type(self).__name__}.{name}: {len(data)} bytes do not fit in {size}")
        buf = getattr(self, slot)
        buf[:] = data + bytes(size - len(data))

    return property(get, set_, doc=doc or f"{size} raw bytes")


class RawField:
    """One member of a union at ``offset`` in the byte array ``_<raw>``, packed as ``fmt``
    (a :mod:`struct` code: ``"I"`` uint32, ``"i"`` int32, ``"B"`` uint8, ``"Q"`` uint64 ...)."""

    def __init__(self, raw: str, offset: int, fmt: str):
        self.slot = "_" + raw
        self.offset = offset
        self.fmt = "<" + fmt

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, obj, owner=None):
        if obj is None:
            return self
        return struct.unpack_from(self.fmt, getattr(obj, self.slot), self.offset)[0]

    def __set__(self, obj, value) -> None:
        try:
            struct.pack_into(self.fmt, getattr(obj, self.slot), self.offset, value)
        except struct.error as exc:
            raise ValueError(f"{type(obj).__name__}.{self.name}: {value!r} does not fit ({exc})") from None


class CStruct:
    """Base of the C structs: ``_fields_`` gives each field and its default, ``_raws_`` each
    byte array (``(name, size)``). Positional arguments set the fields in ``_fields_`` order,
    keyword arguments any field or union member; equality compares every field."""

    _fields_: tuple = ()
    _raws_: tuple = ()

    def __init__(self, *args, **fields):
        if len(args) > len(self._fields_):
            raise TypeError(f"{type(self).__name__} takes at most {len(self._fields_)} positional arguments")
        fields.update((name, value) for (name, _), value in zip(self._fields_, args))
        for name, size in self._raws_:
            object.__setattr__(self, "_" + name, bytearray(size))
        for name, default in self._fields_:
            setattr(self, name, default() if callable(default) else default)
        own = {n for n, _ in self._fields_}   # declared fields first: a union member may depend on one
        for name, value in sorted(fields.items(), key=lambda kv: kv[0] not in own):
            if not hasattr(self, name):
                raise TypeError(f"{type(self).__name__} has no field {name!r}")
            setattr(self, name, value)

    def _values(self) -> tuple:
        return (tuple(getattr(self, n) for n, _ in self._fields_)
                + tuple(bytes(getattr(self, "_" + n)) for n, _ in self._raws_))

    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None

    def fill(self, byte: int = 0xFF) -> None:
        """Set every byte array to ``byte`` (as ``memset`` over the struct before an ``...Init``)."""
        for name, size in self._raws_:
            getattr(self, "_" + name)[:] = bytes([byte]) * size

    def __repr__(self):
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n, _ in self._fields_)
        return f"{type(self).__name__}({shown})"


def c_string(value, api: str, name: str, max_len: int) -> str:
    """A ``char[max_len]`` field: str (or bytes up to the first NUL) of at most ``max_len - 1``
    characters; raise ``ValueError`` naming ``api`` and ``name`` otherwise."""
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).split(b"\0", 1)[0].decode("utf-8", "replace")
    if not isinstance(value, str):
        raise TypeError(f"{api}: {name} must be a str, not {type(value).__name__}")
    if len(value.encode()) >= max_len:
        raise ValueError(f"{api}: {name} has {len(value.encode())} bytes, more than {max_len - 1}")
    return value


def struct_arg(value, cls, api: str, name: str):
    """``value`` as the C struct a pointer argument points at: ``HCCL_E_PTR`` for NULL (None),
    ``HCCL_E_PARA`` for anything that is not a ``cls`` (a code, never an exception: a binding
    would have nothing to dereference)."""
    if value is None:
        raise ptr(api, f"{name} is NULL")
    if not isinstance(value, cls):
        raise para(api, f"{name} must be a {cls.__name__}, not {type(value).__name__}")
    return value


def void_struct_arg(value, cls, api: str, name: str):
    """For a ``void`` inline of the C headers (no code to return): None is ignored (NULL), a
    value that is not a ``cls`` is a ``TypeError``. Returns whether there is a struct to set."""
    if value is None:
        return False
    if not isinstance(value, cls):
        raise TypeError(f"{api}: {name} must be a {cls.__name__}, not {type(value).__name__}")
    return True
