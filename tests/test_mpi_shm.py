"""The doorbells of the MPI transport on their own (no MPI): a mailbox, rings written through a
second mapping of it, handled in the order of the sender's messages, and the checks that keep a
process from ringing a mailbox that is not the one its hello named; the link's serve order with a
stand-in for MPI."""
import numpy as np
import pytest

from pyhcomm.backend import CpuBackend
from pyhcomm.backend import cpu as cpu_mod
from pyhcomm.transport import mpi_link, mpi_shm, mpi_wire
from pyhcomm.transport.mpi_shm import RING, Doorbell, Mailbox

pytestmark = pytest.mark.skipif(not cpu_mod._MEMFD, reason="needs memfd_create and /proc (Linux)")


@pytest.fixture
def box():
    """Process 0's mailbox of a job of 3 and the doorbell process 2 rings it with."""
    be = CpuBackend(threads=1)
    mine = Mailbox.make(3, be)
    bell = Doorbell.attach(mine.hello(be), 2, 3, be)
    assert bell is not None
    return mine, bell


def test_rings_are_handled_in_order_once_the_messages_before_them_arrived(box):
    mine, bell = box
    assert not mine.pending(2) and mine.take(2, 0) is None
    bell.ring(7 << 32 | 1, 0, 0)        # nothing sent before it
    bell.ring(7 << 32 | 1, 1, 2)        # after two messages
    bell.ring(7 << 32 | 5, 0, 2)
    assert mine.pending(2) and not mine.pending(1)
    assert mine.take(2, 0) == (7 << 32 | 1, 0)
    assert mine.take(2, 1) is None       # one message of the two arrived: wait for the other
    assert mine.pending(2)
    assert mine.take(2, 2) == (7 << 32 | 1, 1)
    assert mine.take(2, 2) == (7 << 32 | 5, 0)
    assert mine.take(2, 9) is None and not mine.pending(2)


def test_a_full_ring_has_no_room_until_its_owner_handles_one(box):
    mine, bell = box
    for i in range(RING):
        assert bell.room()
        bell.ring(1, i, 0)
    assert not bell.room()
    assert mine.take(2, 0) == (1, 0)
    assert bell.room()
    bell.ring(1, RING, 0)               # wraps around to the freed slot
    got = [mine.take(2, 0)[1] for _ in range(RING)]
    assert got == list(range(1, RING + 1)) and mine.take(2, 0) is None


def test_a_doorbell_is_refused_for_another_machine_or_mailbox():
    be = CpuBackend(threads=1)
    mine = Mailbox.make(2, be)
    key, pid, handle, token = mine.hello(be)
    assert Doorbell.attach((key, pid, handle, token), 1, 2, be) is not None
    assert Doorbell.attach(("elsewhere/" + key, pid, handle, token), 1, 2, be) is None
    assert Doorbell.attach((key, pid, handle, (token[0] + 1, token[1])), 1, 2, be) is None
    assert Doorbell.attach((key, pid, handle, token), 1, 3, be) is None      # another job's size
    assert Doorbell.attach((key, pid, None, token), 1, 2, be) is None
    assert Doorbell.attach((key, pid, handle[:1] + (10**6,) + handle[2:], token), 1, 2, be) is None


def test_the_host_key_names_this_boot_of_this_machine():
    key = mpi_shm.host_key()
    assert key == mpi_shm.host_key() and "/" in key


# -- the link's serve order (a stand-in for MPI: messages queued in a list) -------------------------
class _FakeMPI:
    ANY_SOURCE, BYTE = -1, "byte"

    @staticmethod
    def Status():
        return _Status()


class _Status:
    def Get_source(self):
        return self.src

    def Get_count(self, _type):
        return self.n


class _Msg:
    def __init__(self, data):
        self.data = data

    def Recv(self, spec):
        buf, n, _t = spec
        buf[:n] = np.frombuffer(self.data, np.uint8)


class _Comm:
    """Messages from other processes, in order (to process 0 of 3); counts the probes."""

    def __init__(self):
        self.queue, self.probes = [], 0

    def Get_rank(self):
        return 0

    def Get_size(self):
        return 3

    def Iprobe(self, _src, _tag):
        self.probes += 1
        return bool(self.queue)

    def Improbe(self, _src, _tag, st):
        if not self.queue:
            return None
        st.src, data = self.queue.pop(0)
        st.n = len(data)
        return _Msg(data)


class _Ends:
    """The transport a ring or a notify message is routed to: notes what arrived, in order."""

    def __init__(self):
        self.got = []

    def on_ring(self, src, tid, index):
        self.got.append(("ring", src, index))

    def on_data(self, src, op, tid, addr, size, aux, *_rest):
        self.got.append(("message", src, aux))


def _notify_message(tid, index) -> bytes:
    buf = np.zeros(mpi_wire.HDR, np.uint8)
    buf[0] = ord("D")
    buf[8:].view(np.int64)[:] = (mpi_wire.NOTIFY, tid, 0, 0, index, 0, 0, 0)
    return buf.tobytes()


@pytest.fixture
def served(box):
    """Process 0's link of a job of 3 (no MPI), with process 2 ringing its mailbox."""
    mine, bell = box
    class MPI(_FakeMPI):
        COMM_WORLD = _Comm()

    ln = mpi_link.Link(MPI, mpi_link.LinkSettings(liveness=0, shm=False))   # made, not started
    ends = _Ends()
    ln.near.mailbox, ln.near.ringers = mine, [2]
    ln.routes_end[9] = ends
    return ln, bell, ends


def test_a_serve_that_handled_rings_leaves_the_messages_for_the_next_one_never_twice(served):
    ln, bell, ends = served
    bell.ring(9, 0, 0)                                  # process 2 rings, process 1 sends a message
    ln.comm.queue.append((1, _notify_message(9, 1)))
    assert ln.serve() == 1 and ends.got == [("ring", 2, 0)] and ln.comm.probes == 0
    bell.ring(9, 2, 0)                                  # process 2 rings again
    assert ln.serve() == 2                              # ... but the message is not left twice
    assert ends.got == [("ring", 2, 0), ("ring", 2, 2), ("message", 1, 1)] and ln.comm.probes == 2
    assert ln.serve() == 0 and ln.received == 3


def test_a_ring_after_a_message_waits_for_it_whichever_is_seen_first(served):
    ln, bell, ends = served
    bell.ring(9, 5, 1)                                  # after one message, still on its way
    assert ln.serve() == 0 and ends.got == []
    ln.comm.queue.append((2, _notify_message(9, 4)))
    assert ln.serve() == 2 and ends.got == [("message", 2, 4), ("ring", 2, 5)]


def test_watch_handles_what_arrives_and_gives_up_after_a_few_microseconds(served):
    ln, bell, ends = served
    assert ln.watch() == 0 and ends.got == []           # nothing comes: it returns (after _SPIN)
    bell.ring(9, 3, 0)
    assert ln.watch() == 1 and ends.got == [("ring", 2, 3)]
