"""Turn a raising implementation into a C-tier function that returns codes (pyhccl style)."""
from __future__ import annotations

import functools

from ..errors import HcclError, HcclResult, log

SUCCESS = HcclResult.HCCL_SUCCESS


def failed(exc: HcclError) -> HcclResult:
    """Log ``exc`` and return its code as an ``HcclResult``."""
    log.error("%s", exc)
    try:
        return HcclResult(exc.code)
    except ValueError:
        return exc.code


def c_api(*fail_outputs):
    """Decorate ``impl`` (which raises, and returns its outputs or None).

    The wrapper returns ``ret`` alone when ``fail_outputs`` is empty, else ``(ret, *outputs)``;
    on failure the outputs are ``fail_outputs``. ``wrapper.raising`` is ``impl``.
    """

    def deco(impl):
        n = len(fail_outputs)

        @functools.wraps(impl)
        def wrapper(*args):
            try:
                out = impl(*args)
            except HcclError as exc:
                code = failed(exc)
                return (code, *fail_outputs) if n else code
            if not n:
                return SUCCESS
            return (SUCCESS, *out) if n > 1 else (SUCCESS, out)

        wrapper.raising = impl
        return wrapper

    return deco
