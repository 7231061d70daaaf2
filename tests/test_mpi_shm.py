"""The doorbells of the MPI transport on their own (no MPI): a mailbox, rings written through a
second mapping of it, handled in the order of the sender's messages, and the checks that keep a
process from ringing a mailbox that is not the one its hello named."""
import pytest

from pyhcomm.backend import CpuBackend
from pyhcomm.backend import cpu as cpu_mod
from pyhcomm.transport import mpi_shm
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
