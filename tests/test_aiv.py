"""AIV kernels (pyhcomm.sim.aiv, pyhcomm.aiv): blocks that run concurrently, the block barrier,
flags as synchronisation (for the kernel and for the verifier), global memory over AIV channels,
the launch attributes, and the codes of every failure."""
import numpy as np
import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.analysis import analyze
from pyhcomm.analysis.happens_before import build
from hcomm_testutil import KERNEL_DIR

import os

AIV_PY = os.path.join(KERNEL_DIR, "aiv_kernels.py")
E = pyhcomm.AclError
R = pyhcomm.HcclResult
A = pyhcomm.aclrtLaunchKernelAttrId
A350 = "Atlas 350"
D2H, H2D = 2, 1


@pytest.fixture
def dev350():
    pyhcomm.set_product(A350)
    assert acl.init() == 0
    assert acl.rt.set_device(0) == 0
    stream, ret = acl.rt.create_stream()
    assert ret == 0
    yield stream


def _func(name):
    binary, ret = acl.rt.binary_load_from_file(AIV_PY, [])
    assert ret == 0
    func, ret = acl.rt.binary_get_function(binary, name)
    assert ret == 0
    return func


def launch(name, stream, *args, blocks=1, cfg=None):
    """``aclrtLaunchKernelWithConfig`` of kernel ``name`` with ``args`` appended; its return code."""
    func = _func(name)
    handle, ret = acl.rt.kernel_args_init(func)
    assert ret == 0
    for a in args:
        assert acl.rt.kernel_args_append(handle, a)[1] == 0
    assert acl.rt.kernel_args_finalize(handle) == 0
    return acl.rt.launch_kernel_with_config(func, blocks, stream, cfg or [], handle, 0)


def malloc(n):
    ptr, ret = acl.rt.malloc(n, 0)
    assert ret == 0
    return ptr


def read(ptr, n, dtype=np.uint8):
    out = np.zeros(n, dtype=np.uint8)
    assert acl.rt.memcpy(acl.util.numpy_to_ptr(out), n, ptr, n, D2H) == 0
    return out.view(dtype)


# -- blocks ----------------------------------------------------------------------------------------------------
def test_each_block_knows_its_index_and_the_block_count(dev350):
    out = malloc(64)
    assert launch("whoami", dev350, out, blocks=4) == 0
    assert acl.rt.synchronize_stream(dev350) == 0
    assert read(out, 32, np.int32).tolist() == [0, 4, 1, 4, 2, 4, 3, 4]
    launches = pyhcomm.record.tasks(kind="AivKernelLaunch")
    assert len(launches) == 1 and launches[0].kind.get(launches[0], "blocks") == 4
    assert len({e.program for e in pyhcomm.record.events(kind="AivStore")}) == 4     # a program per block


def test_blocks_run_concurrently_a_flag_wait_lets_the_others_run(dev350):
    flags, out = malloc(64), malloc(32)
    assert launch("ping_pong", dev350, flags, out, blocks=2) == 0
    assert acl.rt.synchronize_stream(dev350) == 0
    assert read(out, 4, np.int32)[0] == 42
    loads = pyhcomm.record.events(kind="AivFlagLoad")
    stores = {e.value: e.seq for e in pyhcomm.record.events(kind="AivFlagStore")}
    assert sorted((e.value, e.after) for e in loads) == [(1, (stores[1],)), (2, (stores[2],))]


def test_a_kernel_without_the_aiv_mark_runs_as_aiv_with_the_engine_type_attribute(dev350):
    out = malloc(8)
    aiv = [{"id": int(A.ACL_RT_LAUNCH_KERNEL_ATTR_ENGINE_TYPE), "value": int(pyhcomm.ACL_RT_ENGINE_TYPE_AIV)}]
    assert launch("not_marked", dev350, out, blocks=3, cfg=aiv) == 0
    assert acl.rt.synchronize_stream(dev350) == 0
    assert read(out, 4, np.int32)[0] == 3
    assert len(pyhcomm.record.tasks(kind="AivKernelLaunch")) == 1
    assert launch("not_marked", dev350, out, blocks=1) == 0          # no attribute: an AI CPU kernel,
    assert acl.rt.synchronize_stream(dev350) == E.ACL_ERROR_RT_AICPU_EXCEPTION   # which has no GetBlockNum
    assert "called outside an AIV kernel" in acl.get_recent_err_msg()


# -- SyncAll and races ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("sync", [True, False])
def test_sync_all_orders_the_blocks(dev350, sync):
    n = 16
    buf, out = malloc(4 * n * 4), malloc(4 * n * 4)
    assert launch("exchange", dev350, buf, out, n, sync, blocks=4) == 0
    assert acl.rt.synchronize_stream(dev350) == 0
    if sync:
        assert read(out, 4 * n * 4, np.float32).tolist() == np.repeat([1, 2, 3, 0], n).tolist()
        assert analyze(pyhcomm.current_sim()) == []
        graph = build(pyhcomm.current_sim())
        barrier = pyhcomm.record.events(kind="AivSyncAll")
        assert len(barrier) == 4
        for e in barrier:       # after the other three blocks' stores
            assert sorted(k for _s, k in graph.preds(e.seq)) == ["block", "block", "block", "program"]
    else:
        races = [f for f in analyze(pyhcomm.current_sim()) if f.kind == "race"]
        assert races and "block" in races[0].text() and "SyncAll between them" in races[0].text()


def test_a_hand_written_spin_waits_for_the_change_and_is_a_data_race_to_the_verifier(dev350):
    flag, data, out = malloc(32), malloc(32), malloc(32)
    assert launch("hand_spin", dev350, flag, data, out, blocks=2) == 0
    assert acl.rt.synchronize_stream(dev350) == 0
    assert read(out, 32, np.int32).tolist() == [7] * 8
    races = [f for f in analyze(pyhcomm.current_sim()) if f.kind == "race"]
    assert races     # plain DataCopy loads of a flag are data, not synchronisation


# -- failures ---------------------------------------------------------------------------------------------------
def test_a_flag_never_stored_is_a_vector_core_timeout_naming_the_address_and_value(dev350):
    flag = malloc(32)
    assert launch("wait_for", dev350, flag, 5, cfg=[{"id": int(A.ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US),
                                                    "value": 10_000_000}]) == 0
    assert acl.rt.synchronize_stream(dev350) == E.ACL_ERROR_RT_VECTOR_CORE_TIMEOUT == 507034
    msg = acl.get_recent_err_msg()
    assert f"waits for the flag at 0x{flag:x}" in msg and "to hold 5; it holds 0" in msg
    assert "AIV kernel wait_for block 0 (device 0)" in msg


def test_a_sync_all_a_block_never_reaches_names_the_missing_block(dev350):
    assert launch("sync_all_but_block_1", dev350, blocks=3) == 0
    assert acl.rt.synchronize_stream(dev350) == E.ACL_ERROR_RT_VECTOR_CORE_TIMEOUT
    assert "waits in SyncAll for block(s) 1" in acl.get_recent_err_msg()


def test_a_kernel_that_raises_is_a_vector_core_exception(dev350):
    assert launch("raises", dev350, blocks=2) == 0
    assert acl.rt.synchronize_stream(dev350) == E.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION == 507035
    assert "ValueError(\"the kernel's own failure\")" in acl.get_recent_err_msg()


def test_memory_a_block_may_not_reach_is_a_vector_core_exception(dev350):
    dst = malloc(64)
    host = np.zeros(64, np.uint8)
    assert launch("copy", dev350, dst, acl.util.numpy_to_ptr(host), 64) == 0
    assert acl.rt.synchronize_stream(dev350) == E.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION
    assert "is out of range" in acl.get_recent_err_msg()
    assert launch("copy", dev350, dst, dst + 32, 64) == 0             # past the end of its allocation
    assert acl.rt.synchronize_stream(dev350) == E.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION
    assert "runs past its allocation" in acl.get_recent_err_msg()
    assert acl.rt.set_device(1) == 0
    other = malloc(64)
    assert acl.rt.set_device(0) == 0
    assert launch("copy", dev350, dst, other, 64) == 0                # device 1's, no AIV channel to it
    assert acl.rt.synchronize_stream(dev350) == E.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION
    assert "which no AIV channel of device 0 exposes" in acl.get_recent_err_msg()


def test_hcomm_primitives_are_refused_inside_an_aiv_kernel(dev350, caplog):
    ret, comms = pyhcomm.HcclCommInitAll([0])
    assert ret == 0
    ret, (thread,) = pyhcomm.HcclThreadAcquire(comms[0], pyhcomm.COMM_ENGINE_AICPU_TS, 1, 0)
    assert ret == 0
    dst, src = malloc(8), malloc(8)
    assert launch("calls_hcomm", dev350, thread, dst, src) == 0
    assert acl.rt.synchronize_stream(dev350) == 0
    assert read(dst, 4, np.int32)[0] == R.HCCL_E_NOT_SUPPORT
    assert "called inside AIV kernel calls_hcomm: HCOMM's primitives run on the host or in AI CPU kernels" in caplog.text


def test_aclrt_memcpy_inside_an_aiv_kernel_is_a_load_and_a_store(dev350):
    dst, src = malloc(64), malloc(64)
    x = np.arange(64, dtype=np.uint8) + 1
    assert acl.rt.memcpy(src, 64, acl.util.numpy_to_ptr(x), 64, 1) == 0
    host = np.zeros(64, np.uint8)
    assert launch("memcpy_in_kernel", dev350, dst, src, 64, acl.util.numpy_to_ptr(host)) == 0
    assert acl.rt.synchronize_stream(dev350) == 0
    out = read(dst, 64)
    assert out[:4].tolist() == [1, 2, 3, 4] and out[4:8].view(np.int32)[0] == E.ACL_ERROR_RT_PARAM_INVALID
    load, = pyhcomm.record.events(kind="AivLoad")
    store = [e for e in pyhcomm.record.events(kind="AivStore") if e.api == "aclrtMemcpy"]
    assert load.api == "aclrtMemcpy" and load.reads[0].addr == src and store[0].writes[0].addr == dst


def test_aiv_kernels_need_data(product):
    pyhcomm.reset(data=False)
    pyhcomm.set_product(A350)
    assert acl.init() == 0 and acl.rt.set_device(0) == 0
    stream, _ = acl.rt.create_stream()
    flag = malloc(32)
    assert launch("flag_out", stream, flag, 1) == 0
    assert acl.rt.synchronize_stream(stream) == E.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION
    assert "runs without data" in acl.get_recent_err_msg()


def test_the_ascend_c_names_refuse_to_run_outside_an_aiv_kernel():
    from pyhcomm.aiv import GetBlockIdx, SyncAll
    with pytest.raises(pyhcomm.AclRuntimeError, match="GetBlockIdx: called outside an AIV kernel"):
        GetBlockIdx()
    with pytest.raises(pyhcomm.AclRuntimeError, match="SyncAll: called outside an AIV kernel"):
        SyncAll()


# -- the launch attributes --------------------------------------------------------------------------------------
@pytest.mark.parametrize("value", [2_000_000, {"timeoutLow": 2_000_000, "timeoutHigh": 0}, (2_000_000, 0), 0])
def test_the_microsecond_timeout_is_accepted_in_its_forms(dev350, value):
    out = malloc(64)
    assert launch("whoami", dev350, out, blocks=2, cfg=[{"id": 8, "value": value}]) == 0
    assert acl.rt.synchronize_stream(dev350) == 0


@pytest.mark.parametrize("cfg, why", [
    ([{"id": 7, "value": 10}, {"id": 8, "value": 10}], "cannot both be given"),
    ([{"id": 8, "value": -1}], "timeoutUs -1 must be an int"),
    ([{"id": 8, "value": {"timeoutLow": 1, "bogus": 0}}], "has no field 'bogus'"),
    ([{"id": 8, "value": (1 << 32, 0)}], "timeoutUs half"),
    ([{"id": 3, "value": 2}], "engineType 2 is not an aclrtEngineType"),
    ([{"id": 1, "value": 2}], "schemMode 2 must be 0 (normal) or 1 (batch)"),
    ([{"id": 99, "value": 0}], "cfg attribute id 99 is not an aclrtLaunchKernelAttrId"),
])
def test_bad_launch_attributes_are_invalid_param(dev350, cfg, why):
    out = malloc(64)
    assert launch("whoami", dev350, out, cfg=cfg) == E.ACL_ERROR_INVALID_PARAM
    assert why in acl.get_recent_err_msg()


def test_host_args_launch_with_the_example_05_attributes(dev350):
    import struct
    func = _func("flag_out")
    flag = malloc(32)
    cfg = [{"id": 1, "value": 1}, {"id": 8, "value": {"timeoutLow": 1836 * 10 ** 6, "timeoutHigh": 0}},
           {"id": 3, "value": 1}, {"id": 2, "value": 4096}]
    # a host-args kernel gets its bytes as one argument: flag_out(bytes, value) takes two, so pass the
    # flag's address as the bytes' first 8 and check the call is taken as given
    args = struct.pack("<Q", flag)
    assert acl.rt.launch_kernel_with_host_args(func, 1, dev350, cfg, args, len(args), None, 0) == 0
    assert acl.rt.synchronize_stream(dev350) == E.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION   # missing its value
    assert "missing 1 required positional argument" in acl.get_recent_err_msg()


# -- over AIV channels ------------------------------------------------------------------------------------------
def _aiv_channel(comm, peer, mems=()):
    d = pyhcomm.HcclChannelDesc()
    assert pyhcomm.HcclChannelDescInit(d) == 0
    d.remoteRank, d.channelProtocol, d.notifyNum = peer, pyhcomm.COMM_PROTOCOL_UB_MEM, 3
    d.memHandles, d.memHandleNum = list(mems), len(mems)
    ret, (ch,) = pyhcomm.HcclChannelAcquire(comm.handle, pyhcomm.COMM_ENGINE_AIV, [d])
    assert ret == 0
    return ch


def _remote_copy(shared):
    """Rank 1 registers 256 bytes and lists them in its AIV channel; rank 0 copies them with an
    AIV kernel, then rank 1's HCCL buffer, then tries rank 1's unexposed memory."""
    def body(comm):
        exposed, hidden = malloc(256), malloc(256)
        x = np.arange(256, dtype=np.uint8) + comm.rank
        assert acl.rt.memcpy(exposed, 256, acl.util.numpy_to_ptr(x), 256, H2D) == 0
        mems = ()
        if comm.rank == 1:
            mem = pyhcomm.CommMem(pyhcomm.COMM_MEM_TYPE_DEVICE, exposed, 256)
            ret, h = pyhcomm.HcclCommMemReg(comm.handle, "exposed", mem)
            assert ret == 0
            mems = (h,)
            shared["hidden"] = hidden
        ch = _aiv_channel(comm, 1 - comm.rank, mems)
        comm.barrier()
        if comm.rank == 0:
            ret, num, remote, tags = pyhcomm.HcclChannelGetRemoteMems(comm.handle, ch)
            assert (ret, num, tags) == (0, 1, ["exposed"])
            ret, ccl, _size = pyhcomm.HcclChannelGetHcclBuffer(comm.handle, ch)
            assert ret == 0
            stream, _ = acl.rt.create_stream()
            dst = malloc(256)
            assert launch("copy", stream, dst, remote[0].addr, 256) == 0
            shared["copy"] = (acl.rt.synchronize_stream(stream), read(dst, 256).tolist())
            assert launch("copy", stream, dst, ccl, 256) == 0                # its HCCL buffer: exposed too
            shared["ccl"] = acl.rt.synchronize_stream(stream)
            assert launch("copy", stream, dst, shared["hidden"], 16) == 0
            shared["hidden"] = (acl.rt.synchronize_stream(stream), acl.get_recent_err_msg())
        comm.barrier()
    return body


def test_a_kernel_reaches_what_a_peer_exposes_over_an_aiv_channel_and_nothing_else():
    out: dict = {}
    pyhcomm.launch(_remote_copy(out), 2, product=A350)
    assert out["copy"] == (0, (np.arange(256, dtype=np.uint8) + 1).tolist())
    assert out["ccl"] == 0
    code, msg = out["hidden"]
    assert code == E.ACL_ERROR_RT_VECTOR_CORE_EXCEPTION and "no AIV channel of device 0 exposes" in msg


@pytest.mark.parametrize("product", ["Atlas A3", "Atlas 800T A2"])
def test_aiv_channels_are_not_supported_on_a2_and_a3(product, caplog):
    pyhcomm.set_product(product)
    ret, comms = pyhcomm.HcclCommInitAll([0, 1])
    assert ret == 0
    for protocol in (pyhcomm.COMM_PROTOCOL_HCCS, pyhcomm.COMM_PROTOCOL_UB_MEM):
        d = pyhcomm.HcclChannelDesc()
        pyhcomm.HcclChannelDescInit(d)
        d.remoteRank, d.channelProtocol, d.notifyNum = 1, protocol, 3
        assert pyhcomm.HcclChannelAcquire(comms[0], pyhcomm.COMM_ENGINE_AIV, [d]) == (R.HCCL_E_NOT_SUPPORT, [])
    assert f"COMM_ENGINE_AIV channels are not supported on {product}" in caplog.text


def test_aiv_channel_protocols_on_atlas_350():
    pyhcomm.set_product(A350)
    ret, comms = pyhcomm.HcclCommInitAll([0, 1])
    assert ret == 0
    P = pyhcomm.CommProtocol
    for protocol, code in ((P.COMM_PROTOCOL_UB_MEM, 0), (P.COMM_PROTOCOL_UBC_CTP, 0), (P.COMM_PROTOCOL_UBC_TP, 0),
                           (P.COMM_PROTOCOL_ROCE, 0), (P.COMM_PROTOCOL_UBOE, R.HCCL_E_NOT_SUPPORT),
                           (P.COMM_PROTOCOL_HCCS, R.HCCL_E_NOT_SUPPORT)):
        d = pyhcomm.HcclChannelDesc()
        pyhcomm.HcclChannelDescInit(d)
        d.remoteRank, d.channelProtocol, d.notifyNum = 1, protocol, 3
        assert pyhcomm.HcclChannelAcquire(comms[0], pyhcomm.COMM_ENGINE_AIV, [d])[0] == code, protocol.name


def test_the_record_exports_the_aiv_fields(dev350, tmp_path):
    import json
    flags, out = malloc(64), malloc(32)
    assert launch("ping_pong", dev350, flags, out, blocks=2) == 0
    assert acl.rt.synchronize_stream(dev350) == 0
    path = tmp_path / "r.jsonl"
    pyhcomm.record.export_jsonl(str(path))
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    loads = [r for r in rows if r["kind"] == "AivFlagLoad"]
    assert loads and all(r["engine"] == "COMM_ENGINE_AIV" and r["side"] == "device" for r in loads)
    assert {r["value"] for r in loads} == {1, 2} and all(len(r["after"]) == 1 for r in loads)
    end = [r for r in rows if r["kind"] == "AivKernelEnd"]
    assert len(end) == 1 and len(end[0]["after"]) == 1


def test_products_describe_the_aiv_engine():
    from pyhcomm.hcomm.resources.engines import engines_text
    from pyhcomm.products import find_product
    a350 = engines_text([find_product(A350)])
    row = next(line for line in a350.splitlines() if line.strip().startswith("AIV "))
    for part in ("device", "ROCE,UBC_TP,UB_CTP,UB_MEM", "aiv-kernel", "aiv_task",
                 "blocks that load, store and signal flags over AIV channels"):
        assert part in row, row
    a2 = engines_text([find_product("Atlas 800T A2")])
    row = next(line for line in a2.splitlines() if line.strip().startswith("AIV "))
    assert "no AIV channels here" in row and "UB_MEM" not in row
