"""Caps and bounds of the probes as a user meets them through the CLI: output cut at a cap is never an `ok` answer,
a cap that bites is said, a helper honours --timeout. Fakes on PATH are built from recorded outputs
(tests/fixtures/nvidia/SOURCES.toml says where each comes from)."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

FIX = Path(__file__).parent / "fixtures"
BANNER = FIX / "nvidia" / "smi_580.126.09_2x_a100.txt"  # a real nvidia-smi table: driver 580.126.09


def _script(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def _envdoctor(*args, env=None, timeout=120):
    e = dict(os.environ, ENVDOCTOR_NO_CACHE="1", ENVDOCTOR_CACHE_DIR="/nonexistent-envdoctor-test", LANG="C")
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
