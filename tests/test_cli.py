"""The command line as a user meets it: exit codes, one-line errors, redaction, atomic output."""
import json
import os
import subprocess
import sys

import pytest

from envdoctor.snapshot import GPU, Driver, Snapshot


def run(*args, env=None, input=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, env=e,
                          input=input, timeout=120)


def assert_one_line_error(proc, code=2):
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_version_and_help():
    assert run("--version").returncode == 0
    out = run("--help").stdout
    for cmd in ("probe", "check", "rules", "explain"):
        assert cmd in out


def test_probe_json_is_one_object():
    proc = run("probe", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema_version"].startswith("1.") and data["redacted"] is True
    assert Snapshot.from_dict(data).platform.system


@pytest.mark.parametrize("args, needle", [
    (["probe", "--root", "/nonexistent/dir"], "--root"),
    (["probe", "--snapshot", "/nonexistent.json"], "no such file"),
    (["check", "--snapshot", "/bin/sh"], "not UTF-8"),
    (["probe", "--python", "/nonexistent/python"], "python"),
    (["explain", "ED99999"], "unknown rule"),
    (["check", "--only", "NOPE123"], "unknown rule"),
])
def test_bad_input_one_line_exit_2(args, needle):
    line = assert_one_line_error(run(*args))
    assert needle.lower() in line.lower()


def test_bad_snapshot_json(tmp_path):
    p = tmp_path / "s.json"
    p.write_text('{"schema_version": "1.0", "gpus": 5}')
    line = assert_one_line_error(run("check", "--snapshot", str(p)))
    assert "not an envdoctor snapshot" in line
    p.write_text("{broken")
    assert "line 1" in assert_one_line_error(run("check", "--snapshot", str(p)))


def test_root_that_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    assert "not a directory" in assert_one_line_error(run("probe", "--root", str(f)))


def test_unknown_option_is_usage_error():
    assert run("probe", "--bogus").returncode == 2


def _snapshot_file(tmp_path, **kw):
    s = Snapshot(envdoctor_version="t", created="2026-01-01T00:00:00+00:00")
    s.platform.system = "Linux"
    s.platform.hostname = "gpu-node-17.example"
    s.driver = Driver(state="ok", version="550.54.15", cuda_version="12.4", source="nvml")
    s.gpus = [GPU(index=0, name="NVIDIA A100-SXM4-80GB", compute_capability="8.0",
                  uuid="GPU-1b3f7b6c-6a5e-4c4e-9b1a-0c2d3e4f5a6b", serial="1324321000123")]
    s.driver.evidence = []
    s.loader.gpu_env = {"HF_TOKEN": "hf_abcdef", "CUDA_VISIBLE_DEVICES": "0",
                        "PIP_INDEX_URL": "https://user:secret@example.invalid/simple"}
    s.python.executable = os.path.expanduser("~") + "/venv/bin/python"
    p = tmp_path / "snap.json"
    p.write_text(s.to_json())
    return p


def test_redaction_by_default_and_no_redact(tmp_path):
    p = _snapshot_file(tmp_path)
    red = run("probe", "--snapshot", str(p), "--format", "json")
    assert red.returncode == 0, red.stderr
    for secret in ("1b3f7b6c", "1324321000123", "gpu-node-17", "hf_abcdef", "secret@", os.path.expanduser("~") + "/venv"):
        assert secret not in red.stdout, secret
    data = json.loads(red.stdout)
    assert data["python"]["executable"] == "~/venv/bin/python"
    assert data["loader"]["gpu_env"]["CUDA_VISIBLE_DEVICES"] == "0"
    raw = run("probe", "--snapshot", str(p), "--format", "json", "--no-redact")
    assert "1b3f7b6c" in raw.stdout and "hf_abcdef" in raw.stdout


def test_output_file_written_atomically(tmp_path):
    out = tmp_path / "snap.json"
    proc = run("probe", "--format", "json", "-o", str(out))
    assert proc.returncode == 0 and proc.stdout == ""
    assert Snapshot.from_json(out.read_text()).platform.system
    assert [x.name for x in tmp_path.iterdir()] == ["snap.json"]


def test_output_into_missing_folder(tmp_path):
    line = assert_one_line_error(run("probe", "-o", str(tmp_path / "nope" / "x.json")))
    assert "does not exist" in line


def test_check_on_this_machine_exits_0_and_says_cpu():
    proc = run("check")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "CPU" in proc.stdout


def test_check_json_shape(tmp_path):
    proc = run("check", "--format", "json", "--snapshot", str(_snapshot_file(tmp_path)))
    data = json.loads(proc.stdout)
    assert set(data) >= {"schema_version", "snapshot", "findings", "summary"}
    for f in data["findings"]:
        assert set(f) >= {"id", "severity", "title", "message", "evidence", "fix"}


def test_no_color_when_piped():
    assert "\x1b[" not in run("check").stdout


def _default_sigint():
    """In the child: SIGINT as in a terminal. A suite started in the background (`sh -c '... &'`) hands its
    children SIGINT ignored, and a Python started so never installs its Ctrl-C handler."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_exits_130_without_traceback(tmp_path):
    """SIGINT during a slow probe: one line, exit code 130 (the shell convention), no traceback."""
    import signal
    import time

    hang = tmp_path / "bin"
    hang.mkdir()
    started = tmp_path / "nvcc-started"
    nvcc = hang / "nvcc"
    nvcc.write_text(f"#!/bin/sh\ntouch {started}\nsleep 30\n")
    nvcc.chmod(0o755)
    env = dict(os.environ, PATH=f"{hang}:{os.environ['PATH']}")
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", "probe", "--timeout", "20"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint)
    deadline = time.monotonic() + 60  # the probe is running (however slow the start-up): now press Ctrl-C
    while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert started.exists(), proc.communicate(timeout=30)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert time.monotonic() - sent < 8, "Ctrl-C must not wait for the probes' timeouts"
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err


def test_startup_imports_no_command_module():
    """`import envdoctor.cli` (every command's start) loads no other command's module: they are lazy."""
    code = ("import sys, envdoctor.cli; print([m for m in sys.modules if m.startswith(('envdoctor.knowledge', "
            "'envdoctor.lock', 'envdoctor.smoke', 'envdoctor.gate', 'envdoctor.onboard', 'envdoctor.rules'))])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


@pytest.mark.parametrize("fmt", ["json", "markdown", "text", "junit", "sarif", "prometheus"])
def test_finding_messages_are_redacted_too(tmp_path, fmt):
    """A path under the home directory, quoted by a finding (or a metric label), is redacted unless --no-redact:
    every format goes through the one redactor."""
    from envdoctor.snapshot import Toolkit

    home = os.path.expanduser("~")
    s = Snapshot(envdoctor_version="t", created="2026-01-01T00:00:00+00:00")
    s.platform.system = "Linux"
    s.driver.state = "not_installed"
    s.toolkits = [Toolkit(path=f"{home}/opt/cuda-12.4", version="12.4.131", version_source="nvcc", is_default=True)]
    p = tmp_path / "snap.json"
    p.write_text(s.to_json())
    red = run("check", "--snapshot", str(p), "--format", fmt)
    assert red.returncode == 0, red.stderr
    assert "~/opt/cuda-12.4" in red.stdout and f"{home}/opt" not in red.stdout
    raw = run("check", "--snapshot", str(p), "--format", fmt, "--no-redact")
    assert f"{home}/opt/cuda-12.4" in raw.stdout
