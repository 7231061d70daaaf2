"""Main/slave with the Pythonic tier: Device, Comm, Thread, Buffer, and Thread.record / Thread.wait.

Part 1, host side on Atlas 800T A2: the main thread wraps the user's stream and releases N slave
threads; each slave reduces (fp32 sum) its slice of ``inp`` into ``acc``; the main thread waits for
all of them, then copies the finished result to ``out``.

Part 2, device side on Atlas 350: the same fan-out / fan-in inside an AI CPU kernel, eager (Atlas
350 runs device-side code with or without batch mode), with the host <-> device handshake on the
user stream.

Errors raise HcclError (with .code and .api); synchronize() raises a stream's first failure.
"""
import numpy as np

import pyhcomm
from pyhcomm import COMM_ENGINE_AICPU_TS, COMM_ENGINE_CPU_TS, Comm, Device, Kernel

SLAVES = 4
COUNT = 2048                      # fp32 elements per slave
TOTAL = SLAVES * COUNT
WAIT_S = 1836


def fan_out_fan_in(main, slaves, acc, inp):
    """main releases every slave; slave i reduces its slice; main waits for every slave."""
    for s in slaves:
        main.record(s, 0)
    for i, s in enumerate(slaves):
        part = slice(i * COUNT * 4, (i + 1) * COUNT * 4)
        s.wait(0, WAIT_S)
        s.local_reduce(acc[part], inp[part], dtype=np.float32, op="sum")
        s.record(main, i)
    for i in range(len(slaves)):
        main.wait(i, WAIT_S)


def inputs(dev):
    inp, acc = dev.malloc(TOTAL * 4), dev.malloc(TOTAL * 4)
    x = np.linspace(-1.0, 1.0, TOTAL, dtype=np.float32)
    y = np.full(TOTAL, 10.0, dtype=np.float32)
    inp.write(x)
    acc.write(y)
    return inp, acc, y + x


# -- part 1: host side, Atlas 800T A2 -------------------------------------------------------------------
pyhcomm.set_product("Atlas 800T A2")
with Device(0) as dev:
    print(f"part 1: {pyhcomm.get_product().name} ({dev.soc_name}), host side")
    (comm,) = Comm.init_all([0])
    user = dev.stream()
    main = comm.thread(COMM_ENGINE_CPU_TS, stream=user, notify_num=SLAVES)
    slaves = comm.threads(COMM_ENGINE_CPU_TS, SLAVES, notify_num=1)
    print(f"  main {main} on the user stream, {len(slaves)} slaves")
    inp, acc, expected = inputs(dev)
    out = dev.malloc(TOTAL * 4)

    fan_out_fan_in(main, slaves, acc, inp)
    main.local_copy(out, acc)                     # runs after the fan-in: every slice is complete
    # a deliberate race: this read is not ordered after the copy (verify reports it, labelled)
    early = out.read()                            # pyhcomm: deliberate race
    print("  enqueued; out read before synchronize (a deliberate race) is still zero:", not early.any())
    user.synchronize()                            # the user stream only
    result = out.read(np.float32)
    print("  out == acc + inp:", bool(np.array_equal(result, expected)))
    assert np.array_equal(result, expected)

    # a mistake raises at once, naming the call and the argument
    try:
        main.record(slaves[0], 5)
    except pyhcomm.HcclError as exc:
        print(f"  main.record(slave, 5) -> {exc.code.name}: {exc}")
    comm.close()
    user.close()


# -- part 2: device side, Atlas 350 ---------------------------------------------------------------------
def kernel(main, slaves, host_on_aicpu, acc, inp):
    """AI CPU kernel: wait for the host, fan out / fan in (eager), release the host."""
    main.wait(len(slaves), WAIT_S)
    fan_out_fan_in(main, slaves, acc, inp)
    main.record(host_on_aicpu, 0)


pyhcomm.reset()                                   # close everything (Comm.init_all opened device 0 too)
pyhcomm.set_product("Atlas 350")
with Device(0) as dev:
    print(f"part 2: {pyhcomm.get_product().name} ({dev.soc_name}), device side")
    (comm,) = Comm.init_all([0])
    user = dev.stream()
    host = comm.thread(COMM_ENGINE_CPU_TS, stream=user, notify_num=1)
    host_on_aicpu = host.export(COMM_ENGINE_AICPU_TS)
    main, *slaves = comm.threads(COMM_ENGINE_AICPU_TS, SLAVES + 1, notify_num=SLAVES + 1)
    main_on_cpu = main.export(COMM_ENGINE_CPU_TS)
    inp, acc, expected = inputs(dev)

    host.record(main_on_cpu, SLAVES)              # host -> device: the kernel may start
    Kernel(kernel).launch(user, main, slaves, host_on_aicpu, acc, inp)
    host.wait(0, WAIT_S)                          # device -> host: the user stream waits for the kernel
    early = acc.read(np.float32)                  # pyhcomm: deliberate race (as in part 1)
    print("  handshake and kernel enqueued; acc read now (a deliberate race) is unchanged:", bool((early == 10).all()))
    user.synchronize()
    result = acc.read(np.float32)
    print("  acc == 10 + inp:", bool(np.array_equal(result, expected)))
    assert np.array_equal(result, expected)
    comm.close()
    user.close()
