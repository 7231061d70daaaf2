"""pyACL's return convention: ``(value, ret)`` for calls with an output, ``ret`` otherwise."""
from __future__ import annotations

import functools

from ..errors import AclError, HcclError
from ..sim.runtime import report_failure


def acl_call(*fail_outputs):
    """Wrap a raising implementation: outputs first, then ``ret``; ``fail_outputs`` on error."""

    def deco(impl):
        n = len(fail_outputs)

        @functools.wraps(impl)
        def wrapper(*args, **kwargs):
            try:
                out = impl(*args, **kwargs)
            except HcclError as exc:
                report_failure(exc)
                try:
                    code = AclError(exc.code)
                except ValueError:
                    code = exc.code
                return (*fail_outputs, code) if n else code
            if not n:
                return AclError.ACL_SUCCESS
            return (*out, AclError.ACL_SUCCESS) if n > 1 else (out, AclError.ACL_SUCCESS)

        wrapper.raising = impl
        return wrapper

    return deco
