"""`envdoctor smoke` on the real CPU builds of torch, tensorflow-cpu and jax (the venv of
$ENVDOCTOR_TEST_FW_PYTHON, set up by .ci/run; skipped without it). The three run in parallel;
TensorFlow's import is the slow part (about 10 s on 2 cores)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

pytestmark = pytest.mark.slow

_RUNS: dict = {}


def _smoke(python: str, *args: str) -> tuple:
    key = (python,) + args
    if key not in _RUNS:
        env = dict(os.environ)
        for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
            env.pop(var, None)
        start = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "envdoctor", "smoke", "--python", python, "--format", "json",
                               "--timeout", "240", *args], capture_output=True, text=True, env=env, timeout=600)
        _RUNS[key] = (proc, time.monotonic() - start)
    return _RUNS[key]


def _steps(fw: dict) -> dict:
    return {(s["step"], s["device"]): s for s in fw["steps"]}


def test_real_frameworks_on_cpu(fw_python):
    proc, elapsed = _smoke(fw_python)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    fws = {f["name"]: f for f in data["frameworks"]}
    assert set(fws) >= {"torch", "tensorflow", "jax"}
    for name in ("torch", "tensorflow", "jax"):
        fw = fws[name]
        steps = _steps(fw)
        assert fw["status"] == "ok" and fw["outcome"] == "exit 0", (name, fw)
        assert steps[("import", "")]["status"] == "ok"
        dev = steps[("devices", "")]
        assert dev["status"] == "ok" and dev["numbers"]["gpus"] == 0 and dev["info"]["gpus"] == [], (name, dev)
        assert "CPU only" in dev["detail"]
        for step in ("matmul", "conv"):
            s = steps[(step, "cpu")]
            assert s["status"] == "ok", (name, s)
            assert s["numbers"]["max_rel_err"] <= s["numbers"]["tolerance"] <= 1e-4
        mixed = steps[("mixed_precision", "cpu")]
        assert mixed["status"] in ("ok", "not_available"), (name, mixed)
        if mixed["status"] == "ok":
            assert all(v < 0.05 for k, v in mixed["numbers"].items() if k.endswith("_max_rel_err")), mixed
        comp = steps[("compile", "cpu")]
        if name == "torch" and not (shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")):
            assert comp["status"] == "not_available" and "no C++ compiler" in comp["detail"]
        else:
            assert comp["status"] == "ok", (name, comp)
            assert comp["numbers"]["max_rel_err"] <= comp["numbers"]["tolerance"]
        for (step, device), s in steps.items():
            if device == "gpu":
                assert s["status"] == "not_available" and s["detail"] == "no GPU" and s["code"] == "no_gpu", (name, s)
    # in parallel: the whole run is much shorter than the frameworks one after the other
    total = sum(fws[n]["duration_ms"] for n in ("torch", "tensorflow", "jax"))
    assert data["duration_ms"] < 0.85 * total, (data["duration_ms"], total)


def test_real_findings(fw_python):
    from envdoctor.smoke import SmokeRun, smoke_findings
    from tests import snapfactory as sf

    proc, _ = _smoke(fw_python)
    run = SmokeRun.from_dict(json.loads(proc.stdout))
    findings = smoke_findings(run, sf.machine())
    by_area = {}
    for f in findings:
        by_area.setdefault(f.area, []).append((f.id, f.severity))
    for area in ("torch", "tensorflow", "jax"):
        assert ("ED700", "ok") in by_area[area] and ("ED710", "info") in by_area[area]
        assert not [f for f in by_area[area] if f[1] == "error"]


def test_real_require_gpu_and_bench(fw_python):
    proc, _ = _smoke(fw_python, "--framework", "jax", "--require-gpu", "--bench")
    assert proc.returncode == 1, proc.stderr[-2000:]
    data = json.loads(proc.stdout)
    assert [f["name"] for f in data["frameworks"]] == ["jax"]
    steps = _steps(data["frameworks"][0])
    assert steps[("matmul", "cpu")]["status"] == "ok"
    assert steps[("bench_matmul", "cpu")]["status"] == "ok" and steps[("bench_matmul", "cpu")]["numbers"]["gflops"] > 0
    for key in (("matmul", "gpu"), ("conv", "gpu"), ("bench_h2d", "gpu")):
        assert steps[key]["status"] == "failed" and "--require-gpu" in steps[key]["detail"]


def test_check_smoke_folds_results_into_the_report(fw_python):
    """`check --smoke` on the CPU builds: the smoke results ride along in the report and nothing turns into an error."""
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--smoke", "--python", fw_python, "--format", "json"],
                          capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert {fw["name"] for fw in report["smoke"]["frameworks"]} >= {"torch", "tensorflow", "jax"}
    assert not [f for f in report["findings"] if f["severity"] == "error"]
    assert any(f["id"] == "ED001" for f in report["findings"])


def test_check_smoke_rejects_a_saved_snapshot(tmp_path):
    from envdoctor.snapshot import Snapshot

    p = tmp_path / "s.json"
    p.write_text(Snapshot().to_json())
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--smoke", "--snapshot", str(p)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--smoke" in proc.stderr and "Traceback" not in proc.stderr


def test_real_text_output_says_no_gpu_once_per_framework(fw_python):
    proc, _ = _smoke(fw_python, "--format", "text")  # the later --format wins over the helper's json
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    folded = [ln for ln in proc.stdout.splitlines() if "GPU steps not available (no GPU):" in ln]
    assert len(folded) == sum(1 for ln in proc.stdout.splitlines() if ln.startswith("[")), proc.stdout
    assert " not available  " not in proc.stdout, proc.stdout
