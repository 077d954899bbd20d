"""Caps and bounds of the probes as a user meets them through the CLI: output cut at a cap is never an `ok` answer,
a cap that bites is said, a helper honours --timeout. Fakes on PATH are built from recorded outputs
(tests/fixtures/nvidia/SOURCES.toml says where each comes from)."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path

FIX = Path(__file__).parent / "fixtures"
BANNER = FIX / "nvidia" / "smi_580.126.09_2x_a100.txt"  # a real nvidia-smi table: driver 580.126.09


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _envdoctor(*args, env=None, timeout=120):
    e = dict(os.environ, ENVDOCTOR_NO_CACHE="1", LANG="C")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, env=e,
                          timeout=timeout)


def _flooding_smi(tmp_path: Path) -> dict:
    """An nvidia-smi whose table (a real one) goes on past the 1 MiB cap; its --query-gpu fails."""
    _script(tmp_path / "bin" / "nvidia-smi", "\n".join([
        'case "$1" in --query-gpu=*) echo "unexpected"; exit 2;; esac',
        f'cat "{BANNER}"',
        "head -c 1500000 /dev/zero | tr '\\0' 'x'"]))
    return {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}"}


def test_nvidia_smi_killed_at_the_output_cap_is_no_ok_answer(tmp_path):
    env = _flooding_smi(tmp_path)
    proc = _envdoctor("probe", "--format", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(proc.stdout)
    (nvidia,) = [p for p in snap["probes"] if p["name"] == "nvidia"]
    assert nvidia["status"] != "ok"
    assert "printed more than 1 MiB" in nvidia["reason"]
    assert snap["driver"]["version"] != "580.126.09"  # read from the cut output: not trusted
    check = _envdoctor("check", "--format", "json", env=env)
    assert "ED002" in [f["id"] for f in json.loads(check.stdout)["findings"]], check.stdout


def test_lock_never_pins_against_a_driver_read_from_cut_output(tmp_path):
    proc = _envdoctor("lock", env=_flooding_smi(tmp_path))
    assert "580.126.09" not in proc.stdout
    assert proc.returncode == 2 and "no usable NVIDIA driver" in proc.stderr, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


# --------------------------------------------------------------------------- Jupyter kernelspecs


def _kernelspec(folder: Path, name: str, python: str) -> None:
    (folder / name).mkdir(parents=True)
    (folder / name / "kernel.json").write_text(json.dumps(
        {"argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"], "display_name": name,
         "language": "python"}))


def _kernel_env(tmp_path: Path) -> dict:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {"HOME": str(home), "JUPYTER_PATH": str(tmp_path / "jupyter"), "JUPYTER_DATA_DIR": str(tmp_path / "data"),
            "XDG_DATA_HOME": str(tmp_path / "xdg"), "CONDA_PREFIX": "", "CONDA_EXE": ""}


def _kernels_probe(snap: dict) -> dict:
    (status,) = [p for p in snap["probes"] if p["name"] == "kernels"]
    return status


def test_more_kernelspecs_than_the_cap_is_said(tmp_path):
    kernels = tmp_path / "jupyter" / "kernels"
    for i in range(200):
        _kernelspec(kernels, f"k{i:03d}", sys.executable)
    proc = _envdoctor("probe", "--format", "json", env=_kernel_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(proc.stdout)
    assert len([k for k in snap["kernels"]["kernels"] if k["source"] == "kernelspec"]) == 64
    status = _kernels_probe(snap)
    assert status["status"] == "partial" and "only the first 64 of 200 kernelspecs were read" in status["reason"]
    check = _envdoctor("check", env=_kernel_env(tmp_path))
    assert "only the first 64 of 200 kernelspecs were read" in check.stdout, check.stdout
    assert "No issues found!" not in check.stdout


def test_a_fifo_or_looping_kernel_json_is_said_and_never_blocks(tmp_path):
    kernels = tmp_path / "jupyter" / "kernels"
    _kernelspec(kernels, "good", sys.executable)
    (kernels / "fifo").mkdir(parents=True)
    os.mkfifo(kernels / "fifo" / "kernel.json")  # opening it for reading would wait for a writer forever
    (kernels / "loop").mkdir()
    os.symlink("kernel.json", kernels / "loop" / "kernel.json")
    proc = _envdoctor("check", "--kernels", "--format", "json", env=_kernel_env(tmp_path), timeout=60)
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    by_name = {k["name"]: k for k in report["snapshot"]["kernels"]["kernels"]}
    assert by_name["fifo"]["status"] == "failed" and "FIFO" in by_name["fifo"]["reason"]
    assert by_name["loop"]["status"] == "failed" and "symbolic links" in by_name["loop"]["reason"]
    assert by_name["good"]["status"] == "ok"
    said = [f["message"] for f in report["findings"] if f["id"] == "ED610"]
    assert any("kernel 'fifo'" in m for m in said) and any("kernel 'loop'" in m for m in said), said


# --------------------------------------------------------------------------- --python's helper and --timeout


def _sleeping_python(tmp_path: Path) -> Path:
    # an interpreter that never answers: the helper run in it must end at --timeout, not later
    return _script(tmp_path / "venv" / "bin" / "python", "exec sleep 60")


def test_smoke_python_helper_honours_timeout(tmp_path):
    python = _sleeping_python(tmp_path)
    start = time.monotonic()
    proc = _envdoctor("smoke", "--python", str(python), "--timeout", "2", "-q", timeout=60)
    took = time.monotonic() - start
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "no answer within 2 s" in proc.stderr and "Traceback" not in proc.stderr
    assert took < 8, took  # was 20 s: the helper got twice the probe's own 10 s


def test_check_python_helper_honours_timeout(tmp_path):
    python = _sleeping_python(tmp_path)
    start = time.monotonic()
    proc = _envdoctor("check", "--python", str(python), "--timeout", "1", timeout=60)
    took = time.monotonic() - start
    assert proc.returncode == 2 and "no answer within 1 s" in proc.stderr, proc.stdout + proc.stderr
    assert took < 6, took  # was twice --timeout
