"""The Python-environment helper writes its JSON and normalises names itself (no json/re imports in the
target interpreter): the same text as json.dumps and re.sub, and it really imports neither."""
from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from envdoctor.probes import _pyenv_helper as helper
from envdoctor.probes.pyenv import HELPER_PATH

leaves = st.none() | st.booleans() | st.integers() | st.text() | st.floats(allow_nan=True)
values = st.recursive(leaves, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
                      max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(values)
def test_dumps_is_json_dumps(value):
    assert helper.dumps(value) == json.dumps(value, ensure_ascii=True, sort_keys=True)


def test_dumps_on_the_hard_strings():
    for text in ("", "plain", 'q"uote', "back\\slash", "\x00\x1f\x7f", "tab\tnl\ncr\r\b\f", "é中", "\U0001F600",
                 "\ud800", "line\u2028sep", "a" * 5000):
        assert helper.dumps([text, {text: text}]) == json.dumps([text, {text: text}], ensure_ascii=True, sort_keys=True)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aZ09-_.é", max_size=12))
def test_normalize_is_pep503(name):
    assert helper.normalize(name) == re.sub(r"[-_.]+", "-", name).lower()


BUNDLED_RE = re.compile(r"^lib(cudnn|cublas|cublasLt|cudart|nccl|nvrtc|nvJitLink|cufft|curand|cusolver|cusparse)"
                        r"([-_.].*)?\.so(\.[0-9.]+)?$")


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(["lib", "li", ""]), st.sampled_from(["cudnn", "cublas", "cublasLt", "cudart", "nvJitLink", "cuda", ""]),
       st.text(alphabet="-_.so0123456789Lta\n", max_size=10))
def test_bundled_names_as_the_pattern_says(prefix, family, rest):
    name = prefix + family + rest
    assert helper.is_bundled_lib(name) == bool(BUNDLED_RE.match(name)), name


def test_bundled_names():
    for yes in ("libcudnn.so.8", "libcudnn.so\n", "libcudnn.so.9\n", "libcudart-1b2c3d.so.11.0", "libcublasLt.so.12", "libnccl.so.2", "libcufft.so"):
        assert helper.is_bundled_lib(yes), yes
    for no in ("libcudnn.a", "libcudnnx.so", "libc10.so", "libcudart.so.x", "libcudart.so.", "cudnn.so", "libcudnn.so\n\n", "libcudnn-\n.so"):
        assert not helper.is_bundled_lib(no), no


def test_jax_plugin_files():
    assert helper.files_for("jax-cuda12-plugin") == ["jax_cuda12_plugin/version.py"]
    assert helper.files_for("jax-rocm7-pjrt") == ["jax_plugins/xla_rocm7/version.py"]
    for other in ("jax-cuda-plugin", "jax-cuda12-other", "jax-metal12-plugin", "jax-cuda1x-plugin", "jaxx-cuda12-plugin"):
        assert helper.files_for(other) == []


def test_the_helper_imports_neither_json_nor_re():
    source = HELPER_PATH.read_text(encoding="utf-8") + "\nprint('@@MODULES@@', ' '.join(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-I", "-c", source], capture_output=True, text=True, timeout=60).stdout
    report = next(line for line in out.splitlines() if line.startswith(helper.MARKER))
    data = json.loads(report[len(helper.MARKER):])
    assert data["helper"] == 1 and data["version"] == "%d.%d.%d" % sys.version_info[:3] or data["version"].startswith(
        "%d.%d.%d" % sys.version_info[:3])
    modules = next(line for line in out.splitlines() if line.startswith("@@MODULES@@")).split()[1:]
    assert "json" not in modules and "platform" not in modules


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=0x7F), max_size=60))
def test_ascii_strings_through_translate_are_the_loop(text):
    """ASCII text is escaped with str.translate: what the character loop and json.dumps write."""
    assert helper._string(text) == helper._string_loop(text) == json.dumps(text, ensure_ascii=True)


def _run_helper_both_ways(python: str, cwd) -> tuple:
    """The helper's stdout as the source given to -c (as envdoctor ran it before) and through the bootstrap."""
    import os

    from envdoctor.probes import pyenv
    from envdoctor.subproc import Runner

    env = pyenv._helper_env(os.environ)
    source = subprocess.run([python, "-c", HELPER_PATH.read_text(encoding="utf-8")], capture_output=True, text=True,
                            env=env, cwd=str(cwd), timeout=60)
    # ENVDOCTOR_NO_CACHE: the bootstrap then asks for no witness (the paths the walk read, kept with a cached answer)
    argv, _, env = pyenv._helper_command(python, Runner(env=dict(os.environ, ENVDOCTOR_NO_CACHE="1")), None)
    boot = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(cwd), timeout=60)
    return source, boot


def test_the_bootstrap_answers_what_the_source_answers(tmp_path):
    """The helper is imported from its folder now, not given whole to -c: the same answer, byte for byte, also with
    a json.py, re.py and _pyenv_helper.py in the working directory (sys.path[0] under -c), which are never read."""
    import os

    from envdoctor.probes import pyenv
    from envdoctor.subproc import Runner

    for name in ("json.py", "re.py", "_pyenv_helper.py", "os.py"):
        (tmp_path / name).write_text("raise SystemExit('picked up from the cwd')\n")
    pythons = [sys.executable] + [p for p in (os.environ.get("ENVDOCTOR_TEST_FW_PYTHON"),) if p]
    for python in pythons:
        source, boot = _run_helper_both_ways(python, tmp_path)
        assert source.returncode == boot.returncode == 0, (source.stderr, boot.stderr)
        assert boot.stdout == source.stdout and boot.stdout.startswith(helper.MARKER)
        data = json.loads(boot.stdout[len(helper.MARKER):])
        assert str(HELPER_PATH.parent) not in data["sys_path"] and "" not in data["sys_path"]
        # with the cache on, the same answer and its witness: the sys.path folders first, every one a [path, stat]
        argv, _, env = pyenv._helper_command(python, Runner(env={k: v for k, v in os.environ.items()
                                                                 if k != "ENVDOCTOR_NO_CACHE"}), None)
        witnessed = json.loads(subprocess.run(argv, capture_output=True, text=True, env=env, cwd=str(tmp_path),
                                              timeout=60).stdout[len(helper.MARKER):])
        witness = witnessed.pop("witness")
        assert witnessed == data
        assert [w[0] for w in witness[:len(data["sys_path"])]] == data["sys_path"]
        assert all(sig is None or len(sig) == 5 for _, sig in witness)  # envdoctor.cache.signature's fields


def test_the_bootstrap_loads_the_compiled_helper(tmp_path):
    """With the helper's .pyc in place (as importing it, or pip, writes it) an interpreter of this version loads it
    instead of compiling the source (python -v says which)."""
    import importlib.util
    import os
    import py_compile

    from envdoctor.probes import pyenv
    from envdoctor.subproc import Runner

    try:
        py_compile.compile(str(HELPER_PATH), cfile=importlib.util.cache_from_source(str(HELPER_PATH)), doraise=True)
    except (OSError, py_compile.PyCompileError) as exc:
        pytest.skip(f"cannot write the helper's .pyc here: {exc}")
    argv, _, env = pyenv._helper_command(sys.executable, Runner(env=dict(os.environ)), None)
    out = subprocess.run([argv[0], "-v"] + argv[1:], capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=60)
    assert out.returncode == 0 and out.stdout.startswith(helper.MARKER)
    pyc = importlib.util.cache_from_source(str(HELPER_PATH))
    assert f"code object from '{pyc}'" in out.stderr or f"code object from {pyc}" in out.stderr, out.stderr[-2000:]


def test_platform_tag_is_sysconfig_get_platform(tmp_path):
    """The helper names the platform without importing sysconfig on Linux: sysconfig.get_platform()'s
    answer, in this interpreter and the real framework venv's, also when _PYTHON_HOST_PLATFORM overrides it."""
    import os

    code = HELPER_PATH.read_text(encoding="utf-8").replace('if __name__ == "__main__":', "if False:") + (
        "\nimport sys\nprint(platform_tag(), 'sysconfig' in sys.modules)\nimport sysconfig\nprint(sysconfig.get_platform())\n")
    pythons = [sys.executable] + [p for p in (os.environ.get("ENVDOCTOR_TEST_FW_PYTHON"),) if p]
    for python in pythons:
        for extra in ({}, {"_PYTHON_HOST_PLATFORM": "linux-aarch64"}):
            env = {k: v for k, v in os.environ.items() if k != "_PYTHON_HOST_PLATFORM"}
            env.update(extra)
            out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, env=env, cwd=str(tmp_path),
                                 timeout=60).stdout.split()
            assert out[0] == out[2], (python, extra, out)
            if sys.platform == "linux" and not extra:
                assert out[1] == "False"  # sysconfig was not imported to answer
