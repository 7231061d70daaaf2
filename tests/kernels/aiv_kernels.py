"""AIV kernels for tests/test_aiv.py (arguments: ints appended with aclrtKernelArgsAppend)."""
import numpy as np

from pyhcomm.aiv import (EXPORT_AIV_META_INFO, DataCopy, GetBlockIdx, GetBlockNum, GlobalTensor, LocalTensor,
                         SetSignalValue, SyncAll, WaitSignalValue)


@EXPORT_AIV_META_INFO
def whoami(out):
    """out[2 * b], out[2 * b + 1] = block index, block count."""
    b = GetBlockIdx()
    ub = LocalTensor(np.int32, 2)
    ub.SetValue(0, b)
    ub.SetValue(1, GetBlockNum())
    DataCopy(GlobalTensor(np.int32, out)[2 * b], ub, 2)


@EXPORT_AIV_META_INFO
def ping_pong(flags, out):
    """Block 0 waits for block 1's flag before it answers; block 1 flags first, then waits for the
    answer: a kernel whose blocks ran one after another would never end."""
    loc = LocalTensor(np.int32, 8)
    if GetBlockIdx() == 0:
        WaitSignalValue(flags, loc, 1, 8)
        SetSignalValue(flags + 32, loc, 2, 8)
    else:
        SetSignalValue(flags, loc, 1, 8)
        WaitSignalValue(flags + 32, loc, 2, 8)
        ub = LocalTensor(np.int32, 8)
        ub.SetValue(0, 42)
        DataCopy(GlobalTensor(np.int32, out), ub, 8)


@EXPORT_AIV_META_INFO
def exchange(buf, out, n, sync):
    """Each block writes n floats of its index into its slice of ``buf``, then (after SyncAll when
    ``sync``) copies the next block's slice to its slice of ``out``."""
    b, nb = GetBlockIdx(), GetBlockNum()
    ub = LocalTensor(np.float32, n)
    ub.ub[:] = b
    DataCopy(GlobalTensor(np.float32, buf)[b * n], ub, n)
    if sync:
        SyncAll()
    DataCopy(ub, GlobalTensor(np.float32, buf)[((b + 1) % nb) * n], n)
    DataCopy(GlobalTensor(np.float32, out)[b * n], ub, n)


@EXPORT_AIV_META_INFO
def wait_for(flag, value):
    WaitSignalValue(flag, LocalTensor(np.int32, 8), value, 8)


@EXPORT_AIV_META_INFO
def sync_all_but_block_1():
    if GetBlockIdx() != 1:
        SyncAll()


@EXPORT_AIV_META_INFO
def raises():
    raise ValueError("the kernel's own failure")


@EXPORT_AIV_META_INFO
def copy(dst, src, n):
    """``n`` bytes from ``src`` to ``dst`` through the block's local buffer."""
    ub = LocalTensor(np.uint8, n)
    DataCopy(ub, GlobalTensor(np.uint8, src), n)
    DataCopy(GlobalTensor(np.uint8, dst), ub, n)


@EXPORT_AIV_META_INFO
def flag_out(flag, value):
    """Store flag ``value`` (8 int32) at ``flag``."""
    SetSignalValue(flag, LocalTensor(np.int32, 8), value, 8)


@EXPORT_AIV_META_INFO
def hand_spin(flag, data, out):
    """Block 0 writes ``data`` then a flag with plain DataCopy; block 1 spins on the flag with
    DataCopy loads (no signal helper), then copies ``data`` out."""
    ub = LocalTensor(np.int32, 8)
    if GetBlockIdx() == 0:
        ub.ub[:] = 7
        DataCopy(GlobalTensor(np.int32, data), ub, 8)
        ub.ub[:] = 1
        DataCopy(GlobalTensor(np.int32, flag), ub, 8)
    else:
        while True:
            DataCopy(ub, GlobalTensor(np.int32, flag), 8)
            if ub.GetValue(0) == 1:
                break
        DataCopy(ub, GlobalTensor(np.int32, data), 8)
        DataCopy(GlobalTensor(np.int32, out), ub, 8)


def not_marked(out):
    """No EXPORT_AIV_META_INFO: an AI CPU kernel unless launched with the AIV engine type."""
    GlobalTensor(np.int32, out).SetValue(0, GetBlockNum())


@EXPORT_AIV_META_INFO
def calls_hcomm(thread, dst, src):
    """An HCOMM primitive from an AIV kernel (refused)."""
    from pyhcomm import HcommLocalCopyOnThread
    GlobalTensor(np.int32, dst).SetValue(0, HcommLocalCopyOnThread(thread, dst, src, 4))


@EXPORT_AIV_META_INFO
def memcpy_in_kernel(dst, src, n, host):
    """aclrtMemcpy inside an AIV kernel: device to device (a load and a store), then from host memory (refused)."""
    from pyhcomm import acl
    assert acl.rt.memcpy(dst, n, src, n, 3) == 0
    GlobalTensor(np.int32, dst).SetValue(1, acl.rt.memcpy(dst, n, host, n, 1))
