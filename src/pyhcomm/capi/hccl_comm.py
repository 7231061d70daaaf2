"""``hccl_comm.h``: communicator lifecycle, in the flat C tier."""
from __future__ import annotations

from .. import args as argcheck
from ..defs.cstruct import void_struct_arg
from ..collectives import group as _group
from ..enums import COMM_NAME_MAX_LENGTH
from ..defs.hccl_types import HcclRootInfo
from ..defs.hccl_types import (BUFFER_NAME_MAX_LENGTH, HCCL_COMM_ALGO_MAX_LENGTH, HCCL_COMM_DEFAULT_BUFFSIZE,  # noqa: F401
                               HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE, UDI_MAX_LENGTH, HcclCMDType, HcclCommConfig,
                               HcclCommConfigCapability, HcclCommStatePhase, HcclCommStatus, HcclConfig,
                               HcclConfigType, HcclOpExpansionMode, HcclSendRecvItem, HcclSendRecvType,
                               comm_config_init)
from ..errors import HcclGetErrorString  # noqa: F401  (re-exported: it lives in hccl.h)
from ..errors import para as _para
from ..errors import ptr as _ptr
from ..hccl import comm_config as _cfg
from ..args import sequence
from ..hccl import subcomm as _subcomm
from ..hccl import comm as _comm
from ..hccl import comm_state as _state
from ..hccl import zero_copy as _zero_copy
from ._wrap import c_api

__all__ = ["HcclGetRootInfo", "HcclCommInitRootInfo", "HcclCommInitClusterInfo", "HcclCommInitAll", "HcclCommDestroy",
           "HcclGetRankSize", "HcclGetRankId", "HcclGetCommName", "HcclGetErrorString", "HcclRootInfo"]


@c_api(HcclRootInfo)
def HcclGetRootInfo():
    """``ret, rootInfo = HcclGetRootInfo()``: a new root, an :class:`HcclRootInfo` to hand to
    every rank's ``HcclCommInitRootInfo`` (its ``internal`` bytes name the root)."""
    return HcclRootInfo(internal=_comm.get_root_info())


@c_api(0)
def HcclCommInitRootInfo(nRanks, rootInfo, rank):
    """``ret, comm = HcclCommInitRootInfo(nRanks, root_info, rank)``. Collective: blocks until all
    ranks joined (``HCCL_CONNECT_TIMEOUT``); inside a group, until ``HcclGroupEnd``."""
    api = "HcclCommInitRootInfo"
    return _joined(_comm.init_root_info(nRanks, rootInfo, rank, None, api, wait=not _group.active()), api)


@c_api(0)
def HcclCommInitClusterInfo(clusterInfo, rank):  # noqa: N803
    """``ret, comm = HcclCommInitClusterInfo(rank_table_path, rank)``. Collective: blocks until all
    ranks of the rank table joined; inside a group, until ``HcclGroupEnd``."""
    api = "HcclCommInitClusterInfo"
    return _joined(_comm.init_cluster_info(clusterInfo, rank, None, api, wait=not _group.active()), api)


def _joined(comm, api: str) -> int:
    """The handle of a joined communicator; inside a group the wait for the others is kept for
    ``HcclGroupEnd`` (:mod:`pyhcomm.collectives.group`)."""
    if _group.active():
        _group.keep_management(api, lambda: _comm.wait_joined(comm, "HcclGroupEnd"))
    return comm.handle


@c_api([])
def HcclCommInitAll(devices):
    """``ret, comms = HcclCommInitAll(devices)``: one communicator per device of the list
    (rank ``i`` on ``devices[i]``), all in this call."""
    return [c.handle for c in _comm.init_all(devices)]


@c_api()
def HcclCommDestroy(comm):
    """Destroy a communicator with its threads, engine contexts and HCCL buffer (state callbacks
    run before and after; inside a group, at ``HcclGroupEnd``)."""
    if _group.active():
        _comm.get_comm(comm, "HcclCommDestroy")
        _group.keep_management("HcclCommDestroy", lambda: _state.destroy(comm))
    else:
        _state.destroy(comm)


@c_api(0)
def HcclGetRankSize(comm):
    return _comm.get_comm(comm, "HcclGetRankSize").nranks


@c_api(0)
def HcclGetRankId(comm):
    return _comm.get_comm(comm, "HcclGetRankId").rank


@c_api("")
def HcclGetCommName(comm):
    """``ret, name = HcclGetCommName(comm)`` (at most 127 characters)."""
    return _comm.get_comm(comm, "HcclGetCommName").name[:COMM_NAME_MAX_LENGTH - 1]


# -- configs -----------------------------------------------------------------------------------

__all__ += ["HcclCommConfigInit", "HcclGetCommConfigCapability", "HcclCommInitRootInfoConfig",
            "HcclCommInitClusterInfoConfig", "HcclGetRootInfoScalable", "HcclCommInitRootInfoScalable",
            "HcclCreateSubCommConfig", "HcclSetConfig", "HcclGetConfig", "HcclConfigGetInfo", "HcclCommConfig",
            "HcclCMDType", "HcclCommConfigCapability", "HcclCommStatePhase", "HcclCommStatus", "HcclConfig",
            "HcclConfigType", "HcclOpExpansionMode", "HcclSendRecvItem", "HcclSendRecvType", "BUFFER_NAME_MAX_LENGTH",
            "HCCL_COMM_ALGO_MAX_LENGTH", "HCCL_COMM_DEFAULT_BUFFSIZE", "HCCL_DEFAULT_SYMMETRIC_MEMORY_STRIDE",
            "UDI_MAX_LENGTH"]


def HcclCommConfigInit(config):
    """Set ``config`` to the C defaults (buffer size, deterministic, exec timeout ... "not set");
    returns None, as the C inline. A NULL config is ignored."""
    if void_struct_arg(config, HcclCommConfig, "HcclCommConfigInit", "config"):
        comm_config_init(config)


def HcclGetCommConfigCapability():
    """Every ``HcclCommConfigCapability`` below the returned value is supported (all of them)."""
    return _cfg.CONFIG_CAPABILITY


@c_api(0)
def HcclCommInitRootInfoConfig(nRanks, rootInfo, rank, config):  # noqa: N803
    """``ret, comm``: ``HcclCommInitRootInfo`` with an ``HcclCommConfig`` (see
    :mod:`pyhcomm.hccl.comm_config`). Collective: blocks until all ranks joined."""
    api = "HcclCommInitRootInfoConfig"
    settings = _cfg.settings_from(config, api)
    return _joined(_comm.init_root_info(nRanks, rootInfo, rank, settings, api, wait=not _group.active()), api)


@c_api(0)
def HcclCommInitClusterInfoConfig(clusterInfo, rank, config):  # noqa: N803
    """``ret, comm``: ``HcclCommInitClusterInfo`` with an ``HcclCommConfig``. Collective."""
    api = "HcclCommInitClusterInfoConfig"
    settings = _cfg.settings_from(config, api)
    return _joined(_comm.init_cluster_info(clusterInfo, rank, settings, api, wait=not _group.active()), api)


@c_api(HcclRootInfo)
def HcclGetRootInfoScalable():
    """``ret, rootInfo``: one root of a scalable init (several roots share the ranks' rendezvous)."""
    return HcclRootInfo(internal=_comm.get_root_info())


@c_api(0)
def HcclCommInitRootInfoScalable(nRanks, nRoot, rootInfoList, rank, nExtRoot, config):  # noqa: N803
    """``ret, comm``: join the communicator named by ``nRoot`` roots (every rank passes the same
    list; the first root names the communicator). ``nExtRoot`` is accepted and not used."""
    api = "HcclCommInitRootInfoScalable"
    if rootInfoList is None:
        raise _para(api, "rootInfoList is NULL")
    roots = sequence(rootInfoList, api, "rootInfoList")
    nRoot = argcheck.integer(nRoot, api, "nRoot", -(1 << 64), argcheck.UINT64_MAX, _para)
    nExtRoot = argcheck.integer(nExtRoot, api, "nExtRoot", -(1 << 64), argcheck.UINT64_MAX, _para)
    if not 1 <= nRoot <= len(roots):
        raise _para(api, f"nRoot {nRoot!r} must be 1..{len(roots)} (the roots given)")
    if nExtRoot < 0:
        raise _para(api, f"nExtRoot {nExtRoot!r} must be a non-negative int")
    for i, root in enumerate(roots[1:nRoot], 1):
        _comm.world_of(root, api)               # every root must exist
    settings = _cfg.settings_from(config, api) if config is not None else None
    return _comm.init_root_info(nRanks, roots[0], rank, settings, api).handle


@c_api(0, 0)
def HcclCreateSubCommConfig(comm, rankIds, subCommId, subCommRankId, config):  # noqa: N803
    """``ret, comm, subComm``: see :mod:`pyhcomm.hccl.subcomm`. Collective over the members."""
    return _subcomm.create(comm, rankIds, subCommId, subCommRankId, config)


@c_api()
def HcclSetConfig(config, configValue):  # noqa: N803
    """Process-wide settings: ``HCCL_DETERMINISTIC`` = 0 (no), 1 (yes), 2 (strict order)."""
    _cfg.set_config(config, configValue)


@c_api(0)
def HcclGetConfig(config):
    """``ret, value`` of a process-wide setting (``HcclSetConfig``)."""
    return _cfg.get_config(config)


@c_api(b"")
def HcclConfigGetInfo(comm, cfgType, infoLen):  # noqa: N803
    """``ret, info``: ``infoLen`` bytes of one setting of ``comm`` (a 4-byte value, or a string)."""
    return _cfg.config_info(_comm.get_comm(comm, "HcclConfigGetInfo"), cfgType, infoLen)


# -- names, status, suspend / resume, asynchronous errors --------------------------------------

__all__ += ["HcclCommGetHandleWithName", "HcclCommGetStatus", "HcclCommSuspend", "HcclCommResume",
            "HcclCommRegCommStateCallback", "HcclGetCommAsyncError", "HcclCommWorkingDevNicSet"]


@c_api(0)
def HcclCommGetHandleWithName(commName):  # noqa: N803
    """``ret, comm``: the communicator called ``commName`` (see :mod:`pyhcomm.hccl.comm_state`)."""
    return _state.by_name(commName, "HcclCommGetHandleWithName").handle


@c_api(0)
def HcclCommGetStatus(commId):  # noqa: N803
    """``ret, status``: ``HCCL_COMM_STATUS_READY`` or ``HCCL_COMM_STATUS_SUSPENDING``."""
    return _state.status(commId)


@c_api()
def HcclCommSuspend(comm):
    """Suspend ``comm``: its calls return ``HCCL_E_SUSPENDING`` until ``HcclCommResume``."""
    _state.suspend(comm)


@c_api()
def HcclCommResume(comm):
    """Clear what is in flight on ``comm`` (notifies, asynchronous error) and make it ready."""
    _state.resume(comm)


@c_api()
def HcclCommRegCommStateCallback(regName, cb, args):  # noqa: N803
    """Register ``cb(comm, phase, args) -> int`` under ``regName`` for destroy and resume."""
    _state.register_callback(regName, cb, args)


@c_api(0)
def HcclGetCommAsyncError(comm):
    """``ret, asyncError``: the first failure of a task of ``comm``'s threads, else HCCL_SUCCESS."""
    return _state.async_error(comm)


@c_api()
def HcclCommWorkingDevNicSet(comm, ranks, useBackup):  # noqa: N803
    """Choose the main or backup NIC of ``ranks`` (one bool each in ``useBackup``). pyhcomm keeps
    the choice (``comm.nic_backup``); its links have no NICs to switch, so data moves as before."""
    api = "HcclCommWorkingDevNicSet"
    c = _comm.get_comm(comm, api)
    if ranks is None or useBackup is None:
        raise _ptr(api, "ranks or useBackup is NULL")
    ranks, flags = [argcheck.plain(r) for r in ranks], list(useBackup)
    if len(ranks) != len(flags) or not ranks:
        raise _para(api, f"{len(ranks)} ranks but {len(flags)} useBackup flags (both non-empty, one each)")
    for r in ranks:
        if isinstance(r, bool) or not isinstance(r, int) or not 0 <= r < c.nranks:
            raise _para(api, f"ranks holds {r!r}, not a rank of {c.name}")
    c.nic_backup = {**getattr(c, "nic_backup", {}), **{r: bool(f) for r, f in zip(ranks, flags)}}


# -- zero copy: memory ranges and active memory (Atlas A3) --------------------------------------
__all__ += ["HcclCommSetMemoryRange", "HcclCommUnsetMemoryRange", "HcclCommActivateCommMemory",
            "HcclCommDeactivateCommMemory"]


@c_api()
def HcclCommSetMemoryRange(comm, baseVirPtr, size, alignment, flags):  # noqa: N803
    """Tell HCCL of a range reserved with ``aclrtReserveMemAddress`` (see :mod:`pyhcomm.hccl.zero_copy`)."""
    _zero_copy.set_memory_range(comm, baseVirPtr, size, alignment, flags)


@c_api()
def HcclCommUnsetMemoryRange(comm, baseVirPtr):  # noqa: N803
    """Forget the range set at ``baseVirPtr`` (no active memory may be left in it)."""
    _zero_copy.unset_memory_range(comm, baseVirPtr)


@c_api()
def HcclCommActivateCommMemory(comm, virPtr, size, offset, handle, flags):  # noqa: N803
    """Activate ``size`` bytes at ``virPtr``, mapped (``aclrtMapMem``) onto physical memory ``handle``."""
    _zero_copy.activate(comm, virPtr, size, offset, handle, flags)


@c_api()
def HcclCommDeactivateCommMemory(comm, virPtr):  # noqa: N803
    """Deactivate the active memory that starts at ``virPtr``."""
    _zero_copy.deactivate(comm, virPtr)
