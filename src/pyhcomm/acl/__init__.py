"""The acl facade: pyACL's names and conventions over the simulated runtime.

``value, ret = acl.rt.malloc(size, policy)``; calls without outputs return ``ret``. Errors are
``aclError`` codes, logged with their explanation (also kept for :func:`get_recent_err_msg`);
a wrong Python type raises ``TypeError`` as pyACL does.
"""
from __future__ import annotations

from ..sim.runtime import program_ctx
from ..aclrt import device as _device
from . import rt, util  # noqa: F401
from ._wrap import acl_call


@acl_call()
def init(config_path=None):
    """Initialise acl (``aclInit``)."""
    _device.aclInit(config_path)


@acl_call()
def finalize():
    """Finalise acl: close every device (``aclFinalize``)."""
    _device.aclFinalize()


def get_soc_name():
    """The SoC name of the simulated product, e.g. ``Ascend910B1``."""
    return _device.aclrtGetSocName()


def get_recent_err_msg():
    """Return and clear the explanation of this host thread's most recent acl error ("" if none)."""
    ctx = program_ctx()
    message, ctx.recent_error = ctx.recent_error, ""
    return message


__all__ = ["init", "finalize", "get_soc_name", "get_recent_err_msg", "rt", "util"]
