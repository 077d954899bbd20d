"""envdoctor fleet under faults, through the real CLI: a full disk (a small tmpfs in a private mount namespace),
endless stdin, huge sparse files, stores that are empty, damaged, folders or unreachable, inputs that are
symlink loops or FIFOs. The store must only ever change as a whole, and a reader must never write it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.fleet_nodes import node
from tests.test_fleet import at, envdoctor, ok, report_json


def one_line(proc, code=2):
    """A refusal: this exit code, no traceback, exactly one line on stderr."""
    assert proc.returncode == code, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def write_json(path, data):
    path.write_text(json.dumps(data))
    return path


def many_configs(path, n, prefix="big"):
    """n snapshots, each its own configuration (another kernel): each stores a representative snapshot (~4 kB)."""
    base = node("x", at(1))
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(json.dumps(dict(base, platform=dict(base["platform"], hostname=f"{prefix}{i}",
                                                         kernel=f"6.8.0-{i}-generic"))) + "\n")
    return path


# -- a full disk ---------------------------------------------------------------------------------------------
def _private_tmpfs_works(tmp_path):
    if shutil.which("unshare") is None:
        return "no unshare(1) on this machine"
    probe = tmp_path / "probe-mnt"
    probe.mkdir()
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c",
                           f"mount -t tmpfs -o size=1m none '{probe}'"], capture_output=True, text=True)
    if proc.returncode != 0:
        return f"a private mount namespace with a tmpfs is refused here: {proc.stderr.strip()[:200]}"
    return None


def test_a_full_disk_never_moves_the_store_aside_or_leaves_an_empty_one(tmp_path):
    why = _private_tmpfs_works(tmp_path)
    if why:
        pytest.skip(why)
    mnt, res = tmp_path / "mnt", tmp_path / "res"
    mnt.mkdir()
    res.mkdir()
    keep = write_json(tmp_path / "keep0.json", node("keep0", at(2)))
    late = write_json(tmp_path / "late0.json", node("late0", at(1)))
    big = many_configs(tmp_path / "big.jsonl", 1500)  # ~6 MB of distinct configurations: more than the 3 MiB disk
    env = dict(os.environ, ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=os.environ.get("PYTHONPATH", ""))
    env.pop("ENVDOCTOR_FLEET_STORE", None)
    ed = f"'{sys.executable}' -m envdoctor"
    # each step: its exit code, stdout, stderr and the disk's listing under res/NAME.*
    script = textwrap.dedent(f"""\
        set -u
        mount -t tmpfs -o size=3m none '{mnt}' || exit 99
        cd '{mnt}'
        step() {{ name=$1; shift; "$@" >'{res}'/$name.out 2>'{res}'/$name.err </dev/null; echo $? >'{res}'/$name.rc;
                  ls -a '{mnt}' >'{res}'/$name.ls; }}
        step first_big {ed} fleet ingest --store new.db '{big}'
        step keep {ed} fleet ingest --store s.db '{keep}'
        step big {ed} fleet ingest --store s.db '{big}'
        step report_after_big {ed} fleet report --store s.db --format json
        dd if=/dev/zero of=filler bs=64k 2>/dev/null
        step late_on_full_disk {ed} fleet ingest --store s.db '{late}'
        step report_on_full_disk {ed} fleet report --store s.db --format json
        step stdin_on_full_disk sh -c "cat '{big}' | {ed} fleet ingest --store s.db -"
        ls -A s.db.inputs.d >'{res}'/spool.ls 2>/dev/null || :
        rm filler
        step late {ed} fleet ingest --store s.db '{late}'
        step report_at_end {ed} fleet report --store s.db --format json
        cp s.db.inputs.jsonl '{res}'/ledger || :
        """)
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "bash", "-c", script], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr

    def step(name):
        rc = int((res / f"{name}.rc").read_text())
        out, err = (res / f"{name}.out").read_text(), (res / f"{name}.err").read_text()
        listing = set((res / f"{name}.ls").read_text().split()) - {".", ".."}
        assert "Traceback" not in err, err
        return rc, out, err, listing

    # a failed first ingest leaves no store at all (not a 0-byte file), nor its temporary file
    rc, _out, err, listing = step("first_big")
    assert rc == 2 and "disk is full" in err and "unchanged" in err
    assert not any(name.startswith(("new.db", ".new.db")) for name in listing), listing
    assert step("keep")[0] == 0
    # a failed ingest into a live store: refused, the store neither replaced nor moved aside
    rc, _out, err, listing = step("big")
    assert rc == 2 and "disk is full" in err and len(err.strip().splitlines()) == 1
    assert not any("damaged" in name or name.startswith(".s.db") for name in listing), listing
    rc, out, err, _ = step("report_after_big")
    assert rc == 0 and err == "" and json.loads(out)["groups"][0]["nodes"] == ["keep0"]
    # on a disk with no byte left: whatever happens, nothing is lost and nothing is moved aside
    rc, _out, err, listing = step("late_on_full_disk")
    assert rc in (0, 2) and not any("damaged" in name for name in listing), (rc, err, listing)
    late_in = rc == 0
    rc, out, err, _ = step("report_on_full_disk")
    assert rc == 0, err
    nodes = {n for g in json.loads(out)["groups"] for n in g["nodes"]}
    assert nodes == ({"keep0", "late0"} if late_in else {"keep0"})
    rc, _out, err, listing = step("stdin_on_full_disk")
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert not any("damaged" in name for name in listing)
    assert (res / "spool.ls").read_text().split() == []  # no half-spooled stdin left to fill the disk
    rc, _out, err, listing = step("late")
    assert rc == 0, err
    rc, out, err, _ = step("report_at_end")
    assert rc == 0 and {n for g in json.loads(out)["groups"] for n in g["nodes"]} == {"keep0", "late0"}
    # the ledger lists what the store holds: the failed ingests are not in it
    ledger = [json.loads(line) for line in (res / "ledger").read_text().splitlines()]
    assert all(str(big) not in e["inputs"] for e in ledger)
    assert [Path(p).name for e in ledger for p in e["inputs"]] in (["keep0.json", "late0.json"],
                                                                  ["keep0.json", "late0.json", "late0.json"])


def test_a_missing_or_empty_store_is_rebuilt_from_its_ledger_by_the_next_ingest(tmp_path):
    store = tmp_path / "fleet.db"
    ok(envdoctor("fleet", "ingest", str(write_json(tmp_path / "n0.json", node("n0", at(2)))), store=store))
    store.write_bytes(b"")  # what a failed first ingest used to leave behind
    line = one_line(envdoctor("fleet", "report", store=store))
    assert "is damaged (an empty file)" in line and "--rebuild" in line
    assert store.read_bytes() == b""
    proc = ok(envdoctor("fleet", "ingest", str(write_json(tmp_path / "n1.json", node("n1", at(1)))), store=store))
    assert "rebuilt from 1 ingests in its ledger" in proc.stderr
    assert report_json(store)["groups"][0]["nodes"] == ["n0", "n1"]
    store.unlink()
    proc = ok(envdoctor("fleet", "ingest", str(write_json(tmp_path / "n2.json", node("n2", at(1)))), store=store))
    assert "did not exist" in proc.stderr and "rebuilt from 2 ingests" in proc.stderr
    assert report_json(store)["groups"][0]["nodes"] == ["n0", "n1", "n2"]
    assert not any(p.name.startswith(".fleet.db") for p in tmp_path.iterdir())


# -- readers never write ----------------------------------------------------------------------------------------
def test_a_report_never_writes_the_store(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_bytes(b"")
    os.utime(empty, (1_000_000_000, 1_000_000_000))
    for cmd in (["report"], ["drift", "--since", "2026-01-01"]):
        line = one_line(envdoctor("fleet", *cmd, "--store", str(empty)))
        assert "empty.json is damaged (an empty file)" in line
    assert empty.read_bytes() == b"" and empty.stat().st_mtime == 1_000_000_000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.json"]
    # a sound store: the report leaves its bytes, its time and its folder as they were
    store = tmp_path / "fleet.db"
    ok(envdoctor("fleet", "ingest", str(write_json(tmp_path / "n0.json", node("n0", at(1)))), store=store))
    os.utime(store, (1_000_000_000, 1_000_000_000))
    before, listing = store.read_bytes(), sorted(p.name for p in tmp_path.iterdir())
    assert report_json(store)["nodes"] == 1
    assert store.read_bytes() == before and store.stat().st_mtime == 1_000_000_000
    assert sorted(p.name for p in tmp_path.iterdir()) == listing


# -- bounded inputs ---------------------------------------------------------------------------------------------
def test_endless_stdin_is_cut_at_the_per_input_cap_and_the_other_inputs_are_kept(tmp_path):
    store = tmp_path / "fleet.db"
    good = write_json(tmp_path / "good0.json", node("good0", at(1)))
    e = dict(os.environ, ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    e.pop("ENVDOCTOR_FLEET_STORE", None)
    yes = subprocess.Popen(["yes", '{"a":1}'], stdout=subprocess.PIPE)
    try:
        proc = subprocess.run([sys.executable, "-m", "envdoctor", "fleet", "ingest", "--store", str(store),
                               "--max-input", "1M", "-", str(good)], stdin=yes.stdout, capture_output=True,
                              text=True, env=e, timeout=120)
    finally:
        yes.stdout.close()
        yes.kill()
        yes.wait()
    line = one_line(proc)
    assert line == ("envdoctor: cannot ingest -: stdin is larger than 1 MiB (the per-input cap; --max-input raises "
                    "it); none of it was ingested")
    assert "1 snapshots read: 1 new" in proc.stdout and "1 inputs not read" in proc.stdout
    assert report_json(store)["groups"][0]["nodes"] == ["good0"]
    spool = tmp_path / "fleet.db.inputs.d"
    assert not spool.exists() or list(spool.iterdir()) == []  # nothing of it kept


def _peak_rss_kib(args, env):
    """Run the CLI in a fresh parent and return (its result, the CLI's peak RSS in KiB from RUSAGE_CHILDREN)."""
    code = ("import json, resource, subprocess, sys\n"
            "p = subprocess.run(json.loads(sys.argv[1]), capture_output=True, text=True)\n"
            "print(json.dumps([p.returncode, p.stdout, p.stderr, "
            "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss]))")
    out = subprocess.run([sys.executable, "-c", code, json.dumps([sys.executable, "-m", "envdoctor", *args])],
                         capture_output=True, text=True, env=env, timeout=300, check=True).stdout
    rc, stdout, stderr, rss = json.loads(out)
    return subprocess.CompletedProcess(args, rc, stdout, stderr), rss


def test_a_huge_sparse_file_is_read_in_bounded_pieces(tmp_path):
    store = tmp_path / "fleet.db"
    env = dict(os.environ, ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("ENVDOCTOR_FLEET_STORE", None)
    good = write_json(tmp_path / "good0.json", node("good0", at(1)))
    # half a GiB of NUL bytes and no newline: one line, under the per-input cap, read in pieces
    half = tmp_path / "half.json"
    subprocess.run(["truncate", "-s", "512M", str(half)], check=True)
    proc, rss = _peak_rss_kib(["fleet", "ingest", "--store", str(store), str(half), str(good)], env)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert "2 snapshots read: 1 new" in proc.stdout
    assert f"skipped {half}:1: document is larger than 16 MiB" in proc.stderr
    assert rss < 200 * 1024, f"peak RSS {rss} KiB reading a 512 MiB line"
    # 10 GiB: over the per-input cap, refused unread (the cap is said)
    huge = tmp_path / "huge.json"
    subprocess.run(["truncate", "-s", "10G", str(huge)], check=True)
    proc, rss = _peak_rss_kib(["fleet", "ingest", "--store", str(store), str(huge)], env)
    line = one_line(proc)
    assert line == f"envdoctor: cannot ingest {huge}: larger than 2048 MiB (the per-input cap; --max-input raises it)"
    assert rss < 200 * 1024


# -- one line, never a traceback --------------------------------------------------------------------------------
def test_unusable_inputs_and_stores_are_one_line_each(tmp_path):
    store = tmp_path / "fleet.db"
    ok(envdoctor("fleet", "ingest", str(write_json(tmp_path / "n0.json", node("n0", at(1)))), store=store))
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    line = one_line(envdoctor("fleet", "ingest", str(loop), store=store))
    assert line == f"envdoctor: cannot ingest {loop}: too many levels of symbolic links"
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    line = one_line(envdoctor("fleet", "ingest", str(fifo), store=store))  # envdoctor() bounds it: never blocks
    assert line == f"envdoctor: cannot ingest {fifo}: it is a FIFO (named pipe), not a regular file"
    folder = tmp_path / "in"
    folder.mkdir()
    os.mkfifo(folder / "pipe.json")
    write_json(folder / "n1.json", node("n1", at(1)))
    proc = envdoctor("fleet", "ingest", str(folder), store=store)
    line = one_line(proc)
    assert line.startswith(f"envdoctor: cannot ingest {folder / 'pipe.json'}: cannot read: it is a FIFO")
    assert "1 snapshots read: 1 new" in proc.stdout
    line = one_line(envdoctor("fleet", "ingest", str(tmp_path / "nope.json"), store=store))
    assert line.endswith("nope.json: no such file or folder")

    line = one_line(envdoctor("fleet", "report", "--store", str(tmp_path)))
    assert line == f"envdoctor: error: fleet store {tmp_path} is a directory, not a fleet store file"
    under_file = tmp_path / "n0.json" / "fleet.db"  # its parent is a file: fails even for root
    for cmd in (["report"], ["gate", str(tmp_path / "n0.json")], ["ingest", str(tmp_path / "n0.json")]):
        line = one_line(envdoctor("fleet", *cmd, "--store", str(under_file)))
        assert str(under_file) in line and "not a" in line.lower(), line
    assert report_json(store)["groups"][0]["nodes"] == ["n0", "n1"]
    # the ledger lists what was read: the inputs refused whole are not in it (a rebuild would only fail on them)
    ledger = [json.loads(line) for line in (tmp_path / "fleet.db.inputs.jsonl").read_text().splitlines()]
    assert [e["inputs"] for e in ledger] == [[str(tmp_path / "n0.json")], [str(folder)]]
    line = one_line(envdoctor("fleet", "ingest", "--rebuild", store=tmp_path / "other.db"))
    assert "no inputs ledger" in line and not (tmp_path / "other.db").exists()
