"""Load a script of benchmarks/ as a module, for the tests of its functions and its table."""
import importlib.util
import pathlib

BENCHMARKS = pathlib.Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str):
    """The module of ``benchmarks/<name>.py`` (loaded afresh: each call runs its top level)."""
    spec = importlib.util.spec_from_file_location(f"{name}_bench", BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
