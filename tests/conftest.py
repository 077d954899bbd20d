"""Shared test fixtures. Rule tests build snapshots with tests/snapfactory.py."""
from __future__ import annotations

import os
import shutil
import tempfile

import pytest


def pytest_configure(config):
    # pip settings of the shell that started the run say where *that* install reads packages from (.ci/run points
    # the README's install at a wheelhouse and no index): the tests state their own indexes, and envdoctor, gate's
    # resolver and the venvs the tests make read pip's environment, so these would change what they see.
    for var in ("PIP_NO_INDEX", "PIP_FIND_LINKS"):
        os.environ.pop(var, None)
    # envdoctor's user cache (refreshed tables, the parsed form of the bundled ones) is per test run,
    # so a cache left by another checkout or version never changes what the tests see; a test that
    # needs its own sets ENVDOCTOR_CACHE_DIR itself. Set here, so that subprocesses inherit it too.
    if "ENVDOCTOR_TEST_KEEP_CACHE" not in os.environ:
        cache = tempfile.mkdtemp(prefix="envdoctor-test-cache-")
        os.environ["ENVDOCTOR_CACHE_DIR"] = cache
        config.add_cleanup(lambda: shutil.rmtree(cache, ignore_errors=True))


@pytest.fixture
def fw_python():
    """The interpreter of a venv holding the real CPU builds of torch, tensorflow-cpu and jax (set up by .ci/run)."""
    path = os.environ.get("ENVDOCTOR_TEST_FW_PYTHON")
    if not path or not os.path.exists(path):
        pytest.skip("ENVDOCTOR_TEST_FW_PYTHON is not set to a venv with torch, tensorflow-cpu and jax")
    return path


@pytest.fixture(autouse=True, scope="session")
def _private_cache_dir(tmp_path_factory):
    """Every test run gets its own envdoctor cache, so a user's (or another checkout's) cache never changes a result."""
    if not os.environ.get("ENVDOCTOR_TEST_KEEP_CACHE"):
        os.environ["ENVDOCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("envdoctor-cache"))
    # gate asks a real resolver by default; tests judge offline unless they name one (tests/test_gate_resolve*.py)
    os.environ.setdefault("ENVDOCTOR_GATE_RESOLVER", "off")
    yield


@pytest.fixture(autouse=True, scope="session")
def _no_uv_on_path():
    """The fake machines are pip machines: a `uv` on the tester's PATH (the test venv's, from the resolve extra)
    would make onboard pick it. Tests of the uv paths put a fake uv first on PATH themselves; gate's resolver finds
    the uv package's binary without PATH."""
    import shutil

    kept = [d for d in os.environ.get("PATH", os.defpath).split(os.pathsep)
            if d and not shutil.which("uv", path=d)]
    os.environ["PATH"] = os.pathsep.join(kept)
    yield
