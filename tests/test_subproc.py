import os
import time

from envdoctor.subproc import Runner


def _script(tmp_path, name, body):
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body + "\n")
    p.chmod(0o755)
    return p


def _runner(tmp_path, timeout=5.0):
    return Runner(env={"PATH": f"{tmp_path}:{os.environ.get('PATH', '')}"}, timeout=timeout)


def test_ok_and_output(tmp_path):
    _script(tmp_path, "hello", "echo hi; echo err >&2")
    r = _runner(tmp_path).run(["hello"])
    assert r.ok and r.stdout == "hi\n" and r.stderr == "err\n" and r.returncode == 0


def test_missing(tmp_path):
    r = Runner(env={"PATH": str(tmp_path)}).run(["no-such-tool-xyz"])
    assert r.status == "missing" and "not found" in r.reason


def test_failed_carries_first_message_line(tmp_path):
    _script(tmp_path, "bad", "echo 'NVIDIA-SMI has failed because it could not communicate' ; exit 9")
    r = _runner(tmp_path).run(["bad"])
    assert r.status == "failed" and r.returncode == 9 and "NVIDIA-SMI has failed" in r.reason


def test_hang_is_killed_with_its_children(tmp_path):
    marker = tmp_path / "child-survived"
    _script(tmp_path, "hang", f"(sleep 3; touch {marker}) & sleep 60")
    start = time.monotonic()
    r = _runner(tmp_path, timeout=0.5).run(["hang"])
    assert r.status == "timeout"
    assert time.monotonic() - start < 3
    time.sleep(3.5)
    assert not marker.exists(), "the hanging command's process group must be killed"


def test_not_executable(tmp_path):
    p = tmp_path / "plain"
    p.write_text("not a program")
    r = Runner(env={"PATH": str(tmp_path)}).run([str(p)])
    assert r.status in ("missing", "error")


def test_binary_output_does_not_raise(tmp_path):
    _script(tmp_path, "bin", "printf '\\377\\376\\000abc'")
    r = _runner(tmp_path).run(["bin"])
    assert r.ok and "abc" in r.stdout


# -- bounded output and time ------------------------------------------------------------

from envdoctor import subproc  # noqa: E402
from envdoctor.subproc import MAX_LINE, MAX_OUTPUT  # noqa: E402
from tests.fakes import process_gone, wait_until  # noqa: E402


def _wait_gone(pid: int, within: float = 10.0) -> bool:
    return wait_until(lambda: process_gone(pid), within)


def test_endless_stdout_is_cut_at_the_cap_and_killed_not_buffered_to_the_timeout(tmp_path):
    """The repro: `ldconfig` replaced by `yes` buffered 1.8 GB until the timeout. Now it is killed at the cap,
    long before a generous timeout (a timeout status here would mean the output was read to the end)."""
    _script(tmp_path, "ldconfig", "exec yes")
    r = _runner(tmp_path, timeout=120).run(["ldconfig", "-p"])
    assert r.status == "failed" and "printed more than 1 MiB on stdout (killed)" in r.reason, r.reason
    assert len(r.stdout) == MAX_OUTPUT and r.stdout.startswith("y\ny\n")


def test_endless_stderr_is_cut_too(tmp_path):
    _script(tmp_path, "noisy", "yes warning >&2")
    r = _runner(tmp_path, timeout=120).run(["noisy"])
    assert r.status == "failed" and "on stderr" in r.reason and len(r.stderr) == MAX_OUTPUT


def test_output_just_under_the_cap_is_kept_whole(tmp_path):
    _script(tmp_path, "big", f"head -c {MAX_OUTPUT} /dev/zero | tr '\\0' a")
    r = _runner(tmp_path, timeout=120).run(["big"])
    assert r.ok and r.stdout == "a" * MAX_OUTPUT


def test_grandchild_holding_stdout_does_not_stretch_the_command(tmp_path):
    """The command exits; a helper it left in its group keeps stdout open: it is killed, the result comes now."""
    pidfile = tmp_path / "pid"
    _script(tmp_path, "leaves", f"sleep 300 & echo $! > {pidfile}; echo done")
    start = time.monotonic()
    r = _runner(tmp_path, timeout=120).run(["leaves"])
    assert r.ok and r.stdout == "done\n"
    assert time.monotonic() - start < 60, "waited for the grandchild's pipe instead of the command"
    assert _wait_gone(int(pidfile.read_text()))


def test_process_that_left_the_group_is_waited_for_a_grace_only(tmp_path):
    pidfile = tmp_path / "pid"
    _script(tmp_path, "daemonizes", f"setsid sleep 300 & echo $! > {pidfile}; echo done")
    start = time.monotonic()
    r = _runner(tmp_path, timeout=120).run(["daemonizes"])
    try:
        assert r.ok and r.stdout == "done\n"
        assert time.monotonic() - start < 60
    finally:
        os.kill(int(pidfile.read_text()), 9)


def test_timeout_bounds_a_command_that_keeps_printing(tmp_path):
    _script(tmp_path, "drip", "while :; do echo x; sleep 0.1; done")
    start = time.monotonic()
    r = _runner(tmp_path, timeout=1.0).run(["drip"])
    assert r.status == "timeout" and r.stdout.startswith("x\n")
    assert time.monotonic() - start < 30


def test_streaming_hands_over_a_line_without_newline_in_pieces(tmp_path):
    _script(tmp_path, "oneline", f"head -c {3 * MAX_LINE + 5} /dev/zero | tr '\\0' b")
    seen = []
    r = _runner(tmp_path, timeout=60).run(["oneline"], on_stdout_line=seen.append)
    assert r.ok and [len(x) for x in seen] == [MAX_LINE, MAX_LINE, MAX_LINE, 5]


def test_streaming_keeps_delivering_past_the_cap_without_keeping_it(tmp_path):
    _script(tmp_path, "many", f"head -c {2 * MAX_OUTPUT} /dev/zero | tr '\\0' '\\n'")
    count = [0]
    r = _runner(tmp_path, timeout=60).run(["many"], on_stdout_line=lambda line: count.__setitem__(0, count[0] + 1))
    assert r.ok and count[0] == 2 * MAX_OUTPUT and len(r.stdout) == MAX_OUTPUT


def test_stdin_is_fed_while_output_is_read(tmp_path):
    _script(tmp_path, "echoer", "cat")
    text = "0123456789abcdef\n" * 30000  # 510 kB: more than a pipe holds, both ways
    r = _runner(tmp_path, timeout=60).run(["echoer"], stdin_text=text)
    assert r.ok and r.stdout == text


def test_no_command_starts_once_envdoctor_is_closing(tmp_path, monkeypatch):
    _script(tmp_path, "hello", "echo hi")
    monkeypatch.setattr(subproc, "_CLOSING", __import__("threading").Event())
    subproc._CLOSING.set()
    r = _runner(tmp_path).run(["hello"])
    assert r.status == "error" and "exiting" in r.reason
