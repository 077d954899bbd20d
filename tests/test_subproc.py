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
