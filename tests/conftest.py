"""Every test starts from a fresh Sim on the default product and leaves no thread behind.

``PYHCOMM_SCHEDULER`` picks the scheduler of the suite's Sims (CI runs the suite on both); a
test that starts OS threads of its own is marked ``threads`` and always gets the threaded one.
"""
import inspect
import threading

import pytest

import pyhcomm
from pyhcomm.products import DEFAULT_PRODUCT


pytest_plugins = ["pytester"]    # tests of pyhcomm's own pytest plugin run pytest in-process


def pytest_addoption(parser):
    parser.addoption("--slow", action="store_true", default=False,
                     help="also run the tests marked slow (long variants CI does not run)")


def pytest_configure(config):
    config.addinivalue_line("markers", "threads: the test starts OS threads of its own (threaded scheduler)")
    config.addinivalue_line("markers", "slow: a long variant, run on demand (--slow, or -m slow)")


_STARTS_THREADS = ("run_threads(", "threading.Thread(")


def pytest_collection_modifyitems(config, items):
    """Mark the tests whose body starts OS threads (the cooperative scheduler is bound to one);
    skip the slow ones unless asked for."""
    run_slow = config.getoption("--slow") or "slow" in (config.getoption("-m") or "")
    for item in items:
        if item.get_closest_marker("slow") and not run_slow:
            item.add_marker(pytest.mark.skip(reason="slow: run with --slow (or -m slow)"))
        fn = getattr(item, "function", None)
        try:
            source = inspect.getsource(fn) if fn is not None else ""
        except (OSError, TypeError):
            source = ""
        if any(s in source for s in _STARTS_THREADS):
            item.add_marker("threads")


@pytest.fixture(autouse=True)
def fresh_runtime(request):
    options = {"product": DEFAULT_PRODUCT}
    if request.node.get_closest_marker("threads"):
        options["scheduler"] = "threaded"
    pyhcomm.reset(**options)
    before = set(threading.enumerate())
    yield
    pyhcomm.current_sim().runtime.reset()
    leaked = [t for t in threading.enumerate() if t not in before and t.is_alive()
              and not t.name.startswith("pyhcomm-copy")]
    assert not leaked, f"threads outlived the test: {leaked}"


@pytest.fixture
def product():
    """Select a product for one test: ``product("Atlas 350")``."""
    def select(name):
        return pyhcomm.set_product(name)  # chosen: a later acl.init() keeps it
    return select


@pytest.fixture
def dev():
    """Device 0, open for the test (Pythonic tier)."""
    with pyhcomm.Device(0) as d:
        yield d


@pytest.fixture
def comm(dev):
    """A one-rank communicator on device 0 (``HcclCommInitAll``)."""
    ret, comms = pyhcomm.HcclCommInitAll([0])
    assert ret == pyhcomm.HCCL_SUCCESS
    return comms[0]


@pytest.fixture
def env(monkeypatch):
    """Set an environment variable for one test and have the Sim parse the environment again
    (configuration is read when a Sim is created and at ``aclInit``)."""
    def setenv(name, value):
        monkeypatch.setenv(name, value)
        pyhcomm.current_sim().reload_config()
    yield setenv
    monkeypatch.undo()
    pyhcomm.current_sim().reload_config()
