"""`envdoctor onboard` on fake machines (fast): snapshots from tests/snapfactory.py, a fake base interpreter
whose `-m venv` makes a real venv without pip and plants a fake `pip` module in it (it records each call,
and can be told to be killed, fail or hang once), and a fake smoke run.  tests/test_onboard_e2e.py runs the
real thing."""
from __future__ import annotations

import html.parser
import json
import os
import pty
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envdoctor.entry import main
from envdoctor.errors import BadInput
from envdoctor.fsroot import Root
from envdoctor.onboard import plan as P
from envdoctor.onboard import report as R
from envdoctor.onboard import steps as S
from envdoctor.progress import FRAMES
from envdoctor.smoke import FrameworkResult, SmokeRun, StepResult
from envdoctor.snapshot import Snapshot
from envdoctor.snapshot_io import dump_json
from tests import snapfactory as sf
from tests.fakes import make_exe, write

EPOCH = "1764460800"
FW = ["--frameworks", "torch==2.13.0", "--companions", "none"]

FAKE_PIP = r'''
import os, signal, sys, time
with open(os.environ["ONBOARD_CALLS"], "a") as fh:
    fh.write("pip " + " ".join(sys.argv[1:]) + "\n")
mode = ""
once = os.environ.get("ONBOARD_PIP_MODE_FILE", "")
if once and os.path.exists(once):
    with open(once) as fh:
        mode = fh.read().strip()
    os.unlink(once)  # only this time
print("Looking in links: /nowhere", flush=True)
print("Collecting torch==2.13.0+cpu (from -r lock (line 21))", flush=True)
if mode == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
if mode == "fail":
    print("ERROR: No matching distribution found for torch==2.13.0+cpu", file=sys.stderr, flush=True)
    sys.exit(1)
if mode == "hang":
    with open(os.environ["ONBOARD_PIP_STARTED"], "w") as fh:
        fh.write(str(os.getpid()))
    time.sleep(120)
print("Installing collected packages: torch", flush=True)
print("Successfully installed torch-2.13.0+cpu", flush=True)
'''


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path_factory.mktemp("empty-cache")))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A fake base interpreter, a fake pip, a CPU-only machine snapshot and a fake smoke run."""
    calls = tmp_path / "calls.txt"
    pipdir = tmp_path / "fakepip" / "pip"
    write(pipdir / "__init__.py", "")
    write(pipdir / "__main__.py", FAKE_PIP)
    base = make_exe(tmp_path / "bin" / "fakepython", f"""
if [ "$1" = "-m" ] && [ "$2" = "venv" ]; then
  echo "venv $3" >> "$ONBOARD_CALLS"
  {sys.executable} -m venv --without-pip "$3" || exit $?
  for site in "$3"/lib/python3*/site-packages; do cp -r {pipdir} "$site/pip"; done
  exit 0
fi
exec {sys.executable} "$@"
""")
    snap_file = tmp_path / "cpu.json"
    snap_file.write_text(dump_json(sf.machine().to_dict()))
    monkeypatch.setenv("ONBOARD_CALLS", str(calls))
    monkeypatch.setenv("ONBOARD_PIP_MODE_FILE", str(tmp_path / "pip-mode"))
    monkeypatch.setenv("ONBOARD_PIP_STARTED", str(tmp_path / "pip-started"))
    smoke_calls = []

    def fake_smoke(snapshot=None, python=None, frameworks=None, timeout=0, require_gpu=False, env=None, on_event=None, **kw):
        smoke_calls.append({"python": python, "frameworks": list(frameworks or []), "require_gpu": require_gpu})
        run = SmokeRun(python=python, python_version="3.11.7", timeout=timeout, require_gpu=require_gpu,
                       duration_ms=1234.0)
        for name in frameworks or []:
            run.frameworks.append(FrameworkResult(name=name, version="2.13.0+cpu", build="cpu", status="ok",
                                                  outcome="exit 0", duration_ms=1200.0, steps=[
                StepResult("import", "", "ok", 900.0, f"{name} imported"),
                StepResult("matmul", "cpu", "ok", 12.0, "64x64 fp32 on cpu, max rel error 0"),
                StepResult("matmul", "gpu", "not_available", 0.0, "no GPU", code="no_gpu")]))
        return run

    monkeypatch.setattr(S, "run_smoke", fake_smoke)

    class Fake:
        pass

    f = Fake()
    f.tmp, f.base, f.calls, f.snap, f.smoke_calls = tmp_path, base, calls, snap_file, smoke_calls
    f.env = tmp_path / "env"
    f.mode = tmp_path / "pip-mode"
    f.started = tmp_path / "pip-started"
    f.args = ["--snapshot", str(snap_file), "--python", str(base), "--env-dir", str(f.env), *FW]
    return f


def onboard(capsys, *args):
    """Run `envdoctor onboard ARGS` in-process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exc:
        main(["onboard", *args])
    out, err = capsys.readouterr()
    return exc.value.code, out, err


def calls(f) -> list:
    return f.calls.read_text().splitlines() if f.calls.exists() else []


def state(f) -> dict:
    return json.loads((f.env / P.STATE_FILE).read_text())


# --------------------------------------------------------------------------- --dry-run


def test_dry_run_prints_the_script_and_touches_nothing(fake, capsys, tmp_path):
    rc, out, err = onboard(capsys, *fake.args, "--dry-run")
    assert rc == 0, err
    assert not fake.env.exists() and not os.path.lexists(fake.env)
    assert calls(fake) == []  # neither a venv nor pip was run
    assert fake.smoke_calls == []
    lines = out.splitlines()
    assert lines[0] == "#!/bin/sh" and "set -eu" in lines
    env = str(fake.env)
    assert f"{fake.base} -m venv {env}" in lines
    assert f"{env}/bin/python -m pip install --no-input --progress-bar off -r {env}/{P.LOCK_FILE}" in lines
    assert any(ln.startswith(f"envdoctor smoke --python {env}/bin/python --framework torch") for ln in lines)
    assert "torch==2.13.0+cpu" in out and "--require-gpu" not in out  # a CPU-only machine: CPU builds
    assert "sudo" not in out
    # the order: the lock is written before the venv is made, the install comes after it
    i_lock = next(i for i, ln in enumerate(lines) if ln.startswith("cat > "))
    i_venv = lines.index(f"{fake.base} -m venv {env}")
    i_pip = next(i for i, ln in enumerate(lines) if " -m pip install " in ln)
    assert i_lock < i_venv < i_pip
    # a valid shell script
    check = subprocess.run(["sh", "-n"], input=out, text=True, capture_output=True)
    assert check.returncode == 0, check.stderr
    # progress went to stderr, the script alone to stdout
    assert "[1/7] probe" in err and "[1/7]" not in out


def test_dry_run_script_writes_the_lock_a_real_run_installs(fake, capsys, tmp_path):
    """Running the script's heredoc writes byte for byte the lock onboarding itself writes."""
    rc, out, _ = onboard(capsys, *fake.args, "--dry-run")
    assert rc == 0
    start = next(i for i, ln in enumerate(out.splitlines()) if ln.startswith("cat > "))
    tag = out.splitlines()[start].split("<<'")[1].rstrip("'")
    body = out.splitlines()[start + 1:out.splitlines().index(tag)]
    rc, _, err = onboard(capsys, *fake.args, "--yes")
    assert rc == 0, err
    assert (fake.env / P.LOCK_FILE).read_text() == "\n".join(body) + "\n"


def test_emit_script_writes_only_the_script(fake, capsys, tmp_path):
    target = tmp_path / "onboard.sh"
    rc, out, err = onboard(capsys, *fake.args, "--emit-script", str(target))
    assert rc == 0, err
    assert target.read_text().startswith("#!/bin/sh\n")
    assert os.access(target, os.X_OK)
    assert not fake.env.exists() and calls(fake) == []
    assert out == ""


# --------------------------------------------------------------------------- a full run, a rerun


def _progress(err: str) -> list:
    import re

    return [(int(m.group(1)), m.group(2), m.group(3)) for m in
            (re.match(r"^\[(\d)/7\] (\w+)\s+(\S)", ln) for ln in err.splitlines()) if m]


def test_full_run_writes_state_lock_log_report_and_shows_progress(fake, capsys):
    rc, out, err = onboard(capsys, *fake.args, "--yes")
    assert rc == 0, err
    assert calls(fake) == [f"venv {fake.env}", f"pip install --no-input --progress-bar off -r {fake.env}/{P.LOCK_FILE}"]
    assert fake.smoke_calls == [{"python": str(fake.env / "bin" / "python"), "frameworks": ["torch"], "require_gpu": False}]
    st = state(fake)
    assert st["schema"] == P.SCHEMA
    assert [st["steps"][s]["status"] for s in P.STEPS] == ["ok"] * 7
    assert all(st["steps"][s]["runs"] == 1 for s in P.STEPS)
    assert st["steps"]["smoke"]["result"]["frameworks"][0]["name"] == "torch"
    log = (fake.env / P.LOG_FILE).read_text()
    assert "Successfully installed torch-2.13.0+cpu" in log and "-m pip install" in log
    assert (fake.env / P.REPORT_MD).is_file() and (fake.env / P.REPORT_HTML).is_file()
    assert "ready" in out and str(fake.env / P.REPORT_HTML) in out
    # progress: every step once "running" (…) or straight to its result, in order, each ending ✓
    prog = _progress(err)
    finals = {}
    for n, name, mark in prog:
        assert P.STEPS[n - 1] == name
        finals[name] = mark
    assert [n for n, _, _ in prog] == sorted(n for n, _, _ in prog)
    assert finals == {s: "✓" for s in P.STEPS}
    assert "Collecting torch==2.13.0+cpu" in err and "(from -r" not in err  # pip's progress, shortened


def test_rerun_skips_finished_steps_and_redoes_those_whose_inputs_changed(fake, capsys, monkeypatch):
    assert onboard(capsys, *fake.args, "--yes")[0] == 0
    first = state(fake)
    # another day: the lock's header has a new date, its pins are the same -> nothing is redone
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(int(EPOCH) + 86400 * 3))
    rc, _, err = onboard(capsys, *fake.args, "--yes")
    assert rc == 0, err
    assert len(calls(fake)) == 2 and len(fake.smoke_calls) == 1  # nothing run again
    assert {name: mark for _, name, mark in _progress(err) if name in ("create", "install", "smoke")} == \
        {"create": "↷", "install": "↷", "smoke": "↷"}
    again = state(fake)
    for s in ("create", "install", "smoke"):
        assert again["steps"][s] == first["steps"][s]
    # another framework: a new lock -> install and smoke again, the venv is kept
    args = [a if a != "torch==2.13.0" else "torch==2.13.0,jax" for a in fake.args]
    rc, _, err = onboard(capsys, *args, "--yes")
    assert rc == 0, err
    assert [c.split()[0] for c in calls(fake)] == ["venv", "pip", "pip"]
    assert fake.smoke_calls[-1]["frameworks"] == ["torch", "jax"]
    st = state(fake)
    assert st["steps"]["create"]["runs"] == 1 and st["steps"]["install"]["runs"] == 2
    assert "jax==" in (fake.env / P.LOCK_FILE).read_text()


def test_killed_install_stops_naming_step_and_log_and_rerun_completes(fake, capsys):
    fake.mode.write_text("kill")
    rc, out, err = onboard(capsys, *fake.args, "--yes")
    assert rc == 1
    msg = err.strip().splitlines()[-1]
    assert "step 'install'" in msg and str(fake.env / P.LOG_FILE) in msg and "SIGKILL" in msg
    st = state(fake)
    assert st["steps"]["create"]["status"] == "ok"
    assert st["steps"]["install"]["status"] == "failed"
    assert "smoke" not in st["steps"] and fake.smoke_calls == []
    assert "Collecting torch" in (fake.env / P.LOG_FILE).read_text()
    # the rerun does not make the venv again, installs, smoke-tests, reports
    rc, out, err = onboard(capsys, *fake.args, "--yes")
    assert rc == 0, err
    assert [c.split()[0] for c in calls(fake)] == ["venv", "pip", "pip"]
    st = state(fake)
    assert st["steps"]["create"]["runs"] == 1
    assert st["steps"]["install"]["runs"] == 2 and st["steps"]["install"]["status"] == "ok"
    assert len(fake.smoke_calls) == 1


def test_ctrl_c_during_install_kills_pip_and_records_the_interruption(fake, capsys, tmp_path):
    from tests.test_cli import _default_sigint

    fake.mode.write_text("hang")
    env = dict(os.environ)
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", "onboard", *fake.args, "--yes"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            cwd=str(Path(__file__).resolve().parent.parent), preexec_fn=_default_sigint)
    deadline = time.monotonic() + 60
    while not fake.started.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert fake.started.exists(), proc.communicate(timeout=30)
    time.sleep(0.2)
    pip_pid = int(fake.started.read_text())
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert "\x1b[K" not in err and not any(frame in err for frame in FRAMES)  # no status line on a pipe
    st = state(fake)
    assert st["steps"]["create"]["status"] == "ok"
    assert st["steps"]["install"]["status"] == "interrupted"
    deadline = time.monotonic() + 10  # the kill was sent; how soon the process is gone depends on the load
    while _alive(pip_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pip_pid)  # killed with its process group, not left running
    # the rerun (in-process, with the fake smoke) completes without making the venv again
    rc, _, err = onboard(capsys, *fake.args, "--yes")
    assert rc == 0, err
    assert [c.split()[0] for c in calls(fake)] == ["venv", "pip", "pip"]
    assert state(fake)["steps"]["install"]["status"] == "ok"


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


# --------------------------------------------------------------------------- safety


def test_refuses_an_existing_environment_it_did_not_make(fake, capsys):
    write(fake.env / "pyvenv.cfg", "home = /usr/bin\n")
    write(fake.env / "lib" / "precious.txt", "keep me")
    rc, out, err = onboard(capsys, *fake.args, "--yes")
    assert rc == 2
    assert len(err.strip().splitlines()) == 1  # one line, nothing probed or printed before it
    last = err.strip()
    assert "--force" in last and str(fake.env) in last
    assert sorted(p.name for p in fake.env.iterdir()) == ["lib", "pyvenv.cfg"]
    assert (fake.env / "lib" / "precious.txt").read_text() == "keep me"
    assert calls(fake) == []
    # --dry-run refuses alike
    assert onboard(capsys, *fake.args, "--dry-run")[0] == 2


def test_force_moves_the_old_environment_aside_and_deletes_it_only_after_success(fake, capsys):
    write(fake.env / "pyvenv.cfg", "home = /usr/bin\n")
    write(fake.env / "old.txt", "old")
    fake.mode.write_text("fail")
    rc, _, err = onboard(capsys, *fake.args, "--yes", "--force")
    assert rc == 1
    assert "No matching distribution found" in err  # pip's own error, and in the log
    assert "No matching distribution found" in (fake.env / P.LOG_FILE).read_text()
    backup = Path(str(fake.env) + P.BACKUP_SUFFIX)
    assert (backup / "old.txt").read_text() == "old"  # a failure half way: the old one is intact
    assert str(backup) in err
    shutil.rmtree(fake.env)
    backup.rename(fake.env)
    rc, _, err = onboard(capsys, *fake.args, "--yes", "--force")
    assert rc == 0, err
    assert not backup.exists() and not (fake.env / "old.txt").exists()
    assert state(fake)["steps"]["install"]["status"] == "ok"


def test_force_never_replaces_a_folder_that_is_not_an_environment(fake, capsys):
    write(fake.env / "thesis.tex", "years of work")
    rc, _, err = onboard(capsys, *fake.args, "--yes", "--force")
    assert rc == 2
    assert "not a Python environment" in err
    assert (fake.env / "thesis.tex").read_text() == "years of work"
    assert not Path(str(fake.env) + P.BACKUP_SUFFIX).exists()


def test_without_yes_and_without_a_terminal_nothing_happens(fake, capsys):
    rc, _, err = onboard(capsys, *fake.args)
    assert rc == 2 and "--yes" in err
    assert not fake.env.exists() and calls(fake) == []


def test_usage_errors(fake, capsys, monkeypatch):
    monkeypatch.chdir(fake.tmp)  # the default --env-dir is ./.venv: never the checkout's own venv
    assert onboard(capsys, *fake.args, "--conda", "x")[0] == 2
    rc, _, err = onboard(capsys, "--snapshot", str(fake.snap), "--frameworks", "paddle", "--dry-run")
    assert rc == 2 and "paddle" in err
    rc, _, err = onboard(capsys, "--snapshot", str(fake.snap), "--python", str(fake.tmp / "nope"), "--dry-run")
    assert rc == 2 and "not a working Python" in err


# --------------------------------------------------------------------------- the driver


def _snap_file(tmp_path: Path, snap: Snapshot, name: str = "m.json") -> str:
    p = tmp_path / name
    p.write_text(dump_json(snap.to_dict()))
    return str(p)


BROKEN = {
    "ED014": dict(driver="550.107.02", state="module_not_loaded", gpus=["NVIDIA GeForce RTX 3090:8.6"]),
    "ED013": dict(driver="550.107.02", state="version_mismatch", gpus=["NVIDIA A100-SXM4-80GB:8.0"]),
    "ED016": dict(driver="550.107.02", state="smi_failed", gpus=[]),
}


@pytest.mark.parametrize("rule", sorted(BROKEN))
def test_a_broken_driver_stops_before_anything_with_what_to_run(fake, capsys, rule, tmp_path):
    snap = sf.machine(**BROKEN[rule])
    snap.platform.kernel = "6.8.0-45-generic"
    if rule == "ED013":
        snap.driver.nvml = snap.driver.nvidia_smi = "mismatch"
        snap.driver.kernel_module_version = "550.90.07"
        snap.driver.messages = ["Failed to initialize NVML: Driver/library version mismatch",
                                "NVML library version: 550.107"]
    if rule == "ED014":
        snap.driver.nvidia_smi = "failed"
        snap.driver.messages = ["NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
                                "Make sure that the latest NVIDIA driver is installed and running."]
    if rule == "ED016":
        snap.driver.nvidia_smi = "failed"
        snap.driver.nvml = "failed"
        snap.driver.messages = ["Failed to initialize NVML: Unknown Error"]
    args = ["--snapshot", _snap_file(tmp_path, snap), "--python", str(fake.base), "--env-dir", str(fake.env), *FW, "--yes"]
    rc, out, err = onboard(capsys, *args)
    assert rc == 1, err
    assert "stopped before changing anything" in out
    assert f"{rule}:" in out
    assert "never does itself" in out
    assert "envdoctor onboard --frameworks torch==2.13.0 --env-dir" in out  # what to rerun afterwards
    assert "nvidia-smi" in out
    block = out.split("never does itself. Run:")[1].split("then check")[0]
    check = subprocess.run(["sh", "-n"], input=block, text=True, capture_output=True)
    assert check.returncode == 0, block  # the lines can be pasted into a shell as they are
    if rule == "ED014":  # Ubuntu: the distribution's own commands
        assert "sudo modprobe nvidia" in out and "sudo apt-get install linux-headers-6.8.0-45-generic" in out
    if rule == "ED013":
        assert "sudo reboot" in out
    assert not fake.env.exists() and calls(fake) == [] and fake.smoke_calls == []
    # the dry run stops alike
    rc, out, _ = onboard(capsys, *args[:-1], "--dry-run")
    assert rc == 1 and "#!/bin/sh" not in out
    # --cpu: onboard a CPU environment anyway
    rc, out, err = onboard(capsys, *args[:-1], "--dry-run", "--cpu")
    assert rc == 0 and out.startswith("#!/bin/sh") and "torch==2.13.0+cpu" in out
    assert "--cpu" in err


@pytest.mark.parametrize("distro,version,wsl,container,expect", [
    ("ubuntu", "24.04", None, None, ["sudo ubuntu-drivers install", "sudo reboot"]),
    ("debian", "12", None, None, ["sudo apt install linux-headers-amd64 nvidia-driver firmware-misc-nonfree", "sudo reboot"]),
    ("fedora", "41", None, None, ["sudo dnf install akmod-nvidia", "sudo reboot"]),
    ("rocky", "9.4", None, None, ["sudo dnf module enable nvidia-driver:open-dkms", "sudo dnf install nvidia-open"]),
    ("rhel", "10.0", None, None, ["sudo dnf install nvidia-open"]),
    ("opensuse-tumbleweed", "20250101", None, None, ["sudo zypper install-new-recommends --repo NVIDIA"]),
    ("arch", "", None, None, ["sudo pacman -S nvidia-open"]),
    ("ubuntu", "22.04", 2, None, ["wsl.exe --update", "wsl.exe --shutdown"]),
    ("ubuntu", "22.04", 1, None, ["wsl.exe --set-version DISTRIBUTION 2"]),
    ("ubuntu", "22.04", None, "docker", ["docker run --gpus all ... IMAGE"]),
])
def test_a_gpu_without_driver_gets_this_distributions_commands(distro, version, wsl, container, expect):
    snap = sf.machine(wsl=wsl)
    snap.platform.distro_id, snap.platform.distro_version, snap.platform.container = distro, version, container
    gpu = P.gpu_facts(snap, ["0000:01:00.0"])
    assert gpu.present and "0000:01:00.0" in gpu.why
    stop = P.driver_stop(snap, [], gpu)
    assert stop is not None and "no NVIDIA driver is installed" in stop.reason
    cmds = [c.split("   #")[0].split("  #")[0].strip() for c in stop.commands if not c.startswith("#")]
    for e in expect:
        assert e in cmds, stop.commands
    if wsl or container:
        assert "sudo reboot" not in cmds
        assert not any(c.startswith("sudo apt") for c in cmds)
    assert subprocess.run(["sh", "-n"], input="\n".join(stop.commands), text=True).returncode == 0
    text = stop.render("envdoctor onboard --frameworks torch")
    assert text.splitlines()[0].startswith("envdoctor onboard: stopped before changing anything")
    assert "envdoctor onboard --frameworks torch" in text


def test_no_gpu_and_no_driver_goes_on_with_cpu_builds():
    snap = sf.machine()
    gpu = P.gpu_facts(snap, [])
    assert not gpu.present
    assert P.driver_stop(snap, [], gpu) is None


def test_pci_scan_finds_nvidia_display_controllers_only(tmp_path):
    def dev(addr, vendor, cls):
        write(tmp_path / "sys" / "bus" / "pci" / "devices" / addr / "vendor", vendor + "\n")
        write(tmp_path / "sys" / "bus" / "pci" / "devices" / addr / "class", cls + "\n")

    dev("0000:00:02.0", "0x8086", "0x030000")  # Intel iGPU
    dev("0000:01:00.0", "0x10de", "0x030200")  # NVIDIA 3D controller
    dev("0000:01:00.1", "0x10de", "0x040300")  # its HDMI audio function
    dev("0000:02:00.0", "0x10de", "0x030000")  # NVIDIA VGA
    assert S.scan_pci(Root(tmp_path)) == ["0000:01:00.0", "0000:02:00.0"]
    assert S.scan_pci(Root(tmp_path / "empty")) == []
    assert P.nvidia_pci_devices([("x", None, "0x030000"), ("y", "garbage", "")]) == []


# --------------------------------------------------------------------------- pure parts


def test_parse_frameworks():
    got = P.parse_frameworks(["jax>=0.4,<0.6,torch==2.13.0", "tensorflow-cpu"])
    assert [(w.name, w.spec) for w in got] == [("torch", "==2.13.0"), ("tensorflow", ""), ("jax", ">=0.4,<0.6")]
    assert [w.name for w in P.parse_frameworks([])] == ["torch"]
    with pytest.raises(BadInput):
        P.parse_frameworks(["torch,torch"])
    with pytest.raises(BadInput):
        P.parse_frameworks(["cupy"])


def test_parse_base_python():
    assert P.parse_base_python("3.12.4\n/usr/bin/python3.12\n").version == "3.12.4"
    assert P.parse_base_python("3.12.4\n/usr/bin/python3.12\n").xy == "3.12"
    assert P.parse_base_python("") is None
    assert P.parse_base_python("Python\ngarbage\n") is None


def test_lock_body_ignores_comments_and_header():
    a = "# date: 2025-01-01\n--extra-index-url https://example.invalid/cpu\n\ntorch==2.13.0+cpu  # CPU build\n"
    b = "# date: 2026-02-02\n# another note\n--extra-index-url https://example.invalid/cpu\ntorch==2.13.0+cpu\n"
    assert P.lock_body(a) == P.lock_body(b) == "--extra-index-url https://example.invalid/cpu\ntorch==2.13.0+cpu"
    assert P.lock_body(a.replace("2.13.0", "2.12.0")) != P.lock_body(b)


def _plan(kind="venv", tool="pip", require_gpu=False):
    t = P.Target(kind=kind, tool=tool, tool_path={"pip": "", "uv": "/opt/bin/uv", "conda": "/opt/conda/bin/conda",
                                                  "mamba": "/opt/bin/mamba"}[tool],
                 path="/work/my env" if kind == "venv" else "", name="ml" if kind == "conda" else "")
    return P.Plan(target=t, base=P.BasePython("/usr/bin/python3.11", "3.11.7"), wishes=[P.FrameworkWish("torch")],
                  cpu=not require_gpu, gpu=P.GpuFacts(require_gpu, ""), require_gpu=require_gpu,
                  lock_text="# header\ntorch==2.13.0+cpu\n", lock_summary="torch 2.13.0+cpu", lock_picks=[],
                  frameworks=["torch"])


def test_uv_and_conda_commands_and_scripts():
    uv = _plan(tool="uv")
    assert P.create_argv(uv.target, uv.base) == ["/opt/bin/uv", "venv", "--allow-existing", "--python",
                                                 "/usr/bin/python3.11", "/work/my env"]
    assert P.install_argv(uv.target, uv.lock_path) == ["/opt/bin/uv", "pip", "install", "--python",
                                                       "/work/my env/bin/python", "-r", "/work/my env/envdoctor-lock.txt"]
    script = P.render_script(uv)
    assert "'/work/my env'" in script  # quoted
    conda = _plan(kind="conda", tool="conda", require_gpu=True)
    assert P.create_argv(conda.target, conda.base) == ["/opt/conda/bin/conda", "create", "--yes", "--name", "ml",
                                                       "python=3.11", "pip"]
    script = P.render_script(conda)
    assert '"$PREFIX"/bin/python -m pip install --no-input --progress-bar off -r "$PREFIX"/envdoctor-lock.txt' in script
    assert 'envdoctor smoke --python "$PREFIX"/bin/python --framework torch --timeout 300 --require-gpu' in script
    for s in (P.render_script(uv), script):
        assert subprocess.run(["sh", "-n"], input=s, text=True).returncode == 0
    assert P.choose_tool("auto", None, {"uv": "/opt/bin/uv"}) == ("uv", "/opt/bin/uv")
    assert P.choose_tool("pip", None, {"uv": "/opt/bin/uv"}) == ("pip", "")
    assert P.choose_tool("auto", "ml", {"conda": "/c", "mamba": "/m"}) == ("mamba", "/m")
    with pytest.raises(BadInput):
        P.choose_tool("auto", "ml", {})
    with pytest.raises(BadInput):
        P.choose_tool("uv", None, {})


def test_conda_dry_run_with_fake_conda(fake, capsys, tmp_path, monkeypatch):
    conda = make_exe(tmp_path / "condabin" / "conda", 'echo \'{"envs": ["/opt/conda", "/opt/conda/envs/other"]}\'')
    monkeypatch.setenv("PATH", f"{conda.parent}{os.pathsep}{os.environ['PATH']}")
    rc, out, err = onboard(capsys, "--snapshot", str(fake.snap), "--python", str(fake.base), "--conda", "ml", *FW,
                           "--dry-run")
    assert rc == 0, err
    assert f"{conda} create --yes --name ml python=3.11 pip".replace("3.11", P.parse_base_python(
        f"{sys.version.split()[0]}\nx").xy) in out
    # an existing conda environment onboard did not make is refused
    monkeypatch.setenv("PATH", f"{conda.parent}{os.pathsep}{os.environ['PATH']}")
    envdir = tmp_path / "envs" / "ml"
    write(envdir / "conda-meta" / "history", "")
    make_exe(conda, f'echo \'{{"envs": ["{envdir}"]}}\'')
    rc, _, err = onboard(capsys, "--snapshot", str(fake.snap), "--python", str(fake.base), "--conda", "ml", *FW, "--yes")
    assert rc == 2 and "conda environment ml" in err


# --------------------------------------------------------------------------- the report


XSS = "<script>alert(1)</script>"


def _xss_context(tmp_path):
    snap = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=[f"{XSS}:8.6"],
                      gpu_env={"CUDA_VISIBLE_DEVICES": XSS, "NVIDIA_API_TOKEN": "s3cret"},
                      frameworks=[sf.torch("2.5.1+cu124", cuda="12.4", cudnn="9.1.0")])
    plan = _plan(require_gpu=True)
    plan.lock_picks = [{"framework": "torch", "version": "2.5.1", "build": "cu124", "kind": "cuda",
                        "label": "torch 2.5.1+cu124", "requirement": "torch==2.5.1+cu124", "cuda": "12.4"}]
    plan.lock_summary = "torch 2.5.1+cu124"
    plan.gpu = P.gpu_facts(snap)
    run = SmokeRun(python="/work/my env/bin/python", duration_ms=2500.0, require_gpu=True)
    run.frameworks.append(FrameworkResult(name="torch", version="2.5.1+cu124", build="cuda 12.4", status="failed",
                                          duration_ms=2400.0, steps=[
        StepResult("import", "", "ok", 800.0, "torch 2.5.1+cu124"),
        StepResult("matmul", "gpu", "ok", 30.0, f"on {XSS}"),
        StepResult("conv", "gpu", "failed", 40.0, f"RuntimeError: cuDNN error {XSS}")]))
    from envdoctor.doctor import build_report

    report = build_report(snap)
    steps = [{"name": s, "title": P.STEP_TITLES[s], "status": "ok", "detail": XSS if s == "probe" else "", "seconds": 1.0}
             for s in P.STEPS[:-1]]
    steps[-1]["status"] = "failed"
    return R.context(plan=plan, snap=snap, report=report, smoke=run, steps=steps, log_path="/work/log",
                     generated="2025-11-30T00:00:00+00:00")


def test_report_escapes_machine_supplied_strings(tmp_path):
    ctx = _xss_context(tmp_path)
    page = R.render_html(ctx)
    assert XSS not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page.lower()
    assert "s3cret" not in page  # secret-looking variables are redacted
    assert "Content-Security-Policy" in page
    for tag in ("<link", "<img", "<iframe", "<object", "src=", "@import"):  # self-contained: nothing to fetch
        assert tag not in page.lower()
    md = R.render_markdown(ctx)
    assert XSS not in md.split("<details>")[0]
    assert "&lt;script&gt;" in md
    assert "s3cret" not in md
    # the fence of the snapshot cannot be closed by the snapshot's text
    assert R._fence("a ```` b").startswith("`````")


class _DomFacts(html.parser.HTMLParser):
    """Text by element id / data attributes from a DOM Chromium dumped."""

    def __init__(self):
        super().__init__()
        self.stack = []
        self.texts = {}
        self.rows = []
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "script":
            self.scripts += 1
        if tag == "tr" and "data-status" in a:
            self.rows.append(a)
        self.stack.append(a.get("id") or (a.get("class") or "").split(" ")[0])

    def handle_endtag(self, tag):
        if self.stack:
            self.stack.pop()

    def handle_data(self, data):
        for key in self.stack:
            if key:
                self.texts[key] = self.texts.get(key, "") + data


def chromium_dom(path: Path) -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if not exe:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    proc = subprocess.run([exe, "--headless", "--no-sandbox", "--disable-gpu", "--dump-dom", path.resolve().as_uri()],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "<html" in proc.stdout, proc.stderr[-2000:]
    return proc.stdout


def test_report_in_headless_chromium(tmp_path):
    ctx = _xss_context(tmp_path)
    page = tmp_path / "report.html"
    page.write_text(R.render_html(ctx), encoding="utf-8")
    dom = chromium_dom(page)
    facts = _DomFacts()
    facts.feed(dom)
    assert facts.scripts == 0  # no script element came from any machine string
    assert facts.texts["driver-state"].strip() == "ok"
    assert XSS in facts.texts["gpu-name"]  # shown as text, exactly
    assert XSS in facts.texts["env-value"]
    assert "torch" in facts.texts["frameworks"] and "2.5.1" in facts.texts["frameworks"]
    statuses = {(r.get("data-step")): r.get("data-status") for r in facts.rows}
    assert statuses["conv (gpu)"] == "failed" and statuses["matmul (gpu)"] == "ok" and statuses["smoke"] == "failed"
    assert facts.texts["outcome"].startswith("FAILED")


# --------------------------------------------------------------------------- a GPU machine, a failing smoke, conda


def test_a_working_gpu_machine_locks_cuda_builds_and_requires_the_gpu(fake, capsys, tmp_path):
    snap = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"])
    args = ["--snapshot", _snap_file(tmp_path, snap), "--python", str(fake.base), "--env-dir", str(fake.env),
            "--frameworks", "torch", "--companions", "none"]
    rc, out, err = onboard(capsys, *args, "--dry-run")
    assert rc == 0, err
    smoke = next(ln for ln in out.splitlines() if ln.startswith("envdoctor smoke "))
    assert smoke.endswith("--require-gpu")
    torch_line = next(ln for ln in out.splitlines() if ln.startswith("torch=="))
    assert "+cpu" not in torch_line and "CUDA" in torch_line
    assert "driver 550.54.15" in err and "sm_80" in err
    # --cpu: CPU builds, no GPU required
    rc, out, _ = onboard(capsys, *args, "--dry-run", "--cpu")
    assert rc == 0 and "--require-gpu" not in out and "+cpu" in out


def test_a_failing_smoke_test_reports_exit_1_and_is_rerun_alone(fake, capsys, monkeypatch):
    good = S.run_smoke

    def bad_smoke(*a, **kw):
        run = good(*a, **kw)
        fw = run.frameworks[0]
        fw.steps[1] = StepResult("matmul", "cpu", "failed", 10.0, "max rel error 0.5 > tolerance", code="mismatch")
        fw.status = "failed"
        return run

    monkeypatch.setattr(S, "run_smoke", bad_smoke)
    rc, out, err = onboard(capsys, *fake.args, "--yes")
    assert rc == 1
    assert "smoke" in out and str(fake.env / P.REPORT_HTML) in out
    assert state(fake)["steps"]["smoke"]["status"] == "failed"
    page = (fake.env / P.REPORT_HTML).read_text()
    assert 'data-outcome="failed"' in page and "max rel error 0.5" in page
    monkeypatch.setattr(S, "run_smoke", good)
    rc, _, err = onboard(capsys, *fake.args, "--yes")
    assert rc == 0, err
    assert [c.split()[0] for c in calls(fake)] == ["venv", "pip"]  # only the smoke test ran again
    assert len(fake.smoke_calls) == 2
    assert 'data-outcome="ok"' in (fake.env / P.REPORT_HTML).read_text()


def test_conda_environment_with_fake_conda(fake, capsys, tmp_path, monkeypatch):
    """--conda NAME: `conda create` makes it, its prefix is found afterwards, the state and log move in."""
    envs = tmp_path / "envs.json"
    envs.write_text(json.dumps({"envs": ["/opt/conda"]}))
    prefix = tmp_path / "conda" / "envs" / "ml"
    conda = make_exe(tmp_path / "condabin" / "conda", f"""
if [ "$1" = "env" ]; then cat {envs}; exit 0; fi
if [ "$1" = "create" ]; then
  echo "conda $*" >> "$ONBOARD_CALLS"
  echo "Collecting package metadata (repodata.json): done"
  {fake.base} -m venv {prefix} || exit 1
  echo '{{"envs": ["/opt/conda", "{prefix}"]}}' > {envs}
  exit 0
fi
exit 3
""")
    monkeypatch.setenv("PATH", f"{conda.parent}{os.pathsep}{os.environ['PATH']}")
    args = ["--snapshot", str(fake.snap), "--python", str(fake.base), "--conda", "ml", *FW, "--yes"]
    rc, out, err = onboard(capsys, *args)
    assert rc == 0, err
    xy = ".".join(sys.version.split()[0].split(".")[:2])
    assert calls(fake)[0] == f"conda create --yes --name ml python={xy} pip"
    assert calls(fake)[2].startswith(f"pip install --no-input --progress-bar off -r {prefix}/{P.LOCK_FILE}")
    st = json.loads((prefix / P.STATE_FILE).read_text())
    assert [st["steps"][s]["status"] for s in P.STEPS] == ["ok"] * 7
    log = (prefix / P.LOG_FILE).read_text()
    assert "Collecting package metadata" in log  # the create step's output, written once the prefix existed
    assert fake.smoke_calls[-1]["python"] == str(prefix / "bin" / "python")
    assert "conda activate ml" in out
    # a rerun finds its own environment and skips what is done
    rc, _, err = onboard(capsys, *args)
    assert rc == 0, err
    assert len(calls(fake)) == 3
    # another framework: installed into the same conda environment, logged there
    args = [a if a != "torch==2.13.0" else "torch==2.13.0,jax" for a in args]
    rc, _, err = onboard(capsys, *args)
    assert rc == 0, err
    assert [c.split()[0] for c in calls(fake)] == ["conda", "venv", "pip", "pip"]
    assert "jax==" in (prefix / P.LOCK_FILE).read_text()
    assert (prefix / P.LOG_FILE).read_text().count("Successfully installed") == 2


def test_a_long_step_shows_its_seconds_on_a_terminal_and_nothing_extra_on_a_pipe(fake, tmp_path):
    from tests.test_cli import _default_sigint

    fake.mode.write_text("hang")
    env = dict(os.environ, TERM="xterm")
    env.pop("ENVDOCTOR_NO_PROGRESS", None)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", "onboard", *fake.args, "--yes"],
                            stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL, env=env,
                            cwd=str(Path(__file__).resolve().parent.parent), preexec_fn=_default_sigint)
    os.close(slave)
    err, deadline = b"", time.monotonic() + 60
    # the install step hangs: its status line counts the seconds it has taken
    while time.monotonic() < deadline and not re.search(rb"\[5/7\] install [1-9]\d*\.\d s", err):
        if select.select([master], [], [], 0.5)[0]:
            err += os.read(master, 65536)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    try:
        while select.select([master], [], [], 0.5)[0]:
            chunk = os.read(master, 65536)
            if not chunk:
                break
            err += chunk
    except OSError:  # EIO: the child closed its end
        pass
    os.close(master)
    assert fake.started.exists() and re.search(rb"\[5/7\] install [1-9]\d*\.\d s", err), err[-600:]
    assert proc.returncode == 130 and b"interrupted" in err
    # the status line is erased before the step's own line: nothing is drawn over it
    assert re.search(rb"\r\x1b\[K\[5/7\] install +\S+ interrupted", err), err[-600:]
