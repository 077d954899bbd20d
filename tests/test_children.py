"""Children never outlive envdoctor: a hanging nvidia-smi is killed when envdoctor is stopped
by SIGTERM / SIGHUP / SIGINT / SIGKILL, and when it exits with a command still running."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes import default_signals, make_exe, wait_until as _wait_for
from tests.fakes import process_gone as _gone

REPO = Path(__file__).resolve().parents[1]


def _hanging_smi(tmp_path: Path) -> Path:
    """A fake nvidia-smi that writes its PID and hangs (a GPU fallen off the bus)."""
    pidfile = tmp_path / "smi.pid"
    make_exe(tmp_path / "bin" / "nvidia-smi", f"echo $$ > {pidfile}.tmp; mv {pidfile}.tmp {pidfile}; exec sleep 300")
    return pidfile


def _start(tmp_path: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", PYTHONPATH=str(REPO))
    return subprocess.Popen([sys.executable, "-m", "envdoctor", *args], env=env, cwd=str(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=default_signals)


def _smi_pid(proc: subprocess.Popen, pidfile: Path) -> int:
    if not _wait_for(pidfile.exists, 120):
        proc.kill()
        pytest.fail("the fake nvidia-smi never started: " + proc.communicate()[1])
    return int(pidfile.read_text())


@pytest.mark.parametrize("sig, code", [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)])
def test_signal_kills_the_hanging_child_and_exits_128_plus_n(tmp_path, sig, code):
    pidfile = _hanging_smi(tmp_path)
    proc = _start(tmp_path, "check", "--timeout", "300")
    pid = _smi_pid(proc, pidfile)
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=60)
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)
    assert _wait_for(lambda: _gone(pid), 10), "nvidia-smi outlived envdoctor"
    assert proc.returncode == code, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err


def test_sigkill_of_envdoctor_leaves_no_child(tmp_path):
    """SIGKILL cannot be handled: the watchdog sees envdoctor's pipe close and kills the registered groups."""
    pidfile = _hanging_smi(tmp_path)
    proc = _start(tmp_path, "check", "--timeout", "300")
    pid = _smi_pid(proc, pidfile)
    proc.kill()
    proc.communicate(timeout=60)
    try:
        assert _wait_for(lambda: _gone(pid), 10), "nvidia-smi outlived a SIGKILLed envdoctor"
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)


def test_exit_with_a_command_still_running_kills_it(tmp_path):
    """atexit: a command still running in a (daemon) thread when the program ends is killed with it."""
    pidfile = _hanging_smi(tmp_path)
    code = ("import sys, threading, time\nfrom envdoctor.subproc import Runner\n"
            "threading.Thread(target=Runner(timeout=300).run, args=(['nvidia-smi'],), daemon=True).start()\n"
            f"while not __import__('os').path.exists({str(pidfile)!r}): time.sleep(0.02)\n")
    env = dict(os.environ, PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", PYTHONPATH=str(REPO),
               ENVDOCTOR_NO_WATCHDOG="1")  # atexit alone, without the watchdog's help
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    pid = int(pidfile.read_text())
    try:
        assert _wait_for(lambda: _gone(pid), 10), "the command outlived the program"
    finally:
        if not _gone(pid):
            os.kill(pid, signal.SIGKILL)


# --------------------------------------------------------------------------- onboard: pip dies with it, one run at a time

from tests.test_onboard import _env, fake, onboard, state  # noqa: E402,F401  (fixtures: a fake interpreter and pip)


def _onboard_with_hanging_pip(fake) -> "tuple[subprocess.Popen, int]":
    fake.mode.write_text("hang")
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", "onboard", *fake.args, "--yes"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=str(REPO)), cwd=str(REPO))
    if not _wait_for(lambda: fake.started.exists() or proc.poll() is not None, 120) or not fake.started.exists():
        proc.kill()
        pytest.fail("the fake pip never started: " + proc.communicate(timeout=30)[1])
    _wait_for(lambda: fake.started.read_text().strip().isdigit(), 10)
    return proc, int(fake.started.read_text())


def test_sigterm_to_onboard_kills_pip_and_records_the_step(fake, capsys):
    proc, pip_pid = _onboard_with_hanging_pip(fake)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert _wait_for(lambda: _gone(pip_pid), 10), "pip kept installing after onboard was stopped"
    assert "stopped by SIGTERM" in err.strip().splitlines()[-1] and "Traceback" not in err
    st = state(fake)
    assert st["steps"]["install"]["status"] == "interrupted" and st["steps"]["install"]["detail"] == "stopped by a signal"
    rc, _, err = onboard(capsys, *fake.args, "--yes")  # the rerun installs and completes
    assert rc == 0, err
    assert state(fake)["steps"]["install"]["status"] == "ok"


def test_sigkill_to_onboard_kills_pip_and_the_rerun_is_not_locked_out(fake, capsys):
    proc, pip_pid = _onboard_with_hanging_pip(fake)
    proc.kill()
    proc.communicate(timeout=60)
    assert _wait_for(lambda: _gone(pip_pid), 10), "pip outlived a SIGKILLed onboard"
    rc, _, err = onboard(capsys, *fake.args, "--yes")
    assert rc == 0, err


def test_second_onboard_of_the_same_env_refuses_in_one_line(fake, capsys):
    proc, pip_pid = _onboard_with_hanging_pip(fake)
    try:
        rc, out, err = onboard(capsys, *fake.args, "--yes")
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert rc == 2 and len(lines) == 1, err
        assert f"another envdoctor onboard (pid {proc.pid}) is working on {fake.env}" in lines[0]
        assert [c.split()[0] for c in fake.calls.read_text().splitlines()] == ["venv", "pip"]  # no second install
        rc, out, err = onboard(capsys, *fake.args, "--dry-run")  # changes nothing: needs no lock
        assert rc == 0, err
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
    assert _wait_for(lambda: _gone(pip_pid), 10)
    rc, _, err = onboard(capsys, *fake.args, "--yes")  # the lock went with the first run
    assert rc == 0, err


def test_lock_file_sits_next_to_the_venv_and_is_released_after_the_run(fake, capsys):
    rc, _, err = onboard(capsys, *fake.args, "--yes")
    assert rc == 0, err
    from envdoctor.onboard import steps as S
    from envdoctor.onboard.plan import Target

    lock = Path(S.lock_path(Target(kind="venv", tool="pip", path=str(fake.env))))
    assert lock.parent == fake.env.parent and lock.exists() and lock.read_text() == ""  # released: no pid left
