"""The real stacks people install (tests/realwheels/stacks.py builds them, once, into $ENVDOCTOR_REALWHEELS_DIR),
judged through the CLI and refereed by the real dynamic loader. Marker `realwheels`: several GB each, not in the
README's fast command; .ci/run runs these when the folder is warm and says so when it is not.

* The loader oracle: each stack imported under LD_DEBUG=libs,files (CUDA builds import without a driver), and
  every soname of every CUDA binary the process mapped compared with envdoctor's simulation of the same
  environment; again with a classic breakage made from the same real files (copies of the stack's own CUDA
  libraries first on LD_LIBRARY_PATH).
* The verdict oracle: on a fake machine the stack fits (its GPU, a driver for its CUDA), every error envdoctor
  reports is one the real process shows (an ED650's soname is the one the real import fails on); on one it does
  not fit, the right error comes, and once.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.binfakes import build_c_lib
from tests.realwheels.ldtrace import compare, trace
from tests.realwheels.stacks import STACKS, default_dir, ready

pytestmark = pytest.mark.realwheels
ROOT = default_dir()
BUILT = ready(ROOT) if ROOT.is_dir() else []
FIX = Path(__file__).parent / "fixtures" / "nvidia"
# recorded banners (tests/fixtures/nvidia/SOURCES.toml): a driver for CUDA 13.2 where the stack should fit; R580,
# the last branch that drives Pascal, for the GTX 1080 it should not
FITS = (FIX / "smi_595.71.05_rtx5090.txt", "595.71.05")
MISFITS = (FIX / "smi_580.126.09_2x_a100.txt", "580.126.09")
QUERY = "0, {name}, {cc}, 81920, 00000000:00:1E.0, GPU-0b0e2a9c-0000-0000-0000-000000000000, {driver}\n"


def _stacks():
    return [pytest.param(n, id=n) for n in BUILT] or [pytest.param(None, id="no-stack", marks=pytest.mark.skip(
        reason=f"no real stack built in {ROOT}: python tests/realwheels/stacks.py (several GB each)"))]


def _env(tmp_path: Path, gpu: str, driver=FITS, **extra: str) -> dict:
    name, cc = gpu.rsplit(":", 1)
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    (tmp_path / "q.csv").write_text(QUERY.format(name=name, cc=cc, driver=driver[1]))
    smi = bindir / "nvidia-smi"
    smi.write_text(f'#!/bin/sh\ncase "$1" in --query-gpu=*) cat "{tmp_path / "q.csv"}"; exit 0;; esac\ncat "{driver[0]}"\n')
    smi.chmod(0o755)
    # the driver's libcuda.so.1, as the loader finds it on a machine with a driver: a stub built here (what a CUDA
    # build opens at its first CUDA call, not at import; jaxlib's and TensorFlow's plugins list it in DT_NEEDED)
    driver_lib = tmp_path / "driver"
    build_c_lib(driver_lib / "libcuda.so.1", "libcuda.so.1")
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "LD_PRELOAD", "LD_LIBRARY_PATH")}
    env.update(PATH=f"{bindir}:{env.get('PATH', '/usr/bin:/bin')}", ENVDOCTOR_NO_CACHE="1",
               LD_LIBRARY_PATH=str(driver_lib), **extra)
    return env


def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, env=env,
                          timeout=600, cwd=str(Path(__file__).parent.parent))
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _python(name: str) -> str:
    return str(ROOT / name / "bin" / "python")


def _shadow(tmp_path: Path, snap: dict) -> Path:
    """Copies of the stack's own CUDA libraries (cuBLAS, cuDNN, the runtime) in a folder of their own."""
    where = tmp_path / "shadow"
    where.mkdir()
    for b in snap["binaries"]["binaries"]:
        for lib in b["libraries"]:
            if lib["path"] and any(lib["soname"].startswith(p) for p in ("libcublas.so", "libcudnn.so", "libcudart.so")):
                if not (where / lib["soname"]).exists():
                    shutil.copy2(lib["path"], where / lib["soname"])
    return where


@pytest.mark.parametrize("name", _stacks())
def test_the_loader_simulation_agrees_with_the_real_loader(tmp_path, name):
    stack = STACKS[name]
    env = _env(tmp_path, stack.fits)
    snap = json.loads(_cli(env, "probe", "--python", _python(name), "--format", "json", "--no-redact").stdout)
    tr = trace(_python(name), stack.imports, env=env)
    compared, diffs = compare(snap, tr)
    print(f"{name}: {compared} sonames compared, {len(diffs)} differences; imports {tr.results}")
    assert compared > 0 and diffs == [], diffs
    shadow = _shadow(tmp_path, snap)
    if any(shadow.iterdir()):
        env2 = dict(env, LD_LIBRARY_PATH=f"{shadow}:{env['LD_LIBRARY_PATH']}")
        snap2 = json.loads(_cli(env2, "probe", "--python", _python(name), "--format", "json", "--no-redact").stdout)
        compared2, diffs2 = compare(snap2, trace(_python(name), stack.imports, env=env2))
        print(f"{name} with {sorted(p.name for p in shadow.iterdir())} on LD_LIBRARY_PATH: {compared2} compared")
        assert compared2 > 0 and diffs2 == [], diffs2


@pytest.mark.parametrize("name", _stacks())
def test_every_error_on_a_fitting_machine_is_one_the_real_process_shows(tmp_path, name):
    stack = STACKS[name]
    env = _env(tmp_path, stack.fits)
    report = json.loads(_cli(env, "check", "--python", _python(name), "--format", "json").stdout)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    tr = trace(_python(name), stack.imports, env=env)
    failed = " ".join(v for v in tr.results.values() if v != "ok")
    for f in errors:
        # the only error a fitting machine may show is a library the real import fails to open
        assert f["id"] == "ED650", (f["id"], f["message"])
        needed = f["message"].split(" needs ", 1)[1].split(",")[0].split(" ")[0]
        assert f"{needed}: cannot open shared object file" in failed, (needed, tr.results)


@pytest.mark.parametrize("name", [n for n in BUILT if STACKS[n].misfits] or _stacks())
def test_a_gpu_the_stack_does_not_fit_gets_its_cause_once(tmp_path, name):
    if name is None or not STACKS[name].misfits:
        pytest.skip("no misfitting GPU known for this stack")
    stack = STACKS[name]
    env = _env(tmp_path, stack.misfits, MISFITS)
    report = json.loads(_cli(env, "check", "--python", _python(name), "--format", "json").stdout)
    gpu_errors = [f for f in report["findings"] if f["severity"] == "error" and f["area"] == "gpu"]
    assert gpu_errors, report["findings"]
    causes = [f for f in gpu_errors if f["id"] in ("ED200", "ED250") and "nvidia-" in json.dumps(f)
              or f["id"] == "ED200"]
    assert causes, [(f["id"], f["message"][:100]) for f in gpu_errors]
    # the CUDA line's own libraries are never an error of their own beside the build that brought them
    assert not [f for f in gpu_errors if f["id"] == "ED250" and f["message"].startswith("the CUDA ")
                and any(g["id"] == "ED200" for g in gpu_errors)]
