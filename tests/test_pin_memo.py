"""The remembered Requires-Dist judgements (envdoctor.facts.pin_memo): a warm check judges the same
pins without importing packaging's requirement parser, and the memo never changes an answer -- it is keyed by
the marker environment, and a file that is not what it wrote is ignored."""
from __future__ import annotations

import json

from envdoctor.facts import pin_memo, pins, versions

from .cli_run import run
from .snapfactory import machine, torch

# lines of torch 2.5.1's own Requires-Dist (its manylinux x86_64 wheel's METADATA), and one line of garbage
LINES = ['nvidia-cudnn-cu12==9.1.0.70; platform_system == "Linux" and platform_machine == "x86_64"',
         'nvidia-cublas-cu12==12.4.5.8; platform_system == "Linux" and platform_machine == "x86_64"',
         'optree>=0.12.0; extra == "optree"', "filelock", "not a requirement ((("]
RECORD = """
import atexit, json, os, sys
atexit.register(lambda: open(os.environ["MODULES_OUT"], "w").write(json.dumps(sorted(sys.modules))))
"""


def _snap(system="Linux"):
    return machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"], system=system,
                   frameworks=[torch("2.5.1", cuda="12.4", requires=LINES)],
                   packages={"nvidia-cudnn-cu12": "8.9.2.26", "nvidia-cublas-cu12": "12.4.5.8"})


def _check(tmp_path, snap_file, cache, **env):
    out = tmp_path / "modules.json"
    proc = run("check", "--snapshot", str(snap_file), "--format", "json", prelude=RECORD, cwd=str(tmp_path),
               env={"MODULES_OUT": str(out), "ENVDOCTOR_CACHE_DIR": str(cache), **env})
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)["findings"], set(json.loads(out.read_text()))


def test_a_warm_check_judges_the_same_pins_without_packagings_requirement_parser(tmp_path):
    snap_file = tmp_path / "snap.json"
    snap_file.write_text(json.dumps(_snap().to_dict()))
    cache = tmp_path / "cache"
    cold, cold_modules = _check(tmp_path, snap_file, cache)
    assert "packaging.requirements" in cold_modules  # the first run parses
    assert (cache / "compiled" / "pins.json").is_file()
    warm, warm_modules = _check(tmp_path, snap_file, cache)
    bypassed, _ = _check(tmp_path, snap_file, cache, ENVDOCTOR_NO_PARSE_CACHE="1")
    assert warm == cold == bypassed
    # the pinned cuDNN (9.1.0.70) against the installed 8.9.2.26 was judged, from the memo on the warm run
    assert any("nvidia-cudnn-cu12" in json.dumps(f) for f in warm), [f["id"] for f in warm]
    assert not warm_modules & {"packaging.requirements", "packaging.markers", "packaging.tags"}


def _names(snap):
    return [(p.name, str(p.specifier), p.extra) for p in pins.parse_pins(snap.python.frameworks[0], snap)]


def test_the_memo_is_keyed_by_the_marker_environment_and_agrees_with_packaging(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(pin_memo, "_MEMOS", {})
    linux, windows = _snap("Linux"), _snap("Windows")
    expected_linux = [("nvidia-cudnn-cu12", "==9.1.0.70", None), ("nvidia-cublas-cu12", "==12.4.5.8", None),
                      ("optree", ">=0.12.0", "optree"), ("filelock", "", None)]
    expected_windows = [("optree", ">=0.12.0", "optree"), ("filelock", "", None)]
    assert _names(linux) == expected_linux
    assert _names(windows) == expected_windows
    monkeypatch.setattr(pin_memo, "_MEMOS", {})  # a new process: read from the file
    assert _names(windows) == expected_windows and _names(linux) == expected_linux
    stored = json.loads((tmp_path / "compiled" / "pins.json").read_text())
    assert len(stored["envs"]) == 2


def test_a_file_it_did_not_write_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path))
    snap = _snap()
    expected = [("nvidia-cudnn-cu12", "==9.1.0.70", None), ("nvidia-cublas-cu12", "==12.4.5.8", None),
                ("optree", ">=0.12.0", "optree"), ("filelock", "", None)]
    path = tmp_path / "compiled" / "pins.json"
    path.parent.mkdir(parents=True)
    env_key = pin_memo._env_key(pins.marker_env(snap))
    key = pin_memo._key()
    for text in ("not json", json.dumps({"format": 1, "key": "another", "envs": {env_key: {LINES[0]: None}}}),
                 json.dumps({"format": 1, "key": key, "envs": {env_key: {LINES[0]: ["x", 1, None, "y"]}}})):
        path.write_text(text)
        monkeypatch.setattr(pin_memo, "_MEMOS", {})
        assert _names(snap) == expected, text


def test_the_key_follows_the_codes_stat_facts(tmp_path, monkeypatch):
    """The memo is keyed by its code's stat facts (as a .pyc by its source): the same files give the same key, an
    edited (re-stamped) pins.py or versions.py another, so entries remembered by other code are never read back; a
    file that cannot be stat'ed gives no key at all (nothing read, nothing stored)."""
    import os
    import shutil

    monkeypatch.delenv("ENVDOCTOR_NO_PARSE_CACHE", raising=False)
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
    assert (pin_memo.PINS_SOURCE, pin_memo.VERSIONS_SOURCE) == (pins.__file__, versions.__file__)  # the code behind
    first = pin_memo._key()
    assert pin_memo._key() == first
    copy = tmp_path / "pins.py"
    shutil.copy(pins.__file__, copy)
    monkeypatch.setattr(pin_memo, "PINS_SOURCE", str(copy))
    moved = pin_memo._key()
    assert moved != first
    st = os.stat(copy)
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    assert pin_memo._key() != moved
    names = tmp_path / "versions.py"  # where canonical_name lives: its edits count too
    shutil.copy(versions.__file__, names)
    monkeypatch.setattr(pin_memo, "VERSIONS_SOURCE", str(names))
    assert pin_memo._key() not in (first, moved)
    monkeypatch.setattr(pin_memo, "PINS_SOURCE", str(tmp_path / "missing" / "pins.py"))
    assert pin_memo._key() not in (first, moved)  # absent: "none" in the key, still a key of its own
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setattr(pin_memo, "PINS_SOURCE", str(blocker / "pins.py"))  # under a file: ENOTDIR, not absent
    memo = pin_memo.PinMemo(None)
    assert memo.enabled and memo.key == "" and memo.data == {}
    memo.put(LINES[3], None)
    assert not memo.added
