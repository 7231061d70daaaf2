"""The simulated world a fuzz example runs in: 2-4 ranks (``HcclCommInitAll``), per rank two user
streams with a CPU_TS thread each, an AICPU_TS thread, device buffers and the start of the HCCL
buffer; AICPU_TS channels to every other rank (HCCS, UBC_TP on Atlas 350) and, on Atlas A2,
CPU_TS HCCS channels (3 notifies each, as the collectives' own); host buffers (numpy blocks with canaries, ``aclrtMallocHost``). Every block starts with
random bytes; the model starts equal to them. ``host_channels`` and ``host_local_ops`` say what
the product lets the host do (Atlas 350 runs local operations on the device side only)."""
from __future__ import annotations

import random

import numpy as np

import pyhcomm
from pyhcomm import acl
from pyhcomm.config import Config

from fuzz_calls import call
from fuzz_model import GUARD, Buffer

E = pyhcomm.CommEngine
HCCL_WINDOW = 2048


class Rank:
    """What the fuzzer holds of one rank."""

    def __init__(self, r: int, comm: int):
        self.r = r
        self.comm = comm
        self.streams: list[int] = []          # user streams
        self.thread_of: dict[int, int] = {}   # user stream -> its CPU_TS thread
        self.aicpu = 0                        # an AICPU_TS thread (for kernels)
        self.aicpu_stream = 0
        self.channels: dict[int, int] = {}    # peer rank -> CPU_TS channel
        self.dev_channels: dict[int, int] = {}  # peer rank -> AICPU_TS channel (for kernels)
        self.bufs: list[Buffer] = []          # device buffers
        self.hccl: Buffer | None = None


class World:
    """Builds the world of one example (see the module docstring)."""

    def __init__(self, product: str, nranks: int, seed: int):
        self.rnd = random.Random(seed)
        self.product = product
        cfg = Config.from_env().with_values(buffsize_mb=1)
        pyhcomm.reset(scheduler="threaded", config=cfg)
        pyhcomm.set_product(product)            # chosen: aclInit keeps it
        call(acl.init, tier="acl")
        ret, comms = call(pyhcomm.HcclCommInitAll, list(range(nranks)))
        self.ranks = [Rank(r, c) for r, c in enumerate(comms)]
        self.host: list[Buffer] = []
        self.freed: list[int] = []            # addresses of blocks freed (for use-after-free calls)
        self.nbuf = 0
        for rk in self.ranks:
            call(acl.rt.set_device, rk.r, tier="acl")
            for _ in range(2):
                s, _ = call(acl.rt.create_stream, tier="acl")
                _, t = call(pyhcomm.HcclThreadAcquireWithStream, rk.comm, E.COMM_ENGINE_CPU_TS, s, 4)
                rk.streams.append(s)
                rk.thread_of[s] = t
            _, (rk.aicpu,) = call(pyhcomm.HcclThreadAcquire, rk.comm, E.COMM_ENGINE_AICPU_TS, 1, 4)
            _, rk.aicpu_stream = call(pyhcomm.HcclThreadResGetInfo, rk.comm, rk.aicpu,
                                      pyhcomm.THREAD_RES_TYPE_STREAM, 8)
            _, addr, _size = call(pyhcomm.HcclGetHcclBuffer, rk.comm)
            rk.hccl = self._adopt(Buffer(f"hccl{rk.r}", "hccl", rk.r, addr, HCCL_WINDOW, addr, HCCL_WINDOW + GUARD))
            for _ in range(2):
                rk.bufs.append(self.device_buffer(rk.r))
        self.host_channels = pyhcomm.current_sim().runtime.product.family == "A2"   # CPU_TS channels
        self.host_local_ops = not pyhcomm.current_sim().runtime.product.device_side_only
        family = pyhcomm.current_sim().runtime.product.family
        dev_protocol = pyhcomm.COMM_PROTOCOL_UBC_TP if family == "950" else pyhcomm.COMM_PROTOCOL_HCCS
        for rk in self.ranks:
            for peer in self.ranks:
                if peer.r == rk.r:
                    continue
                if self.host_channels:
                    rk.channels[peer.r] = self._channel(rk, peer, E.COMM_ENGINE_CPU_TS, pyhcomm.COMM_PROTOCOL_HCCS)
                rk.dev_channels[peer.r] = self._channel(rk, peer, E.COMM_ENGINE_AICPU_TS, dev_protocol)
        call(acl.rt.set_device, 0, tier="acl")
        for _ in range(2):
            self.host.append(self.host_buffer())
        self.host.append(self.pinned_buffer())

    @staticmethod
    def _channel(rk, peer, engine, protocol) -> int:
        d = pyhcomm.HcclChannelDesc()
        call(pyhcomm.HcclChannelDescInit, d)
        d.remoteRank, d.channelProtocol, d.notifyNum = peer.r, protocol, 3
        _, (ch,) = call(pyhcomm.HcclChannelAcquire, rk.comm, engine, [d])
        return ch

    # -- buffers -------------------------------------------------------------------------------
    def _size(self) -> int:
        return self.rnd.choice((64, 256, 1024, 2048))

    def _adopt(self, buf: Buffer) -> Buffer:
        data = self.rnd.randbytes(buf.block_size)
        buf.set_actual(data)
        buf.expect[:] = data
        return buf

    def _name(self, kind: str) -> str:
        self.nbuf += 1
        return f"{kind}{self.nbuf}"

    def device_buffer(self, rank: int) -> Buffer:
        """A new device buffer of ``rank`` (the current device is left as it was)."""
        size = self._size()
        ptr, _ = call(acl.rt.malloc_with_cfg, GUARD + size + GUARD, 0, {"attrs": [
            {"attr": pyhcomm.ACL_RT_MEM_ATTR_DEVICE_ID, "value": {"deviceId": rank}}]}, tier="acl")
        return self._adopt(Buffer(self._name("dev"), "device", rank, ptr + GUARD, size, ptr, GUARD + size + GUARD))

    def host_buffer(self) -> Buffer:
        """A numpy block whose middle is registered; the canaries lie outside the registration."""
        size = self._size()
        block = np.zeros(GUARD + size + GUARD, np.uint8)
        ptr = acl.util.numpy_to_ptr(block[GUARD:GUARD + size])
        return self._adopt(Buffer(self._name("host"), "host", None, ptr, size,
                                  block.__array_interface__["data"][0], block.nbytes, array=block))

    def pinned_buffer(self) -> Buffer:
        size = self._size()
        ptr, _ = call(acl.rt.malloc_host, GUARD + size + GUARD, tier="acl")
        return self._adopt(Buffer(self._name("pinned"), "pinned", None, ptr + GUARD, size, ptr, GUARD + size + GUARD))

    def all_buffers(self):
        for rk in self.ranks:
            yield rk.hccl
            yield from rk.bufs
        yield from self.host

    def stream_device(self, key: int) -> int:
        for rk in self.ranks:
            if key in rk.streams or key == rk.aicpu_stream:
                return rk.r
        raise KeyError(key)
