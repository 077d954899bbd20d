"""Runner.start / probes.prefetch: a command started early is collected by the run() that follows,
runs once, gives the same result, and one that nobody collects is killed, never left behind."""
from __future__ import annotations

import os
import sys

import pytest

from envdoctor import subproc
from envdoctor.probes import ProbeContext, prefetch, run_probes
from envdoctor.probes import pyenv
from envdoctor.subproc import Runner, discard_started

from .fakes import make_exe, process_gone, wait_until


@pytest.fixture(autouse=True)
def _no_command_left_waiting():
    """The started commands are one pool per process: a test before these in the same worker (an in-process CLI
    run whose prefetch was never collected, as a usage error leaves it) must not be counted here."""
    discard_started()
    yield


def _counting_tool(tmp_path, name="tool"):
    """A fake command that notes every start in a file and prints its arguments."""
    log = tmp_path / "starts.log"
    make_exe(tmp_path / "bin" / name, f'echo started >> "{log}"\necho "out $*"\necho "err" >&2\nexit 3')
    env = {"PATH": f"{tmp_path / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    return log, env


def _starts(log):
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_a_started_command_is_collected_once_with_the_same_result(tmp_path):
    log, env = _counting_tool(tmp_path)
    runner = Runner(env=env, timeout=10)
    plain = runner.run(["tool", "a"])
    assert _starts(log) == 1
    runner.start(["tool", "a"])
    runner.start(["tool", "a"])  # already waiting: not started twice
    assert wait_until(lambda: _starts(log) == 2, 10)
    early = runner.run(["tool", "a"])
    assert _starts(log) == 2  # collected, not run again
    assert (early.status, early.returncode, early.stdout, early.stderr) == (
        plain.status, plain.returncode, plain.stdout, plain.stderr) == ("failed", 3, "out a\n", "err\n")
    assert discard_started() == 0


def test_only_the_same_command_collects_it(tmp_path):
    log, env = _counting_tool(tmp_path)
    runner = Runner(env=env, timeout=10)
    runner.start(["tool", "a"])
    assert runner.run(["tool", "b"]).stdout == "out b\n"  # other arguments
    assert Runner(env=dict(env, X="1"), timeout=10).run(["tool", "a"]).stdout == "out a\n"  # other environment
    assert runner.run(["tool", "a"], timeout=3).stdout == "out a\n"  # another timeout
    assert runner.run(["tool", "a"], stdin_text="x").stdout == "out a\n"  # with input: never a started one
    assert _starts(log) == 5
    assert discard_started() == 1 and discard_started() == 0


def test_an_uncollected_command_is_killed_and_reaped(tmp_path):
    make_exe(tmp_path / "bin" / "sleeper", "echo $$ > \"$1\"; exec sleep 30")
    runner = Runner(env={"PATH": str(tmp_path / "bin")}, timeout=60)
    pid_file = tmp_path / "pid"
    runner.start(["sleeper", str(pid_file)])
    assert wait_until(pid_file.exists, 10) and wait_until(lambda: pid_file.read_text().strip() != "", 10)
    pid = int(pid_file.read_text())
    assert discard_started() == 1
    assert process_gone(pid) and not subproc._LIVE
    runner.start(["missing-command"])  # cannot start: nothing waits, run() says why
    assert discard_started() == 0 and runner.run(["missing-command"]).status == "missing"


def test_probes_collect_what_prefetch_started(tmp_path, monkeypatch):
    spawned = []
    real = Runner._spawn

    def spy(self, argv, env, with_stdin):
        spawned.append(list(argv[:2]))
        return real(self, argv, env, with_stdin)

    monkeypatch.setattr(Runner, "_spawn", spy)
    prefetch(sys.executable, None, None, 10.0)
    helper_runs = [a for a in spawned if a == [sys.executable, "-c"]]
    assert len(helper_runs) == 1  # the Python helper for --python started before any probe
    ctx = ProbeContext(env=dict(os.environ), timeout=10.0, target_python=sys.executable)
    snap = run_probes(ctx, stages=[[("python", pyenv.probe)]])
    assert [a for a in spawned if a == [sys.executable, "-c"]] == helper_runs  # collected, not run again
    assert snap.python.version == "%d.%d.%d" % sys.version_info[:3] and snap.probes[0].status == "ok"
    assert not subproc._STARTED and discard_started() == 0  # the rest (compilers, ldconfig) ended with the probes


def test_prefetch_starts_nothing_for_a_snapshot_or_an_image_root(monkeypatch):
    spawned = []

    def spy(self, argv, env, with_stdin):
        spawned.append(list(argv))
        return subproc.CmdResult(list(argv), "missing", reason="not started by this test")

    monkeypatch.setattr(Runner, "_spawn", spy)
    prefetch(sys.executable, None, "snap.json", 5.0)
    prefetch(sys.executable, "/some/root", None, 5.0)
    assert spawned == []
    prefetch("/no/such/python", None, None, 5.0)  # bad input is left to the probe: no exception here
    assert spawned and not [a for a in spawned if a[:1] == ["/no/such/python"]]
    assert discard_started() == 0
