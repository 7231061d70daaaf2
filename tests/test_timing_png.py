"""The PNG timeline (pyhcomm.timing.png): its legend lists only what is drawn, and sits clear of the
axes, their tick labels and the x-axis label."""
import os

import pytest

import pyhcomm
from pyhcomm import acl
from pyhcomm.timing.replay import replay

pytest.importorskip("matplotlib")
#: matplotlib costs seconds of CPU and does not depend on the scheduler: the threaded pass only.
pytestmark = pytest.mark.skipif(os.environ.get("PYHCOMM_SCHEDULER") == "coop",
                                reason="scheduler-independent; runs in the threaded pass")


def _one_copy(comm):
    dev = pyhcomm.Device(comm.device)
    stream = dev.stream()
    thread = comm.thread(pyhcomm.COMM_ENGINE_CPU_TS, stream=stream)
    a, b = dev.malloc(1 << 20), dev.malloc(1 << 20)
    thread.local_copy(b, a)
    stream.synchronize()


def _allreduce(comm):
    send, _ = acl.rt.malloc(1 << 16, 0)
    recv, _ = acl.rt.malloc(1 << 16, 0)
    stream, _ = acl.rt.create_stream()
    pyhcomm.HcclAllReduce(send, recv, 1 << 14, pyhcomm.HCCL_DATA_TYPE_FP32, pyhcomm.HCCL_REDUCE_SUM, comm.handle,
                          stream)
    acl.rt.synchronize_stream(stream)


def _timeline(body, nranks):
    sim = pyhcomm.Sim(product="Atlas 800T A2", data=False)
    pyhcomm.launch(body, nranks, sim=sim)
    return replay(sim)


def _laid_out(tl):
    """The figure drawn (then closed): its legend's labels and whether the legend overlaps the axes,
    a tick label or the x-axis label, and whether it lies inside the saved image."""
    import matplotlib.pyplot as plt
    from pyhcomm.timing.png import figure
    fig, _rows = figure(tl)
    try:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        legend = ax.get_legend()
        box = legend.get_window_extent(renderer)
        others = [ax.get_window_extent(renderer), ax.xaxis.label.get_window_extent(renderer)]
        others += [t.get_window_extent(renderer) for t in ax.get_xticklabels() + ax.get_yticklabels() if t.get_text()]
        tight = fig.get_tightbbox(renderer).transformed(fig.dpi_scale_trans)   # inches -> pixels
        return ([t.get_text() for t in legend.get_texts()], [o for o in others if box.overlaps(o)],
                tight.contains(box.x0, box.y0) and tight.contains(box.x1, box.y1))
    finally:
        plt.close(fig)


def test_the_legend_of_a_local_copy_lists_the_copy_and_the_host_only():
    labels, overlaps, inside = _laid_out(_timeline(_one_copy, 1))
    assert labels == ["copy", "host"]
    assert overlaps == [] and inside


def test_the_legend_of_an_allreduce_lists_what_it_drew_clear_of_the_axes():
    labels, overlaps, inside = _laid_out(_timeline(_allreduce, 2))
    assert labels == ["transfer", "copy", "reduce", "record", "wait", "host", "notify"]    # no kernel, no other
    assert overlaps == [] and inside


def test_write_png_writes_the_figure(tmp_path):
    from pyhcomm.timing.png import write_png
    path = tmp_path / "t.png"
    assert write_png(_timeline(_allreduce, 2), path) == 4      # a stream and a host row per rank
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
