"""A CUDA extension is judged in the process that imports it (envdoctor.binaries.process): a torch extension lists
torch's libraries in DT_NEEDED with no RUNPATH to them, by design, because `import torch` loaded them first. Real
files throughout: a framework distribution named torch whose _C extension loads its lib/libc10.so through RUNPATH
(gcc), an extension built by nvcc that needs libc10.so and the CUDA runtime; and the real dynamic loader
(LD_DEBUG=libs,files, tests/realwheels/ldtrace.py) as the referee of every soname."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.binfakes import add_dist, build_c_lib, build_cuda, fake_venv
from tests.fakes import FIX
from tests.realwheels.ldtrace import compare, trace

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the ELF loader")
BANNER = FIX / "nvidia" / "smi_595.71.05_rtx5090.txt"
QUERY = "0, NVIDIA A100-SXM4-80GB, 8.0, 81920, 00000000:00:1E.0, GPU-0b0e2a9c-0000-0000-0000-000000000000, 595.71.05\n"
TOOLKIT_LIB = Path("/usr/local/cuda/lib64")
PY = f"python{sys.version_info[0]}.{sys.version_info[1]}"
C_EXT = f"_C.cpython-{sys.version_info[0]}{sys.version_info[1]}-x86_64-linux-gnu.so"
LOADS = 'import ctypes, os\nctypes.CDLL(os.path.join(os.path.dirname(__file__), "{name}"))\n'


def _world(tmp_path: Path, requires: str = "Requires-Dist: torch>=2.0\n", needs: str = "c10", provide: bool = True,
           name: str = "myext"):
    if not (TOOLKIT_LIB / "libcudart.so.13").exists() and not list(TOOLKIT_LIB.glob("libcudart.so.*")):
        pytest.skip("no CUDA runtime in /usr/local/cuda/lib64 for the real loader")
    venv = tmp_path / "venv"
    build = tmp_path / "build"
    c10 = build_c_lib(build / "libc10.so", "libc10.so")
    core = build_c_lib(build / "torch_C.so", "", extra=[f"-L{build}", "-Wl,--no-as-needed", "-lc10",
                                                        "-Wl,--enable-new-dtags,-rpath,$ORIGIN/lib"])
    if needs != "c10":
        build_c_lib(build / f"lib{needs}.so", f"lib{needs}.so")  # to link against; the test removes it after
    ext = build_cuda(build / "myext_C.so", ["arch=compute_80,code=sm_80"],
                     extra=[f"-L{build}", "-Xlinker", "--no-as-needed", f"-l{needs}"])
    sp = fake_venv(venv, "torch", "2.15.0", {"torch/__init__.py": None, "torch/version.py": None,
                                            f"torch/{C_EXT}": core, **({"torch/lib/libc10.so": c10} if provide else {})})
    (sp / "torch" / "__init__.py").write_text(LOADS.format(name=C_EXT))
    (sp / "torch" / "version.py").write_text("__version__ = '2.15.0+cu130'\ncuda = '13.0'\ngit_version = 'x'\n")
    info = add_dist(sp, name, "1.0", {f"{name}/__init__.py": None, f"{name}/_C.so": ext})
    (sp / name / "__init__.py").write_text("import torch\n" + LOADS.format(name="_C.so"))
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n{requires}")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (tmp_path / "q.csv").write_text(QUERY)
    smi = bindir / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\ncase "$1" in --query-gpu=*) cat "{tmp_path / "q.csv"}"; exit 0;; esac\ncat "{BANNER}"\n')
    smi.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "LD_PRELOAD")}
    env.update(PATH=f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}", LD_LIBRARY_PATH=str(TOOLKIT_LIB),
               ENVDOCTOR_NO_CACHE="1")
    return venv / "bin" / "python", env


def _cli(env, *args):
    proc = subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, env=env,
                          timeout=300, cwd=str(Path(__file__).parent.parent))
    assert proc.returncode in (0, 1), proc.stderr
    return proc


def _ext(snap: dict, name: str = "myext") -> dict:
    [b] = [b for b in snap["binaries"]["binaries"] if b["package"] == name]
    return {lib["soname"]: lib for lib in b["libraries"]}


@pytest.mark.parametrize("requires, name", [("Requires-Dist: torch>=2.0\n", "myext"), ("", "myext"), ("", "torchaudio")],
                         ids=["requires torch", "metadata silent", "a listed companion, metadata silent"])
def test_a_torch_extensions_needed_torch_library_is_already_loaded(tmp_path, requires, name):
    """torchaudio 2.11 names no torch in its metadata and is a framework envdoctor lists: its import still runs
    torch's first (vllm's real install: tests/fixtures/realwheels/vllm.json)."""
    python, env = _world(tmp_path, requires, name=name)
    snap = json.loads(_cli(env, "probe", "--python", str(python), "--format", "json", "--no-redact").stdout)
    libs = _ext(snap, name)
    assert libs["libc10.so"]["via"] == "already loaded" and libs["libc10.so"]["loaded_by"] == "torch 2.15.0"
    assert libs["libc10.so"]["path"].endswith("/torch/lib/libc10.so")
    report = json.loads(_cli(env, "check", "--python", str(python), "--format", "json").stdout)
    assert [f for f in report["findings"] if f["id"] == "ED650"] == []
    # the referee: the real loader, importing the same files in the same order
    tr = trace(str(python), ["torch", name], env=env)
    assert tr.results == {"torch": "ok", name: "ok"}, tr.results
    compared, diffs = compare(snap, tr)
    assert compared >= 3 and diffs == []


def test_a_library_nobody_loads_or_provides_is_still_missing(tmp_path):
    python, env = _world(tmp_path, needs="bar")
    (tmp_path / "build" / "libbar.so").unlink()  # built to link against, then gone: nothing provides it
    report = json.loads(_cli(env, "check", "--python", str(python), "--format", "json").stdout)
    [f] = [f for f in report["findings"] if f["id"] == "ED650"]
    assert "libbar.so" in f["message"] and "libc10" not in f["message"]
    tr = trace(str(python), ["torch", "myext"], env=env)
    assert "libbar.so: cannot open shared object file" in tr.results["myext"]


def test_a_cpu_build_without_the_library_does_not_provide_it(tmp_path):
    python, env = _world(tmp_path, provide=False)
    report = json.loads(_cli(env, "check", "--python", str(python), "--format", "json").stdout)
    [f] = [f for f in report["findings"] if f["id"] == "ED650"]
    assert "libc10.so" in f["message"]
    tr = trace(str(python), ["torch"], env=env)
    assert "libc10.so: cannot open shared object file" in tr.results["torch"]
