"""Products: the catalogue, its selection (env, set_product, acl.init), SoC names, the CLI listing
and the seed's support table (HCCL_E_NOT_SUPPORT with a log line on unsupported products)."""
import logging
import os
import subprocess
import sys

import pytest

import pyhcomm
from pyhcomm import acl
from hcomm_testutil import host_setup, malloc, pattern, read, write

ALL_NAMES = ["Atlas 350", "Atlas A3", "Atlas 800T A2", "Atlas 900 A2 PoD", "Atlas 200T A2 Box16",
             "Atlas 800I A2", "Atlas 200I/500 A2", "Atlas inference series", "Atlas training series"]
SUPPORTED = ["Atlas A3", "Atlas 800T A2", "Atlas 900 A2 PoD", "Atlas 200T A2 Box16"]
UNSUPPORTED = ["Atlas 800I A2", "Atlas 200I/500 A2", "Atlas inference series", "Atlas training series"]

SOC_PREFIX = {
    "Atlas 800T A2": "Ascend910B",
    "Atlas 900 A2 PoD": "Ascend910B",
    "Atlas 200T A2 Box16": "Ascend910B",
    "Atlas 800I A2": "Ascend910B",
    "Atlas A3": "Ascend910_93",
    "Atlas 350": "Ascend950PR_",
    "Atlas inference series": "Ascend310P",
    "Atlas training series": "Ascend910A",
    "Atlas 200I/500 A2": "Ascend310B",
}


def _subprocess_env(**extra):
    env = dict(os.environ)
    env.pop("PYHCOMM_PRODUCT", None)
    env.update(extra)
    return env


def test_default_product_is_atlas_800t_a2():
    assert pyhcomm.DEFAULT_PRODUCT == "Atlas 800T A2"
    assert pyhcomm.get_product().name == "Atlas 800T A2"
    assert acl.get_soc_name() == "Ascend910B1"
    assert acl.rt.get_soc_name() == "Ascend910B1"


def test_catalogue_has_exactly_the_nine_products():
    assert sorted(p.name for p in pyhcomm.PRODUCTS) == sorted(ALL_NAMES)


@pytest.mark.parametrize("name", ALL_NAMES)
@pytest.mark.parametrize("spelling", [str, str.upper, str.lower, str.swapcase])
def test_set_product_accepts_every_name_case_insensitively(name, spelling):
    p = pyhcomm.set_product(spelling(name))
    assert p.name == name
    assert pyhcomm.get_product().name == name
    soc = acl.rt.get_soc_name()
    assert soc == acl.get_soc_name()
    assert soc.startswith(SOC_PREFIX[name]), soc


@pytest.mark.parametrize("name,soc", [("Atlas 800T A2", "Ascend910B1"), ("Atlas A3", "Ascend910_9391"),
                                      ("Atlas inference series", "Ascend310P3"),
                                      ("Atlas training series", "Ascend910A")])
def test_exact_soc_names(name, soc):
    pyhcomm.set_product(name)
    assert acl.get_soc_name() == soc
    assert acl.rt.get_soc_name() == soc


def test_unknown_product_raises_value_error_listing_valid_names():
    before = pyhcomm.get_product().name
    with pytest.raises(ValueError) as info:
        pyhcomm.set_product("Atlas 9000 Z9")
    msg = str(info.value)
    assert "Atlas 9000 Z9" in msg
    for name in ALL_NAMES:
        assert name in msg, f"{name!r} missing from {msg!r}"
    assert pyhcomm.get_product().name == before
    with pytest.raises(ValueError):
        pyhcomm.find_product("")


def test_env_product_is_read_by_acl_init(monkeypatch, env):
    env("PYHCOMM_PRODUCT", "atlas a3")
    assert acl.init() == 0
    assert pyhcomm.get_product().name == "Atlas A3"
    assert acl.get_soc_name() == "Ascend910_9391"


def test_unknown_env_product_at_acl_init_is_a_value_error(monkeypatch, env):
    env("PYHCOMM_PRODUCT", "Atlas Nonexistent")
    with pytest.raises(ValueError) as info:
        acl.init()
    assert "Atlas 800T A2" in str(info.value)


def test_set_product_wins_over_env_at_acl_init(monkeypatch, env):
    pyhcomm.set_product("Atlas 350")
    env("PYHCOMM_PRODUCT", "Atlas A3")
    assert acl.init() == 0
    assert pyhcomm.get_product().name == "Atlas 350"
    assert acl.get_soc_name().startswith("Ascend950PR_")


def test_set_product_refused_while_a_device_is_open():
    assert acl.rt.set_device(0) == 0
    with pytest.raises(RuntimeError):
        pyhcomm.set_product("Atlas A3")
    assert pyhcomm.get_product().name == "Atlas 800T A2"
    assert acl.rt.reset_device(0) == 0
    assert pyhcomm.set_product("Atlas A3").name == "Atlas A3"


def test_env_product_is_read_at_import():
    code = "import pyhcomm; from pyhcomm import acl; print(pyhcomm.get_product().name); print(acl.get_soc_name())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env=_subprocess_env(PYHCOMM_PRODUCT="ATLAS 350"))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.split("\n")
    assert lines[0] == "Atlas 350"
    assert lines[1].startswith("Ascend950PR_")


def test_cli_lists_products():
    out = subprocess.run([sys.executable, "-m", "pyhcomm", "products"], capture_output=True, text=True,
                         timeout=60, env=_subprocess_env())
    assert out.returncode == 0, out.stderr
    for name in ALL_NAMES:
        assert name in out.stdout
    for soc in ("Ascend910B1", "Ascend910_9391", "Ascend950PR_", "Ascend310P3", "Ascend910A"):
        assert soc in out.stdout


@pytest.mark.parametrize("name", SUPPORTED)
def test_local_copy_works_on_supported_products(name):
    pyhcomm.set_product(name)
    _comm, stream, thread = host_setup()
    src, dst = malloc(256), malloc(256)
    data = write(src, pattern(256))
    assert pyhcomm.HcommLocalCopyOnThread(thread, dst, src, 256) == pyhcomm.HCCL_SUCCESS
    assert acl.rt.synchronize_stream(stream) == 0
    assert (read(dst, 256) == data).all()


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_local_copy_not_supported_outside_support_table(name, caplog):
    pyhcomm.set_product(name)
    _comm, stream, thread = host_setup()
    src, dst = malloc(256), malloc(256, fill=0x5A)
    write(src, pattern(256))
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        ret = pyhcomm.HcommLocalCopyOnThread(thread, dst, src, 256)
    assert ret == pyhcomm.HCCL_E_NOT_SUPPORT == 5
    lines = [r.getMessage() for r in caplog.records if r.name == "pyhcomm"]
    assert any("HcommLocalCopyOnThread" in m and name in m for m in lines), lines
    assert not pyhcomm.record.tasks(kind="LocalCopy")
    assert acl.rt.synchronize_stream(stream) == 0
    assert (read(dst, 256) == 0x5A).all()


def test_atlas_800i_a2_log_says_why(caplog):
    pyhcomm.set_product("Atlas 800I A2")
    _comm, _stream, thread = host_setup()
    src, dst = malloc(64), malloc(64)
    with caplog.at_level(logging.ERROR, logger="pyhcomm"):
        assert pyhcomm.HcommLocalCopyOnThread(thread, dst, src, 64) == 5
    text = caplog.text
    assert "Atlas 800T A2" in text and "Atlas 900 A2 PoD" in text and "Atlas 200T A2 Box16" in text


def test_error_string_for_not_support():
    assert pyhcomm.HcclGetErrorString(5) == "not support feature"
    assert pyhcomm.HCCL_E_NOT_SUPPORT == 5
