"""Output files (every command's -o) and bounded input reading (envdoctor.outfile, envdoctor.infile), through the
real CLI where a command promises it ("Damage and unbounded resources")."""
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from envdoctor.errors import BadInput
from envdoctor.infile import MAX_INPUT_BYTES, Unreadable, loads_json, read_text
from envdoctor.outfile import TMP_MARK, clean_stale_temps, write_output
from tests.cli_run import BOUND_S, one_line_error, run
from tests.snapfactory import machine

LOCK = ["lock", "--gpu", "sm_86", "--driver", "550.144.03", "--python-version", "3.11"]
GATE_FACTS = ["--driver", "550.144.03", "--gpu", "sm_75", "--python-version", "3.10"]


@pytest.fixture
def snap_file(tmp_path) -> Path:
    p = tmp_path / "snap.json"
    p.write_text(machine(driver="550.144.03", driver_cuda="12.4", gpus=["NVIDIA A10G:8.6"]).to_json())
    return p


def command(name: str, tmp_path: Path, snap: Path) -> list:
    """A command that writes -o without probing this machine (each of the six that have an output file)."""
    if name == "probe":
        return ["probe", "--snapshot", str(snap), "--format", "json", "-o"]
    if name == "check":
        return ["check", "--snapshot", str(snap), "--format", "json", "-o"]
    if name == "gate":
        req = tmp_path / "requirements.txt"
        req.write_text("numpy==1.26.4\n")
        return ["gate", str(req), *GATE_FACTS, "-o"]
    if name == "lock":
        return [*LOCK, "-o"]
    if name == "smoke":  # an interpreter without any framework: nothing to run, a report all the same
        return ["smoke", "--python", sys.executable, "--framework", "cupy", "-q", "-o"]
    if name == "onboard":
        return ["onboard", "-q", "--snapshot", str(snap), "--cpu", "--env-dir", str(tmp_path / "env"), "--emit-script"]
    raise AssertionError(name)


COMMANDS = ("probe", "check", "gate", "lock", "smoke", "onboard")


def no_temps(folder: Path) -> bool:
    return not [p for p in folder.iterdir() if TMP_MARK in p.name]


# --------------------------------------------------------------------------- -o targets, every command


@pytest.mark.parametrize("name", COMMANDS)
def test_dangling_symlink_refused_then_followed_with_force(name, tmp_path, snap_file):
    out = tmp_path / "out" / "report"
    out.parent.mkdir()
    link = tmp_path / "link"
    link.symlink_to(out)
    cmd = command(name, tmp_path, snap_file)
    line = one_line_error(run(*cmd, str(link)))
    assert str(link) in line and "--force" in line and not out.exists()
    proc = run(*cmd, str(link), "--force")
    assert proc.returncode in (0, 1), proc.stderr
    assert link.is_symlink() and out.is_file() and out.read_text().strip()
    assert no_temps(out.parent) and no_temps(tmp_path)


@pytest.mark.parametrize("name", COMMANDS)
def test_fifo_with_a_reader_is_written_through(name, tmp_path, snap_file):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    time.sleep(0.2)
    proc = run(*command(name, tmp_path, snap_file), str(fifo))
    reader.join(BOUND_S)
    assert proc.returncode in (0, 1), proc.stderr
    assert got and got[0].strip(), "nothing arrived through the FIFO"
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and no_temps(tmp_path)


def test_fifo_without_a_reader_fails_at_once(tmp_path, snap_file):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = run("probe", "--snapshot", str(snap_file), "-o", str(fifo))
    line = one_line_error(proc)
    assert str(fifo) in line and "no process reads" in line and proc.seconds < BOUND_S
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dev_null_is_written_through_and_stays_a_device(snap_file):
    for cmd in (["probe", "--snapshot", str(snap_file)], LOCK):
        proc = run(*cmd, "-o", "/dev/null")
        assert proc.returncode == 0, proc.stderr
        assert stat.S_ISCHR(os.lstat("/dev/null").st_mode)


def test_a_character_device_made_by_mknod_is_not_replaced(tmp_path, snap_file):
    """`mknod X c 1 3; envdoctor probe -o X` left a 0600 regular file where the device was."""
    dev = tmp_path / "X"
    try:
        os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    except (PermissionError, OSError) as exc:
        pytest.skip(f"mknod needs privileges this run does not have ({exc})")
    proc = run("probe", "--snapshot", str(snap_file), "-o", str(dev))
    assert proc.returncode == 0, proc.stderr
    st = os.lstat(dev)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3) and no_temps(tmp_path)


def test_lock_o_dev_zero_is_not_read(tmp_path):
    """lock -o /dev/zero read the target first and ran out of memory."""
    proc = run(*LOCK, "-o", "/dev/zero")
    assert proc.returncode == 0 and "wrote /dev/zero" in proc.stderr and proc.seconds < BOUND_S


def test_dev_full_is_one_line_exit_2(snap_file):
    """`-o /dev/full` was killed."""
    for cmd in (LOCK, ["probe", "--snapshot", str(snap_file)]):
        line = one_line_error(run(*cmd, "-o", "/dev/full"))
        assert "/dev/full" in line and "No space left" in line


def test_lock_o_dev_stdout_through_a_pipe_does_not_hang():
    """`lock -o /dev/stdout | cat` hung (the lock was read back from the pipe)."""
    proc = run(*LOCK, "-o", "/dev/stdout")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("# requirements-cuda.txt") and "torch==" in proc.stdout


def test_dash_means_stdout(snap_file):
    proc = run("probe", "--snapshot", str(snap_file), "--format", "json", "-o", "-")
    assert proc.returncode == 0 and json.loads(proc.stdout)["schema_version"]


def test_symlink_to_a_file_writes_the_target(tmp_path, snap_file):
    target = tmp_path / "real.json"
    target.write_text("old\n")
    link = tmp_path / "link.json"
    link.symlink_to("real.json")
    assert run("probe", "--snapshot", str(snap_file), "--format", "json", "-o", str(link)).returncode == 0
    assert link.is_symlink() and json.loads(target.read_text())["schema_version"] and no_temps(tmp_path)


def test_existing_mode_kept_new_file_gets_the_umask(tmp_path, snap_file):
    old = tmp_path / "old.json"
    old.write_text("x\n")
    old.chmod(0o640)
    assert run("probe", "--snapshot", str(snap_file), "-o", str(old), umask=0o077).returncode == 0
    assert stat.S_IMODE(old.stat().st_mode) == 0o640 and old.read_text() != "x\n"
    new = tmp_path / "new.json"
    assert run("probe", "--snapshot", str(snap_file), "-o", str(new), umask=0o027).returncode == 0
    assert stat.S_IMODE(new.stat().st_mode) == 0o640  # 0666 & ~027, not mkstemp's 0600
    assert run(*LOCK, "-o", str(tmp_path / "lock.txt"), umask=0o002).returncode == 0
    assert stat.S_IMODE((tmp_path / "lock.txt").stat().st_mode) == 0o664
    assert no_temps(tmp_path)


def test_a_folder_is_refused(tmp_path, snap_file):
    line = one_line_error(run("probe", "--snapshot", str(snap_file), "-o", str(tmp_path)))
    assert str(tmp_path) in line and "directory" in line


def test_stale_temp_files_of_dead_runs_are_removed(tmp_path, snap_file):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".out.json{TMP_MARK}{dead.pid}"
    stale.write_text("half a snapsh")
    alive = tmp_path / f".out.json{TMP_MARK}{os.getpid()}"  # a run still going (this test process)
    alive.write_text("in progress")
    other = tmp_path / f".other.json{TMP_MARK}{dead.pid}"  # another output's temp: not this write's business
    other.write_text("x")
    assert run("probe", "--snapshot", str(snap_file), "-o", str(tmp_path / "out.json")).returncode == 0
    assert not stale.exists() and alive.exists() and other.exists()


def test_a_killed_writer_leaves_a_temp_that_the_next_run_removes(tmp_path):
    """The temp a killed run leaves (here: a child killed between writing and renaming) is cleaned next time."""
    target = tmp_path / "out.txt"
    code = ("import os, sys\nfrom envdoctor import outfile\n"
            "outfile.os.replace = lambda a, b: (print('written', flush=True), __import__('time').sleep(600))\n"
            f"outfile.write_output({str(target)!r}, 'x' * 100000)\n")
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert child.stdout.readline().strip() == "written"
    assert not no_temps(tmp_path)
    child.kill()
    child.wait()
    write_output(str(target), "fresh")
    assert target.read_text() == "fresh\n" and no_temps(tmp_path)


def test_write_output_failure_leaves_no_temp(tmp_path, monkeypatch):
    from envdoctor import outfile

    def boom(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(outfile.os, "fsync", boom)
    with pytest.raises(BadInput, match="No space left"):
        write_output(str(tmp_path / "x.txt"), "text")
    assert list(tmp_path.iterdir()) == []


def test_clean_stale_temps_ignores_unrelated_names(tmp_path):
    (tmp_path / ".a.txt.envdoctor-tmp-notapid").write_text("")
    (tmp_path / "a.txt").write_text("")
    clean_stale_temps(str(tmp_path), "a.txt")
    assert sorted(p.name for p in tmp_path.iterdir()) == [".a.txt.envdoctor-tmp-notapid", "a.txt"]


def test_lock_o_identical_file_left_alone_different_needs_force(tmp_path):
    out = tmp_path / "lock.txt"
    assert run(*LOCK, "-o", str(out)).returncode == 0
    before = out.stat().st_mtime_ns
    proc = run(*LOCK, "-o", str(out))
    assert proc.returncode == 0 and "unchanged" in proc.stderr and out.stat().st_mtime_ns == before
    out.write_text(out.read_text() + "# edited\n")
    assert "--force" in one_line_error(run(*LOCK, "-o", str(out)))
    assert run(*LOCK, "-o", str(out), "--force").returncode == 0


# --------------------------------------------------------------------------- bounded reads


def test_read_text_refuses_fifo_and_devices_without_blocking(tmp_path):
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    start = time.monotonic()
    with pytest.raises(Unreadable, match="FIFO"):
        read_text(fifo)
    with pytest.raises(Unreadable, match="character device"):
        read_text("/dev/zero")
    with pytest.raises(Unreadable, match="directory"):
        read_text(tmp_path)
    assert time.monotonic() - start < 5


def test_read_text_bounds_the_size(tmp_path):
    big = tmp_path / "big"
    with open(big, "wb") as fh:
        fh.truncate(MAX_INPUT_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(Unreadable, match="larger than 16 MiB"):
        read_text(big)


@pytest.mark.parametrize("text, needle", [
    ("[" * 200_000 + "]" * 200_000, "nested deeper"),
    ("[" * 150 + "]" * 150, "nested deeper"),
    ('{"a": 1' + "1" * 5000 + "}", "digits"),
    ('{"a": 1e999}', "finite"),
    ('{"a": NaN}', "NaN"),
    ('{"a": [1, 2,]}', "line 1"),
])
def test_loads_json_bad_input_names_the_file(text, needle):
    with pytest.raises(BadInput) as info:
        loads_json(text, "snapshot file s.json")
    assert "s.json" in str(info.value) and needle in str(info.value)


def test_snapshot_from_stdin(snap_file):
    proc = run("check", "--snapshot", "-", "--format", "json", input=snap_file.read_text())
    assert proc.returncode in (0, 1) and json.loads(proc.stdout)["findings"] is not None


def test_root_fifo_and_device_are_recorded_never_read(tmp_path):
    """A FIFO at D/etc/os-release or D/proc/driver/nvidia/version under --root D hung."""
    (tmp_path / "etc").mkdir()
    (tmp_path / "proc" / "driver" / "nvidia").mkdir(parents=True)
    os.mkfifo(tmp_path / "etc" / "os-release")
    os.mkfifo(tmp_path / "proc" / "driver" / "nvidia" / "version")
    (tmp_path / "proc" / "version").symlink_to("/dev/zero")
    proc = run("probe", "--root", str(tmp_path), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    files = [p for p in json.loads(proc.stdout)["probes"] if p["name"] == "files"]
    assert len(files) == 1 and files[0]["status"] == "unknown"
    for path in ("/etc/os-release", "/proc/driver/nvidia/version", "/proc/version"):
        assert path in files[0]["reason"]


def test_corrupt_parse_cache_is_discarded_and_named(tmp_path, monkeypatch):
    """Deeply nested JSON in $ENVDOCTOR_CACHE_DIR/parsed/ dropped the gpus table without naming the cache."""
    env = {"ENVDOCTOR_CACHE_DIR": str(tmp_path), "ENVDOCTOR_NO_PARSE_CACHE": None}
    first = run(*LOCK, env=env)
    assert first.returncode == 0, first.stderr
    entries = sorted((tmp_path / "parsed").glob("*.json"))
    assert entries

    def corrupt():
        for p in entries:
            p.write_text("[" * 200_000 + "]" * 200_000)
        # the compiled cache (knowledge/compiled.py) would answer first and never read the parse cache: without it,
        # the tables are read again through the (corrupt) parse cache
        for p in (tmp_path / "compiled").glob("*.json"):
            p.unlink()

    corrupt()
    proc = run(*LOCK, env=env)
    assert proc.returncode == 0, proc.stderr  # the gpus table still knows sm_86
    pins = [ln for ln in proc.stdout.splitlines() if "==" in ln and not ln.startswith("#")]
    assert pins and pins == [ln for ln in first.stdout.splitlines() if "==" in ln and not ln.startswith("#")]
    assert any(str(p) in proc.stdout for p in entries)  # the lock's header lists (at most 5) data warnings
    again = run(*LOCK, env=env)
    assert "parse cache entry discarded" not in again.stdout + again.stderr  # rewritten good

    from envdoctor.knowledge import load_matrices

    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ENVDOCTOR_NO_PARSE_CACHE", raising=False)
    corrupt()
    m = load_matrices()
    assert m.cc_for_gpu_name("NVIDIA A10G") == "8.6"
    named = sorted(p for p in entries if any(str(p) in w and "discarded" in w for w in m.warnings))
    assert named == entries
