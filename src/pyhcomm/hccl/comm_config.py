"""Communicator configs (``HcclCommConfig``) and the process-wide ``HcclSetConfig`` settings.

What a config changes in pyhcomm (a field left "not set" keeps the environment's value):

* ``hcclBufferSize`` (MB, >= 1): the HCCL buffer is twice that (overrides ``HCCL_BUFFSIZE``);
* ``hcclCommName`` (<= 127 characters): the communicator's name; every rank must give the same;
  names are unique among the live communicators of a Sim (another rank set of the same name is
  ``HCCL_E_PARA``);
* ``hcclExecTimeOut`` (s, >= 0): the wait timeout of this communicator's collectives (overrides
  ``HCCL_EXEC_TIMEOUT``; 0 = never);
* ``hcclOpExpansionMode`` (an ``HcclOpExpansionMode``; 0 = the product's default) and
  ``hcclDeterministic`` (0, 1 or 2): read back with ``HcclConfigGetInfo``; the simulation is
  deterministic whatever the value; a mode that names an engine refusing it on the product
  (:attr:`~pyhcomm.hcomm.resources.engines.Engine.expansion_refused`: the CCU modes, not modelled)
  is ``HCCL_E_NOT_SUPPORT``;
* ``hcclAlgo`` (HCCL_ALGO's syntax, :mod:`pyhcomm.defs.hccl_algo`): the algorithms of this
  communicator's collectives (overrides ``HCCL_ALGO``); a string that does not parse is
  ``HCCL_E_PARA`` here, as HCCL's ``SetConfigHcclAlgo``;
* ``hcclRdmaTrafficClass`` (0..255), ``hcclRdmaServiceLevel`` (0..7), ``hcclQos`` (0..7) and the
  other fields are checked and kept (they tune hardware pyhcomm does not model).

A config must have gone through ``HcclCommConfigInit`` (``HCCL_E_PARA`` otherwise, as the C
library checks the struct's magic word).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..defs import hccl_algo
from ..defs.cstruct import c_string
from ..defs.hccl_types import (CONFIG_NOT_SET, CONFIG_STRINGS, EXEC_TIMEOUT_NOT_SET, HcclCommConfig,
                               HcclConfig, HcclConfigType, HcclOpExpansionMode)
from .. import args
from ..errors import not_support, para, ptr
from ..hcomm.resources import engines
from ..sim import current_sim as _sim
from .state import hccl_state

MB = 1 << 20
#: ``HcclGetCommConfigCapability``: every ``HcclCommConfigCapability`` below this value is supported.
CONFIG_CAPABILITY = 12
_RANGES = {"hcclRdmaTrafficClass": 255, "hcclRdmaServiceLevel": 7, "hcclQos": 7}


@dataclass
class CommSettings:
    """The settings a communicator was created with (``None``: from the environment)."""

    buffer_mb: int | None = None
    name: str | None = None
    exec_timeout: int | None = None
    op_expansion_mode: int = 0
    deterministic: int | None = None
    algo: object = None                          # hcclAlgo parsed (defs.hccl_algo.AlgoConfig), None: not set
    fields: dict = field(default_factory=dict)   # every field of the config, as given


def settings_from(config, api: str) -> CommSettings:
    """Check an ``HcclCommConfig`` and return what it sets (see the module docstring)."""
    if config is None:
        raise ptr(api, "config is NULL")
    if not isinstance(config, HcclCommConfig):
        raise TypeError(f"{api}: config must be an HcclCommConfig, not {type(config).__name__}")
    if not config.initialised:
        raise para(api, "config was not initialised with HcclCommConfigInit")
    values = {name: getattr(config, name) for name, _ in HcclCommConfig._fields_}
    for name, size in CONFIG_STRINGS.items():
        try:
            values[name] = c_string(values[name], api, f"config.{name}", size)
        except ValueError as exc:
            raise para(api, str(exc).split(": ", 1)[1]) from None
    for name, value in values.items():
        if name not in CONFIG_STRINGS and (isinstance(value, bool) or not isinstance(value, int)):
            raise TypeError(f"{api}: config.{name} must be an int, not {type(value).__name__}")
    s = CommSettings(fields=values)
    size = values["hcclBufferSize"]
    if size != CONFIG_NOT_SET:
        if not 1 <= size < CONFIG_NOT_SET:
            raise para(api, f"config.hcclBufferSize {size} MB must be at least 1")
        s.buffer_mb = size
    s.name = values["hcclCommName"] or None
    try:
        algo = hccl_algo.parse(values["hcclAlgo"])
    except ValueError as exc:
        raise para(api, f"config.hcclAlgo: {exc}") from None
    s.algo = algo or None
    timeout = values["hcclExecTimeOut"]
    if timeout not in (EXEC_TIMEOUT_NOT_SET, CONFIG_NOT_SET):
        if not 0 <= timeout < 1 << 31:
            raise para(api, f"config.hcclExecTimeOut {timeout} must be 0 (never) or a positive number of seconds")
        s.exec_timeout = timeout
    mode = values["hcclOpExpansionMode"]
    try:
        mode = HcclOpExpansionMode(mode)
    except ValueError:
        raise para(api, f"config.hcclOpExpansionMode {mode} is not an HcclOpExpansionMode") from None
    if mode == HcclOpExpansionMode.HCCL_OP_EXPANSION_MODE_INVALID:
        raise para(api, "config.hcclOpExpansionMode is HCCL_OP_EXPANSION_MODE_INVALID")
    engine = engines.expansion_engine(mode)
    if engine is not None and engine.expansion_refused:
        raise not_support(api, f"config.hcclOpExpansionMode {mode.name}: {engine.expansion_refused}")
    s.op_expansion_mode = int(mode)
    det = values["hcclDeterministic"]
    if det != CONFIG_NOT_SET:
        if det not in (0, 1, 2):
            raise para(api, f"config.hcclDeterministic {det} must be 0, 1 or 2")
        s.deterministic = det
    for name, top in _RANGES.items():
        if values[name] != CONFIG_NOT_SET and not 0 <= values[name] <= top:
            raise para(api, f"config.{name} {values[name]} is outside [0, {top}]")
    return s


def apply(comm, settings: CommSettings) -> None:
    """Give a new communicator its settings (before its HCCL buffer exists)."""
    comm.settings = settings
    if settings.buffer_mb is not None:
        comm.buffer_size = 2 * settings.buffer_mb * MB


def exec_timeout(comm) -> int:
    """The exec timeout (s) of ``comm``'s collectives: its config's, else ``HCCL_EXEC_TIMEOUT``."""
    settings = getattr(comm, "settings", None)
    if settings is not None and settings.exec_timeout is not None:
        return settings.exec_timeout
    cfg = _sim().config
    cfg.check("HCCL_EXEC_TIMEOUT", "collective")
    return cfg.exec_timeout


def deterministic(comm) -> int:
    """0, 1 or 2: the communicator's config, else the process setting (``HcclSetConfig``)."""
    settings = getattr(comm, "settings", None)
    if settings is not None and settings.deterministic is not None:
        return settings.deterministic
    return hccl_state().settings.get(HcclConfig.HCCL_DETERMINISTIC, 0)


def set_config(which, value) -> None:
    """``HcclSetConfig``: ``HCCL_DETERMINISTIC`` takes 0, 1 or 2 (for every later communicator)."""
    api = "HcclSetConfig"
    which = args.integer(which, api, "config", -(1 << 64), args.UINT64_MAX)
    value = args.integer(value, api, "configValue", -(1 << 64), args.UINT64_MAX)
    if which != HcclConfig.HCCL_DETERMINISTIC:
        raise para(api, f"config {which!r} is not a settable HcclConfig (HCCL_DETERMINISTIC = 0)")
    if value not in (0, 1, 2):
        raise para(api, f"configValue {value!r} for HCCL_DETERMINISTIC must be 0, 1 or 2")
    hccl_state().settings[HcclConfig.HCCL_DETERMINISTIC] = value


def get_config(which) -> int:
    which = args.integer(which, "HcclGetConfig", "config", -(1 << 64), args.UINT64_MAX)
    if which != HcclConfig.HCCL_DETERMINISTIC:
        raise para("HcclGetConfig", f"config {which!r} is not an HcclConfig (HCCL_DETERMINISTIC = 0)")
    return hccl_state().settings.get(HcclConfig.HCCL_DETERMINISTIC, 0)


#: The largest ``infoLen`` :func:`config_info` answers (pyhcomm's bound: it returns that many bytes).
CONFIG_INFO_MAX = 1 << 16


def config_info(comm, cfg_type, info_len: int) -> bytes:
    """``HcclConfigGetInfo``: ``info_len`` bytes describing one setting of ``comm`` (a 4-byte
    little-endian value, or a NUL-padded string for the algorithm and the UDI)."""
    api = "HcclConfigGetInfo"
    settings = getattr(comm, "settings", None) or CommSettings()
    cfg_type = args.integer(cfg_type, api, "cfgType", -(1 << 64), args.UINT64_MAX)
    info_len = args.integer(info_len, api, "infoLen", -(1 << 64), args.UINT64_MAX)
    if not 0 < info_len <= CONFIG_INFO_MAX:
        raise para(api, f"infoLen {info_len!r} must be an int in [1, {CONFIG_INFO_MAX}] (the longest value is a "
                        "128-byte string)")
    strings = {HcclConfigType.HCCL_CONFIG_TYPE_HCCL_ALGO: "hcclAlgo", HcclConfigType.HCCL_CONFIG_TYPE_UDI: "hcclUdi"}
    if cfg_type in strings:
        text = settings.fields.get(strings[cfg_type], "").encode()
        if len(text) >= info_len:
            raise para(api, f"infoLen {info_len} is too small for the {len(text)}-byte value and its NUL")
        return text + bytes(info_len - len(text))
    values = {HcclConfigType.HCCL_CONFIG_TYPE_OP_EXPANSION_MODE: settings.op_expansion_mode,
              HcclConfigType.HCCL_CONFIG_TYPE_DETERMINISTIC: deterministic(comm),
              HcclConfigType.HCCL_CONFIG_TYPE_UB_MULTI_CHANNEL_NUM: 1}
    if cfg_type not in values:
        raise para(api, f"cfgType {cfg_type!r} is not an HcclConfigType")
    if info_len != 4:
        raise para(api, f"infoLen {info_len} must be 4 for {HcclConfigType(cfg_type).name}")
    return int(values[cfg_type]).to_bytes(4, "little", signed=True)


def claim_name(world, name: str, api: str) -> None:
    """Name ``world`` after its config (under the Sim lock): every rank must give the same name,
    and no other live communicator of the Sim may hold it."""
    if getattr(world, "config_name", None) not in (None, name):
        raise para(api, f"config.hcclCommName {name!r} differs from {world.config_name!r} given by another rank")
    for other in _sim().handles.comms.values():
        if other.world is not world and other.name == name:
            raise para(api, f"config.hcclCommName {name!r} is the name of another live communicator")
    world.config_name = name
    world.name = name
