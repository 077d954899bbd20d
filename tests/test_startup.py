"""What keeps `check` quick to start, checked by behaviour, never by timing: the modules a run
leaves unimported, and the small stand-ins for stdlib helpers that cost imports (threads, which, sha256)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import threading
import time

import pytest

from envdoctor.knowledge.load import sha256
from envdoctor.probes.base import parallel_map
from envdoctor.subproc import which

from .cli_run import run
from .snapfactory import machine, torch

# Imported by a check only when something needs them; each costs milliseconds at every start.
NOT_IMPORTED = ("tomllib", "tomli", "_hashlib", "concurrent.futures", "shutil",
                "packaging.tags", "packaging.requirements", "logging")  # packaging.utils and the pin parser
RECORD = """
import atexit, json, os, sys
atexit.register(lambda: open(os.environ["MODULES_OUT"], "w").write(json.dumps(sorted(sys.modules))))
"""


def _modules_of(tmp_path, *args):
    out = tmp_path / "modules.json"
    proc = run(*args, prelude=RECORD, env={"MODULES_OUT": str(out)}, cwd=str(tmp_path))  # no pyproject.toml here
    assert proc.returncode in (0, 1), proc.stderr
    return set(json.loads(out.read_text()))


def test_check_leaves_the_costly_modules_unimported(tmp_path):
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[torch("2.5.1", cuda="12.4")])
    snap_file = tmp_path / "snap.json"
    snap_file.write_text(json.dumps(snap.to_dict()))
    run("check", "--snapshot", str(snap_file))  # the caches (parse, compiled) are warm from here on
    for args in (("check", "--snapshot", str(snap_file), "--format", "json"), ("check", "--format", "json")):
        modules = _modules_of(tmp_path, *args)
        assert "envdoctor.rules" in modules and "envdoctor.knowledge.compiled" in modules  # it did judge
        assert not modules & set(NOT_IMPORTED), (args, sorted(modules & set(NOT_IMPORTED)))


def test_parallel_map_keeps_order_bounds_workers_and_raises_after_all_ended():
    live, peak, lock = [0], [0], threading.Lock()

    def slow(x):
        with lock:
            live[0] += 1
            peak[0] = max(peak[0], live[0])
        time.sleep(0.01 * (5 - x))
        with lock:
            live[0] -= 1
        return x * 10

    assert parallel_map(slow, [0, 1, 2, 3, 4]) == [0, 10, 20, 30, 40]
    peak[0] = 0
    assert parallel_map(slow, range(5), max_workers=2) == [0, 10, 20, 30, 40] and peak[0] <= 2
    assert parallel_map(slow, []) == []
    ended = []

    def boom(x):
        if x in (1, 2):
            raise ValueError(f"bad {x}")
        time.sleep(0.05)
        ended.append(x)
        return x

    with pytest.raises(ValueError, match="bad 1"):  # the first in order, once every call has ended
        parallel_map(boom, [0, 1, 2, 3])
    assert sorted(ended) == [0, 3]


def test_which_agrees_with_shutil(tmp_path):
    a, b, empty = tmp_path / "a", tmp_path / "b", tmp_path / "empty"
    for d in (a, b, empty):
        d.mkdir()
    for path, mode in ((a / "tool", 0o644), (b / "tool", 0o755), (a / "other", 0o755)):
        path.write_text("#!/bin/sh\n")
        path.chmod(mode)
    (b / "adir").mkdir(mode=0o755)
    search = os.pathsep.join([str(empty), str(a), str(b), str(a)])
    for name in ("tool", "other", "adir", "missing", str(b / "tool"), str(a / "tool"), "./tool"):
        assert which(name, search) == shutil.which(name, path=search), name
    assert which("tool", "") is None
    assert stat.S_IMODE((b / "tool").stat().st_mode) == 0o755


def test_sha256_is_hashlibs():
    for data in (b"", b"abc", bytes(range(256)) * 100):
        assert sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    h = sha256(b"ab")
    h.update(b"c")
    assert h.hexdigest() == hashlib.sha256(b"abc").hexdigest()
