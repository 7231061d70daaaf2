"""Turn a raising implementation into a C-tier function that returns codes (pyhccl style)."""
from __future__ import annotations

import functools

from ..args import plain
from ..errors import HcclError, HcclResult, log
from ..sim.runtime import note_error, report_failure
from ..sim.task import end_attribution, enter_public_call

SUCCESS = HcclResult.HCCL_SUCCESS


def failed(exc: HcclError, quiet=()) -> HcclResult:
    """Log ``exc`` and return its code as an ``HcclResult``: at ERROR (see
    :func:`pyhcomm.sim.runtime.report_failure`: a failure that follows an abort is told once), at
    INFO when its code is in ``quiet`` (an answer the caller expects, as a Get before a Create).
    Either way it is the calling program's most recent error (``aclGetRecentErrMsg``)."""
    if exc.code in quiet:
        log.info("%s", exc)
        note_error(str(exc), logged=False)
    else:
        report_failure(exc)
    try:
        return HcclResult(exc.code)
    except ValueError:
        return exc.code


def _fresh(value):
    """A failure output the caller may keep and change: a new instance of a class, a list copy."""
    if isinstance(value, type):
        return value()
    return list(value) if isinstance(value, list) else value


def c_api(*fail_outputs, quiet=(), ints=False, attributed=False):
    """Decorate ``impl`` (which raises, and returns its outputs or None).

    The wrapper returns ``ret`` alone when ``fail_outputs`` is empty, else ``(ret, *outputs)``;
    on failure the outputs are ``fail_outputs``, fresh per call (a class is instantiated, as a
    binding returns its default-constructed struct; a list is copied); a failure whose code is in
    ``quiet`` is logged at INFO (see :func:`failed`). ``wrapper.raising`` is ``impl``;
    ``wrapper.fail_outputs`` and ``wrapper.quiet`` are what it was given. With ``ints``, numpy
    integers among the arguments become ``int`` first (:func:`pyhcomm.args.plain`: for calls that
    hand their scalars on, the collectives; the hot data-plane calls convert in their own checks).
    With ``attributed``, the tasks the call issues are attributed to the caller's line at once
    (:func:`pyhcomm.sim.task.enter_public_call`: one frame read instead of a walk per task; for
    data-plane calls that return ``ret`` alone).
    """
    if attributed and (fail_outputs or ints):
        raise TypeError("c_api: only a call that returns ret alone, without int conversion, is attributed")

    def deco(impl):
        n = len(fail_outputs)
        if attributed:
            return _attributed(impl, quiet)

        @functools.wraps(impl)
        def wrapper(*args):
            try:
                out = impl(*args)
            except HcclError as exc:
                code = failed(exc, quiet)
                return (code, *map(_fresh, fail_outputs)) if n else code
            if not n:
                return SUCCESS
            return (SUCCESS, *out) if n > 1 else (SUCCESS, out)

        wrapper.raising = impl
        wrapper.fail_outputs, wrapper.quiet = fail_outputs, quiet
        if not ints:
            return wrapper
        plain_wrapper = functools.wraps(impl)(lambda *args: wrapper(*[plain(a) for a in args]))
        plain_wrapper.raising = impl
        plain_wrapper.fail_outputs, plain_wrapper.quiet = fail_outputs, quiet
        return plain_wrapper

    return deco


def _attributed(impl, quiet):
    """``c_api(attributed=True)``'s wrapper of ``impl``."""

    @functools.wraps(impl)
    def call(*args):
        token = enter_public_call()
        try:
            impl(*args)
        except HcclError as exc:
            return failed(exc, quiet)
        finally:
            if token is not None:
                end_attribution(token)
        return SUCCESS

    call.raising = impl
    call.fail_outputs, call.quiet = (), quiet
    return call
