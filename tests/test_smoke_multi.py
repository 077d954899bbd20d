"""The multi-GPU smoke steps (each GPU isolated and timed, an all-reduce over two or more) and the
onnxruntime smoke program -- the helpers run for real on fakes of the devices, the programs on the real CPU builds
(slow), and on a GPU machine (marked gpu)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from envdoctor.smoke.results import FRAMEWORKS
from envdoctor.smoke.runner import assemble, plan, program_source
from envdoctor.subproc import CmdResult


def _program(framework: str) -> dict:
    """The framework's program as its child process defines it, without running main()."""
    ns: dict = {"__name__": "envdoctor_smoke_program"}
    exec(compile(program_source(framework), f"<{framework}_smoke>", "exec"), ns)
    return ns


def test_plan_has_the_multi_gpu_steps_and_an_onnxruntime_session():
    for fw in ("torch", "tensorflow", "jax"):
        assert plan(fw)[-2:] == [("each_gpu", "gpu"), ("allreduce", "gpu")] or \
            [s for s in plan(fw) if s[0] in ("each_gpu", "allreduce")] == [("each_gpu", "gpu"), ("allreduce", "gpu")]
    assert plan("onnxruntime") == [("import", ""), ("devices", ""), ("session", "cpu"), ("session", "gpu")]
    assert "onnxruntime" in FRAMEWORKS
    assert "each_gpu" not in dict(plan("cupy"))


def test_each_gpu_runs_every_device_and_isolates_a_failure():
    ns = _program("torch")
    a, b, ref = ns["matmul_data"]()

    def one(i):
        if i == 1:
            raise RuntimeError("CUDA error: no kernel image is available for execution on the device")
        return ref, ref

    out = ns["on_each_gpu"](["cuda:0", "cuda:1", "cuda:2"], one)
    assert out["status"] == "failed" and "1 of 3 GPUs" in out["detail"] and "cuda:1: " in out["detail"]
    assert set(out["numbers"]) >= {"gpu0_ms", "gpu2_ms"} and "gpu1_ms" not in out["numbers"]  # the others still ran
    ok = ns["on_each_gpu"](["cuda:0", "cuda:1"], lambda i: (ref, ref))
    assert "status" not in ok and ok["numbers"]["gpus"] == 2 and "on each of 2 GPUs" in ok["detail"]


def test_allreduce_skips_one_device_and_checks_the_sum():
    ns = _program("jax")
    with pytest.raises(ns["Skipped"], match="one device"):
        ns["all_reduce_step"](1, "psum", lambda: [1.0])
    out = ns["all_reduce_step"](4, "psum", lambda: [10.0] * 16)
    assert out["numbers"]["expected"] == 10.0 and "over 4 GPUs" in out["detail"]
    with pytest.raises(ns["Mismatch"]):
        ns["all_reduce_step"](2, "psum", lambda: [3.0, 2.0])


def test_a_cpu_run_reports_the_multi_gpu_steps_as_no_gpu():
    """assemble() of a CPU-only run: the new GPU steps end not_available, the run is still ok."""
    steps = plan("torch")
    events = [{"event": "hello"}] + [
        {"event": "end", "step": n, "device": d, "status": "ok" if d != "gpu" else "not_available",
         "code": "no_gpu" if d == "gpu" else "", "detail": ""} for n, d in steps] + [{"event": "done"}]
    res = CmdResult(["python"], "ok", 0, duration_s=1.0)
    fr = assemble("torch", steps, events, res, 10.0)
    got = {(s.step, s.device): s.status for s in fr.steps}
    assert got[("allreduce", "gpu")] == "not_available" and got[("each_gpu", "gpu")] == "not_available"
    assert fr.status == "ok"


def _smoke_json(python: str, *args: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "smoke", "--python", python, "--format", "json",
                           "--timeout", "240", *args], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    return json.loads(proc.stdout)


def _steps(fw: dict) -> dict:
    return {(s["step"], s["device"]): s for s in fw["steps"]}


@pytest.mark.slow
def test_real_onnxruntime_on_cpu():
    """ENVDOCTOR_TEST_ORT_PYTHON: a venv with the real CPU onnxruntime and onnx wheels."""
    python = os.environ.get("ENVDOCTOR_TEST_ORT_PYTHON")
    if not python or not os.path.exists(python):
        pytest.skip("ENVDOCTOR_TEST_ORT_PYTHON is not set to a venv with onnxruntime and onnx")
    data = _smoke_json(python, "--framework", "onnxruntime")
    fw = {f["name"]: f for f in data["frameworks"]}["onnxruntime"]
    steps = _steps(fw)
    assert steps[("import", "")]["status"] == "ok"
    assert "CUDAExecutionProvider is not among" in steps[("devices", "")]["detail"]
    cpu = steps[("session", "cpu")]
    assert cpu["status"] == "ok" and cpu["info"]["providers"][0] == "CPUExecutionProvider", cpu
    assert cpu["numbers"]["max_rel_err"] <= cpu["numbers"]["tolerance"]
    assert steps[("session", "gpu")]["status"] == "not_available"


def _gpu_count() -> int:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return 0
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.splitlines() if line.startswith("GPU "))


@pytest.mark.gpu
@pytest.mark.slow
def test_multi_gpu_steps_on_a_gpu_machine():
    python = os.environ.get("ENVDOCTOR_TEST_FW_PYTHON")
    count = _gpu_count()
    if not count or not python or not os.path.exists(python):
        pytest.skip("needs an NVIDIA GPU and ENVDOCTOR_TEST_FW_PYTHON with a GPU build")
    data = _smoke_json(python, "--framework", "torch")
    steps = _steps({f["name"]: f for f in data["frameworks"]}["torch"])
    each = steps[("each_gpu", "gpu")]
    assert each["status"] == "ok" and each["numbers"]["gpus"] == count, each
    red = steps[("allreduce", "gpu")]
    assert red["status"] == ("ok" if count >= 2 else "skipped"), red
