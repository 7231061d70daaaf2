"""Every test starts from a fresh runtime on the default product and leaves no thread behind."""
import threading

import pytest

import pyhcomm
from pyhcomm.core.runtime import runtime
from pyhcomm.core.scheduler import scheduler
from pyhcomm.products import DEFAULT_PRODUCT


@pytest.fixture(autouse=True)
def fresh_runtime():
    runtime.reset()
    runtime.product_chosen = False
    runtime.set_product(DEFAULT_PRODUCT, chosen=False)
    runtime.notify_counting = False
    pyhcomm.record.clear()
    scheduler.hosts.clear()
    before = set(threading.enumerate())
    yield
    runtime.reset()
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()
              and not t.name.startswith("pyhcomm-copy")]
    assert not leaked, f"threads outlived the test: {leaked}"


@pytest.fixture
def product():
    """Select a product for one test: ``product("Atlas 350")``."""
    def select(name):
        return runtime.set_product(name)  # chosen: a later acl.init() keeps it
    return select


@pytest.fixture
def dev():
    """Device 0, open for the test (Pythonic tier)."""
    with pyhcomm.Device(0) as d:
        yield d


@pytest.fixture
def comm(dev):
    """A one-rank communicator on device 0 (``HcclCommInitAll``)."""
    ret, comms = pyhcomm.HcclCommInitAll(1, [0])
    assert ret == pyhcomm.HCCL_SUCCESS
    return comms[0]
