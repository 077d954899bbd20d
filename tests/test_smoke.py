"""`envdoctor smoke` with injected frameworks: fake torch / tensorflow / jax / cupy packages in a fake
venv whose import segfaults, hangs (with a child process), raises ImportError or dies mid-way.
No real framework is needed here (tests/test_smoke_real.py runs the real ones)."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
import time
import venv
from pathlib import Path

import pytest

from envdoctor.smoke import FrameworkResult, SmokeRun, StepResult
from envdoctor.smoke.results import FRAMEWORKS
from envdoctor.smoke.runner import MARKER, assemble, plan, program_source
from envdoctor.subproc import CmdResult, Runner
from tests import snapfactory as sf
from envdoctor.snapshot import Cudnn

# Generous limits: every fake below ends (or reaches its hang) in well under a second, so a loaded
# machine never turns a crash into a timeout; where a test must outlast a limit it waits for an event.
TIMEOUT = 60.0
BUDGET = 8.0  # the steps' budget of the exit tests (their runs take about this long)
GRACE = 3.0  # the exit allowance of the one that hangs in its exit

def _venv(path: Path) -> tuple:
    venv.EnvBuilder(with_pip=False).create(path)
    site = next((path / "lib").glob("python3*/site-packages"))
    return path / "bin" / "python", site


def _plant(site: Path, pkg: str, dist: str, version: str, init: str) -> None:
    (site / pkg).mkdir(parents=True, exist_ok=True)
    (site / pkg / "__init__.py").write_text(init)
    di = site / f"{dist}-{version}.dist-info"
    di.mkdir(exist_ok=True)
    (di / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    (di / "RECORD").write_text(f"{pkg}/__init__.py,,\n")


def _smoke(python, *args, timeout=60):
    env = dict(os.environ)
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        env.pop(var, None)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "smoke", "--python", str(python), *args],
                          capture_output=True, text=True, env=env, timeout=timeout)
    return proc, time.monotonic() - start


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"  # a zombie is dead


@pytest.fixture(scope="module")
def broken_env(tmp_path_factory):
    """torch segfaults on import, jax raises ImportError (a hang is in exit_runs below)."""
    root = tmp_path_factory.mktemp("broken")
    python, site = _venv(root / "venv")
    _plant(site, "torch", "torch", "2.3.1", "import ctypes\nctypes.string_at(0)\n")
    _plant(site, "jax", "jax", "0.4.30", "raise ImportError('jaxlib is not installed (injected by the test)')\n")
    proc, elapsed = _smoke(python, "--timeout", str(TIMEOUT), "--format", "json")
    return {"proc": proc, "elapsed": elapsed, "python": python}


def _fw(data: dict, name: str) -> dict:
    return next(f for f in data["frameworks"] if f["name"] == name)


def _step(fw: dict, step: str, device: str = "") -> dict:
    return next(s for s in fw["steps"] if s["step"] == step and s["device"] == device)


def test_broken_frameworks_are_reported_and_envdoctor_survives(broken_env):
    proc = broken_env["proc"]
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    data = json.loads(proc.stdout)  # progress went to stderr: stdout is one JSON object
    assert [f["name"] for f in data["frameworks"]] == ["torch", "jax"]

    torch = _fw(data, "torch")
    imp = _step(torch, "import")
    assert torch["status"] == "crashed" and torch["signal"] == 11
    assert imp["status"] == "crashed" and "signal 11" in imp["detail"] and "SIGSEGV" in imp["detail"]
    assert "Segmentation fault" in imp["detail"]  # faulthandler's dump, from the stderr tail
    assert all(s["status"] == "skipped" for s in torch["steps"][1:])

    jax = _fw(data, "jax")
    assert jax["status"] == "failed" and jax["outcome"] == "exit 0"
    assert _step(jax, "import")["status"] == "failed"
    assert "ImportError: jaxlib is not installed" in _step(jax, "import")["detail"]
    assert all(s["status"] == "skipped" and "import failed" in s["detail"] for s in jax["steps"][1:])
    assert data["summary"]["exit_code"] == 1


@pytest.fixture(scope="module")
def exit_runs(tmp_path_factory):
    """Three programs run side by side, each with an 8 s budget for its steps:
    tensorflow hangs in its import (after starting a child): killed at the budget;
    jax ends its steps at once, then takes until after the budget to exit (it waits for a file the
      test writes once the budget has passed): a slow exit, not a hang;
    torch ends its steps at once, then hangs in an atexit handler: killed 3 s (its grace) later."""
    from envdoctor.smoke.runner import run_framework

    root = tmp_path_factory.mktemp("exits")
    python, site = _venv(root / "venv")
    pidfile, release = root / "child.pid", root / "release"
    _plant(site, "tensorflow", "tensorflow", "2.16.1",
           "import subprocess, sys, time\n"
           "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
           f"open({str(pidfile)!r}, 'w').write(str(child.pid))\n"
           "time.sleep(600)\n")
    _plant(site, "jax", "jax", "0.4.30",
           "import atexit, os, time\n"
           "def _slow_exit():\n"
           f"    while not os.path.exists({str(release)!r}):\n"
           "        time.sleep(0.02)\n"
           "atexit.register(_slow_exit)\n"
           "raise ImportError('injected by the test')\n")
    _plant(site, "torch", "torch", "2.3.1",
           "import atexit, time\n"
           "def _hang_at_exit():\n    time.sleep(600)\n"
           "atexit.register(_hang_at_exit)\n"
           "raise ImportError('injected by the test')\n")
    events = {name: [] for name in ("torch", "tensorflow", "jax")}
    jax_done = threading.Event()

    def on_event(fw, ev):
        events[fw].append(ev.get("event"))
        if fw == "jax" and ev.get("event") == "done":
            jax_done.set()

    grace = {"torch": GRACE, "tensorflow": GRACE, "jax": TIMEOUT}
    results = {}

    def run(name):
        results[name] = run_framework(str(python), name, timeout=BUDGET, shutdown_grace=grace[name],
                                      on_event=on_event)

    start = time.monotonic()
    threads = [threading.Thread(target=run, args=(name,)) for name in grace]
    for t in threads:
        t.start()
    assert jax_done.wait(TIMEOUT), "the jax program never ran its steps"
    time.sleep(max(0.0, start + BUDGET + 0.5 - time.monotonic()))  # past the budget: now let jax exit
    release.write_text("")
    for t in threads:
        t.join(TIMEOUT * 2)
    return {"results": results, "events": events, "pidfile": pidfile}


def test_hang_in_a_step_is_killed_at_the_budget_with_its_stack_and_children(exit_runs):
    tf = exit_runs["results"]["tensorflow"]
    imp = tf.steps[0]
    assert tf.status == "timeout" and imp.step == "import" and imp.status == "timeout"
    assert f"no answer within {BUDGET:g} s" in imp.detail
    assert "time.sleep(600)" in imp.detail or "tensorflow/__init__.py" in imp.detail  # the dump asked for
    assert all(s.status == "skipped" for s in tf.steps[1:]) and "shutdown" not in [s.step for s in tf.steps]
    assert BUDGET * 1000 * 0.9 <= tf.duration_ms <= (BUDGET + 5) * 1000  # at the budget, not after 600 s
    pid = int(exit_runs["pidfile"].read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _alive(pid), "the hung framework's child process survived"


def test_an_exit_that_ends_after_the_budget_is_not_a_hang(exit_runs):
    jax = exit_runs["results"]["jax"]
    assert jax.duration_ms > BUDGET * 1000  # it exited after the budget had passed ...
    assert jax.outcome == "exit 0" and jax.returncode == 0  # ... by itself: nothing was killed
    assert "shutdown" not in [s.step for s in jax.steps]
    assert jax.steps[0].status == "failed" and "injected by the test" in jax.steps[0].detail


def test_a_hang_at_exit_is_killed_after_the_grace_with_its_stack(exit_runs):
    from envdoctor.smoke import smoke_findings

    torch = exit_runs["results"]["torch"]
    assert exit_runs["events"]["torch"][-2:] == ["done", "finished"]
    shutdown = torch.steps[-1]
    assert shutdown.step == "shutdown" and shutdown.status == "timeout" and torch.status == "timeout"
    assert f"killed {GRACE:g} s after its last step" in shutdown.detail
    assert "_hang_at_exit" in shutdown.detail  # where it hangs, from the stack dump taken before the kill
    assert GRACE * 1000 * 0.9 <= shutdown.duration_ms <= (GRACE + 5) * 1000
    assert torch.outcome == f"still exiting {GRACE:g} s after its last step (killed)"
    found = [f for f in smoke_findings(SmokeRun(python="/p", frameworks=[torch]), sf.machine()) if f.id == "ED708"]
    assert len(found) == 1 and found[0].severity == "error"


def test_text_and_markdown_formats(broken_env):
    python = broken_env["python"]
    proc, _ = _smoke(python, "--timeout", str(TIMEOUT), "--framework", "torch")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "crashed (signal 11, SIGSEGV)" in proc.stdout
    assert "jax" not in proc.stdout  # --framework selects
    assert "torch:" in proc.stderr  # live progress on stderr
    proc, _ = _smoke(python, "--timeout", str(TIMEOUT), "--framework", "jax", "--format", "markdown", "-q")
    assert proc.returncode == 1 and proc.stderr == ""
    assert "| import | ✗ failed |" in proc.stdout


@pytest.fixture(scope="module")
def midway_env(tmp_path_factory):
    """torch imports, then crashes in device discovery; cupy imports, then exits with status 3."""
    root = tmp_path_factory.mktemp("midway")
    python, site = _venv(root / "venv")
    _plant(site, "torch", "torch", "2.3.1",
           "import os, signal\n__version__ = '2.3.1'\n"
           "class version:\n    cuda = '12.1'\n    hip = None\n"
           "class cuda:\n    @staticmethod\n    def is_available():\n        os.kill(os.getpid(), signal.SIGSEGV)\n")
    _plant(site, "cupy", "cupy-cuda12x", "13.0.0",
           "import os\n__version__ = '13.0.0'\n"
           "class _Runtime:\n"
           "    def runtimeGetVersion(self):\n        return 12040\n"
           "    def driverGetVersion(self):\n        return 12040\n"
           "    def getDeviceCount(self):\n        os._exit(3)\n"
           "class cuda:\n    runtime = _Runtime()\n")
    return python


def test_a_crash_mid_way_keeps_the_earlier_steps(midway_env):
    proc, _ = _smoke(midway_env, "--timeout", "20", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    data = json.loads(proc.stdout)
    torch = _fw(data, "torch")
    assert _step(torch, "import")["status"] == "ok"
    dev = _step(torch, "devices")
    assert dev["status"] == "crashed" and "signal 11" in dev["detail"]
    assert "is_available" in dev["detail"]  # where it crashed, from faulthandler
    later = [s for s in torch["steps"] if s["step"] not in ("import", "devices")]
    assert later and all(s["status"] == "skipped" and "crashed during devices" in s["detail"] for s in later)
    cupy = _fw(data, "cupy")
    assert cupy["outcome"] == "exit status 3" and cupy["returncode"] == 3
    assert _step(cupy, "import")["status"] == "ok"
    assert _step(cupy, "devices")["status"] == "crashed" and "exit status 3" in _step(cupy, "devices")["detail"]
    assert not any(s["device"] == "cpu" for s in cupy["steps"])  # cupy has no CPU path


def test_no_framework_installed(tmp_path):
    python, _ = _venv(tmp_path / "venv")
    proc, _ = _smoke(python, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["frameworks"] == []
    proc, _ = _smoke(python, "--require-gpu")
    assert proc.returncode == 1 and "no GPU framework" in proc.stdout


def test_usage_errors(tmp_path):
    proc, _ = _smoke(tmp_path / "nope" / "python")
    assert proc.returncode == 2 and "no such file" in proc.stderr and "Traceback" not in proc.stderr
    proc, _ = _smoke(sys.executable, "--framework", "paddle")
    assert proc.returncode == 2 and "paddle" in proc.stderr


# -- the result assembly, without processes ----------------------------------------------------

def _events(*steps):
    evs = [{"event": "hello", "pid": 1}]
    for name, device, status in steps:
        evs.append({"event": "begin", "step": name, "device": device})
        evs.append({"event": "end", "step": name, "device": device, "status": status, "duration_ms": 1.0,
                    "detail": "no GPU" if status == "not_available" else "",
                    "code": "no_gpu" if status == "not_available" else ""})
    return evs


def _all_ok_cpu(framework="jax"):
    return [(n, d, "ok" if d != "gpu" else "not_available") for n, d in plan(framework)]


def test_assemble_require_gpu_turns_missing_gpu_into_failures():
    res = CmdResult(["python"], "ok", 0, duration_s=1.0)
    events = _events(*_all_ok_cpu()) + [{"event": "done"}]
    fr = assemble("jax", plan("jax"), events, res, 10.0)
    assert fr.status == "ok" and {s.status for s in fr.steps if s.device == "gpu"} == {"not_available"}
    fr = assemble("jax", plan("jax"), events, res, 10.0, require_gpu=True)
    assert fr.status == "failed"
    assert all(s.status == "failed" and "--require-gpu" in s.detail for s in fr.steps if s.device == "gpu")
    assert all(s.status == "ok" for s in fr.steps if s.device != "gpu")


def test_assemble_crash_after_every_step_is_a_shutdown_crash():
    res = CmdResult(["python"], "failed", -6, stderr="terminate called without an active exception\n", duration_s=1.0)
    fr = assemble("tensorflow", plan("tensorflow"), _events(*_all_ok_cpu("tensorflow")) + [{"event": "done"}], res, 10.0)
    assert fr.status == "crashed" and fr.signal == 6 and "SIGABRT" in fr.outcome
    assert fr.steps[-1].step == "shutdown" and fr.steps[-1].status == "crashed"
    assert fr.notes == ["terminate called without an active exception"]


def test_assemble_interpreter_that_cannot_run_the_program():
    res = CmdResult(["python"], "failed", 1, stderr="  File \"<string>\", line 3\nSyntaxError: invalid syntax\n",
                    duration_s=0.1)
    fr = assemble("torch", plan("torch"), [], res, 10.0)
    assert fr.steps[0].status == "failed" and "could not run the smoke program" in fr.steps[0].detail
    assert "SyntaxError" in fr.steps[0].detail
    assert all(s.status == "skipped" for s in fr.steps[1:])


def test_result_round_trip():
    res = CmdResult(["python"], "timeout", None, stderr="x\n", duration_s=2.0, reason="python: no answer")
    fr = assemble("torch", plan("torch", bench=True), _events(("import", "", "ok")), res, 2.0)
    run = SmokeRun(python="/p", timeout=2.0, bench=True, frameworks=[fr])
    again = SmokeRun.from_dict(json.loads(json.dumps(run.to_dict())))
    assert again.to_dict() == run.to_dict() and again.exit_code() == 1
    assert [s.step for s in fr.steps][-3:] == ["bench_matmul", "bench_matmul", "bench_h2d"]


# -- the programs -------------------------------------------------------------------------------

@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_programs_are_stdlib_only_and_old_python_syntax(framework):
    source = program_source(framework)
    tree = ast.parse(source, feature_version=(3, 6))
    stdlib = getattr(sys, "stdlib_module_names", None)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name.split(".")[0] for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [(node.module or "").split(".")[0]]
        else:
            continue
        for name in names:
            assert name not in ("torch", "tensorflow", "jax", "cupy", "numpy", "envdoctor"), name
            if stdlib is not None:
                assert name in stdlib, name


def test_program_references_are_right(tmp_path):
    """The pure-Python references the programs compare against (run in a plain interpreter)."""
    code = (program_source("jax").split("def jax_import")[0] +
            "\na, b, r = matmul_data()\n"
            "assert r[0][0] == sum(a[0][k] * b[k][0] for k in range(MM))\n"
            "d = conv_data()\n"
            "x, w, g = d['x'], d['w'], d['g']\n"
            "assert d['y'][1][2][3][4] == sum(x[1][c][3 + p][4 + q] * w[2][c][p][q] for c in range(3) for p in range(3) for q in range(3))\n"
            "eps = 1.0 / 16\n"
            "def loss(x, w):  # sum(conv2d(x, w) * g): linear in x and in w, so a finite difference is exact\n"
            "    return sum(yv * gv for yv, gv in zip(flat(conv_y(x, w)), flat(g)))\n"
            "def conv_y(x, w):\n"
            "    return [[[[sum(x[n][c][i + p][j + q] * w[o][c][p][q] for c in range(3) for p in range(3) for q in range(3))"
            " for j in range(6)] for i in range(6)] for o in range(4)] for n in range(2)]\n"
            "import copy\n"
            "x2 = copy.deepcopy(x); x2[0][1][2][3] += eps\n"
            "assert abs((loss(x2, w) - loss(x, w)) / eps - d['dx'][0][1][2][3]) < 1e-9\n"
            "w2 = copy.deepcopy(w); w2[3][2][1][0] += eps\n"
            "assert abs((loss(x, w2) - loss(x, w)) / eps - d['dw'][3][2][1][0]) < 1e-9\n"
            "try:\n    compare([1.0, 2.0], [1.0, 2.5], 1e-3)\nexcept Mismatch as e:\n    assert 'max abs error 0.5' in str(e)\n"
            "else:\n    raise SystemExit('no mismatch')\n"
            "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


# -- the streaming runner ------------------------------------------------------------------------

def test_runner_streams_lines_as_they_come(tmp_path):
    seen = []
    start = time.monotonic()
    res = Runner(timeout=10).run(
        [sys.executable, "-c", "import sys, time\nprint('a', flush=True)\ntime.sleep(1.0)\nprint('b')\n"
                               "sys.stderr.write('x' * 10 + '\\n')"],
        on_stdout_line=lambda line: seen.append((line, time.monotonic() - start)))
    assert res.ok and [s[0] for s in seen] == ["a", "b"] and res.stdout == "a\nb\n" and res.stderr == "x" * 10 + "\n"
    assert seen[0][1] < seen[1][1] - 0.5  # 'a' arrived before the command ended


def test_runner_streaming_timeout_kills_the_group_and_signal_exit(tmp_path):
    pidfile = tmp_path / "pid"
    script = ("import subprocess, sys, time\n"
              "c = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
              f"open({str(pidfile)!r}, 'w').write(str(c.pid))\nprint('started', flush=True)\ntime.sleep(600)\n")
    start = time.monotonic()
    res = Runner(timeout=1.5).run([sys.executable, "-c", script], on_stdout_line=lambda line: None)
    assert res.status == "timeout" and time.monotonic() - start < 6
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)
    res = Runner(timeout=10).run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGABRT)"],
                                 on_stdout_line=lambda line: None)
    assert res.status == "failed" and res.returncode == -6


def test_runner_cancel(tmp_path):
    cancel = threading.Event()
    threading.Timer(0.5, cancel.set).start()
    start = time.monotonic()
    res = Runner(timeout=30).run([sys.executable, "-c", "import time; time.sleep(600)"],
                                 on_stdout_line=lambda line: None, cancel=cancel)
    assert res.status == "timeout" and "cancelled" in res.reason and time.monotonic() - start < 5


# -- findings for `check --smoke` ------------------------------------------------------------------

def _run_with(fr: FrameworkResult, require_gpu=False) -> SmokeRun:
    return SmokeRun(python="/home/user/venv/bin/python", frameworks=[fr], require_gpu=require_gpu)


def _torch_result(conv_gpu: StepResult, gpus=1) -> FrameworkResult:
    steps = [StepResult("import", "", "ok"),
             StepResult("devices", "", "ok", info={"gpus": [{"index": 0, "name": "NVIDIA A100", "compute_capability": "8.0"}]
                                                    if gpus else []}),
             StepResult("matmul", "gpu", "ok"), conv_gpu]
    status = conv_gpu.status if conv_gpu.status in ("failed", "crashed", "timeout") else "ok"
    return FrameworkResult("torch", version="2.3.1+cu121", build="cuda 12.1", status=status, steps=steps)


def test_findings_explain_a_cudnn_failure_with_two_majors():
    from envdoctor.smoke import smoke_findings

    snap = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100:8.0"],
                      cudnn=[Cudnn(version="8.9.2", kind="library", path="/usr/lib/x86_64-linux-gnu/libcudnn.so.8"),
                             Cudnn(version="9.1.0", kind="wheel", path="/venv/nvidia/cudnn/lib/libcudnn.so.9")])
    step = StepResult("conv", "gpu", "failed", detail="RuntimeError: cuDNN error: CUDNN_STATUS_NOT_INITIALIZED")
    findings = smoke_findings(_run_with(_torch_result(step)), snap)
    conv = [f for f in findings if f.id == "ED704"]
    assert len(conv) == 1 and conv[0].severity == "error" and conv[0].area == "torch"
    assert "CUDNN_STATUS_NOT_INITIALIZED" in conv[0].message and "two cuDNN majors" in conv[0].message
    assert "8.9.2" in conv[0].message and "9.1.0" in conv[0].message
    # one cuDNN only: the failure is reported, not explained by majors
    snap.cudnn = snap.cudnn[:1]
    conv = [f for f in smoke_findings(_run_with(_torch_result(step)), snap) if f.id == "ED704"]
    assert "two cuDNN majors" not in conv[0].message


def test_findings_ok_and_no_gpu_severity():
    from envdoctor.smoke import smoke_findings

    ok = _torch_result(StepResult("conv", "gpu", "ok"))
    findings = smoke_findings(_run_with(ok), sf.machine(driver="550.54.15", gpus=["NVIDIA A100:8.0"]))
    assert [f.id for f in findings] == ["ED700"] and findings[0].severity == "ok"
    assert "NVIDIA A100" in findings[0].message

    def no_gpu():
        na = StepResult("conv", "gpu", "not_available", detail="no GPU", code="no_gpu")
        return _torch_result(na, gpus=0)

    with_gpu = sf.machine(driver="550.54.15", gpus=["NVIDIA A100:8.0"])
    sev = {f.id: f.severity for f in smoke_findings(_run_with(no_gpu()), with_gpu)}
    assert sev["ED710"] == "warning"  # a CUDA build on a GPU machine that sees no GPU
    sev = {f.id: f.severity for f in smoke_findings(_run_with(no_gpu()), sf.machine())}
    assert sev["ED710"] == "info"  # no GPU on the machine: expected
    fr = assemble("jax", plan("jax"), _events(*_all_ok_cpu()) + [{"event": "done"}],
                  CmdResult(["python"], "ok", 0), 10.0, require_gpu=True)
    findings = smoke_findings(_run_with(fr, require_gpu=True), sf.machine())
    assert [f.severity for f in findings if f.id == "ED710"] == ["error"]
    assert not [f for f in findings if f.id in ("ED703", "ED704")]  # the missing GPU is one finding, not one per step


def test_progress_protocol_marker_is_shared():
    assert MARKER in program_source("torch")


def test_text_folds_the_gpu_steps_of_a_machine_without_gpu_into_one_line():
    from envdoctor.smoke.render import render_text

    res = CmdResult(["python"], "ok", 0, duration_s=1.0)
    runs = [assemble(fw, plan(fw), _events(*_all_ok_cpu(fw)) + [{"event": "done"}], res, 10.0)
            for fw in ("torch", "jax")]
    text = render_text(SmokeRun(python="/p/python", frameworks=runs))
    assert "not available   " not in text and text.count("no GPU") == 2 + 1, text  # a line per framework + summary
    gpu_steps = [n for n, d in plan("torch") if d == "gpu"]
    assert f"- {len(gpu_steps)} GPU steps not available (no GPU): matmul, conv" in text, text
    verbose = render_text(SmokeRun(python="/p/python", frameworks=runs), verbose=True)
    assert verbose.count("not available   ") == sum(d == "gpu" for fw in ("torch", "jax") for _, d in plan(fw))
