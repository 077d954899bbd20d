"""check's text output from a snapshot: nothing in it reaches the terminal as a control sequence, and an answer
the snapshot lacks (no driver section; driver state "unknown" with no failed-probe record) is never an all-clear.
Reproduced by users: a GPU name holding an OSC title and a clear-screen reached the terminal raw; a snapshot without
`driver` printed `[✓] NVIDIA driver: unknown` and `No issues found!`."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.snapfactory import machine

HOSTILE_NAME = "NVIDIA A100\x1b]0;x\x07\x1b[2J\x9b31m\r"


def _check(path, *extra, env=None):
    import os

    return subprocess.run([sys.executable, "-m", "envdoctor", "check", "--snapshot", str(path), *extra],
                          capture_output=True, env=dict(os.environ, **(env or {})), timeout=120)


def _write(tmp_path, data, name="snap.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("extra", [[], ["-v"], ["--format", "markdown"]])
def test_no_escape_or_bell_from_a_snapshot_reaches_stdout(tmp_path, extra):
    snap = machine(driver="550.54.14", driver_cuda="12.4", gpus=[HOSTILE_NAME + ":8.0"]).to_dict()
    proc = _check(_write(tmp_path, snap), *extra)
    assert proc.returncode in (0, 1), proc.stderr
    out = proc.stdout.decode("utf-8")
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out and "\r" not in out, repr(out)
    assert b"Traceback" not in proc.stderr
    if not extra:
        assert "NVIDIA A100\\x1b]0;x\\x07\\x1b[2J" in out  # shown, visibly


def test_probe_text_of_a_snapshot_escapes_too(tmp_path):
    snap = machine(driver="550.54.14", driver_cuda="12.4", gpus=[HOSTILE_NAME + ":8.0"]).to_dict()
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "probe", "--snapshot", str(_write(tmp_path, snap))],
                          capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert b"\x1b" not in proc.stdout and b"\x07" not in proc.stdout


def _no_driver_section():
    d = machine().to_dict()
    d.pop("driver")
    return d


def _unknown_driver_no_record():
    d = machine().to_dict()
    d["driver"]["state"] = "unknown"
    d["probes"] = [p for p in d.get("probes", []) if p["name"] != "nvidia"]
    return d


def _unknown_driver_record_ok():
    d = _unknown_driver_no_record()
    d["probes"] = d.get("probes", []) + [{"name": "nvidia", "status": "ok", "reason": "", "duration_ms": 1.0}]
    return d


@pytest.mark.parametrize("make", [_no_driver_section, _unknown_driver_no_record, _unknown_driver_record_ok])
def test_a_missing_driver_answer_is_not_an_all_clear(tmp_path, make):
    path = _write(tmp_path, make())
    proc = _check(path)
    out = proc.stdout.decode()
    assert "No issues found!" not in out, out
    assert "[✓] NVIDIA driver" not in out and "[!] NVIDIA driver: could not determine" in out, out
    assert "not known: whether there is an NVIDIA driver and GPU" in out, out
    assert "ED002" in out
    assert proc.returncode == 0, out  # ED002 is a warning, as for a probe that failed ...
    assert _check(path, "--strict").returncode == 1  # ... which --strict fails
    report = json.loads(_check(path, "--format", "json").stdout)
    ids = [f["id"] for f in report["findings"]]
    assert "ED002" in ids


def test_skipping_ed002_still_says_what_is_not_known(tmp_path):
    proc = _check(_write(tmp_path, _no_driver_section()), "--skip", "ED002")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert "No issues found!" not in out and "not known: whether there is an NVIDIA driver" in out, out


def test_a_cpu_machine_still_reads_as_healthy(tmp_path):
    proc = _check(_write(tmp_path, machine().to_dict()))  # driver state not_installed: an answer
    out = proc.stdout.decode()
    assert proc.returncode == 0 and "No issues found!" in out and "not known" not in out, out
