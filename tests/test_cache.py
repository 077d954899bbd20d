"""Probe answers the files on disk fix, kept between runs (envdoctor.cache): a compiler's --version
(Runner.run_fixed) and the Python helper's walk (envdoctor.probes.pyenv). Each is given again only while the
executable, the environment, the working folder and every witness path are unchanged; anything else runs again.

The commands here are real: a copy of /bin/sh (an ELF executable) that logs every run, a shell script, this
test run's own interpreter and a real venv of it."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import venv
from pathlib import Path

import pytest

from envdoctor import cache as witness_cache
from envdoctor.probes import pyenv
from envdoctor.subproc import Runner

pytestmark = pytest.mark.skipif(os.name != "posix" or not os.path.exists("/bin/sh"), reason="POSIX tools")


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    """A private cache folder, and no racy window: these tests change files within the same second on purpose
    (test_a_fresh_file_is_not_kept checks the window itself)."""
    monkeypatch.setattr(witness_cache, "RACY_S", 0.0)
    witness_cache._STORES.clear()
    env = {k: v for k, v in os.environ.items() if k != "ENVDOCTOR_NO_CACHE"}
    env["ENVDOCTOR_CACHE_DIR"] = str(tmp_path / "cache")
    yield env
    witness_cache._STORES.clear()


def _logging_tool(tmp_path: Path) -> Path:
    """An ELF executable (a copy of /bin/sh) run as `tool -c SCRIPT`: SCRIPT appends to runs.log and prints."""
    tool = tmp_path / "bin" / "tool"
    tool.parent.mkdir(exist_ok=True)
    shutil.copy2(os.path.realpath("/bin/sh"), tool)
    with open(tool, "rb") as fh:
        assert fh.read(4) == b"\x7fELF"
    return tool


def _argv(tool: Path, tmp_path: Path, text: str = "tool 1.0") -> list:
    return [str(tool), "-c", f"echo run >> {tmp_path / 'runs.log'}; echo '{text}'"]


def _runs(tmp_path: Path) -> int:
    log = tmp_path / "runs.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_an_elf_tools_answer_is_given_again_without_running_it(tmp_path, cache_env):
    tool = _logging_tool(tmp_path)
    first = Runner(env=cache_env).run_fixed(_argv(tool, tmp_path))
    assert first.ok and first.stdout == "tool 1.0\n" and not first.cached and _runs(tmp_path) == 1
    witness_cache._STORES.clear()  # another process: read back from the file
    again = Runner(env=cache_env).run_fixed(_argv(tool, tmp_path))
    assert again.ok and again.cached and again.stdout == "tool 1.0\n" and again.returncode == 0
    assert _runs(tmp_path) == 1
    [kept] = (tmp_path / "cache" / "commands").glob("*.json")  # one small file per answer
    entry = json.loads(kept.read_text())
    assert entry["format"] == witness_cache.FORMAT and entry["witness"] == [[str(tool), witness_cache.signature(str(tool))]]


@pytest.mark.parametrize("change", ["rewritten", "replaced", "touched"])
def test_a_changed_executable_runs_again(tmp_path, cache_env, change):
    tool = _logging_tool(tmp_path)
    runner = Runner(env=cache_env)
    runner.run_fixed(_argv(tool, tmp_path))
    if change == "rewritten":
        with open(tool, "ab") as fh:
            fh.write(b"\0")
    elif change == "replaced":
        new = tool.with_name("tool.new")
        shutil.copy2(tool, new)
        os.replace(new, tool)
    else:
        st = tool.stat()
        os.utime(tool, ns=(st.st_atime_ns, st.st_mtime_ns + 1000))
    res = runner.run_fixed(_argv(tool, tmp_path))
    assert res.ok and not res.cached and _runs(tmp_path) == 2


def test_other_arguments_environment_or_folder_run_again(tmp_path, cache_env, monkeypatch):
    tool = _logging_tool(tmp_path)
    Runner(env=cache_env).run_fixed(_argv(tool, tmp_path))
    assert not Runner(env=cache_env).run_fixed(_argv(tool, tmp_path, "other")).cached
    assert not Runner(env=dict(cache_env, LANG="de_DE.UTF-8")).run_fixed(_argv(tool, tmp_path)).cached
    monkeypatch.chdir(tmp_path)
    assert not Runner(env=cache_env).run_fixed(_argv(tool, tmp_path)).cached
    assert _runs(tmp_path) == 4
    # the shell's `_` (the command just typed) is no part of the key
    assert Runner(env=dict(cache_env, _="/usr/bin/envdoctor")).run_fixed(_argv(tool, tmp_path)).cached


def test_a_script_and_a_failed_command_are_never_kept(tmp_path, cache_env):
    script = tmp_path / "bin" / "wrapper"
    script.parent.mkdir()
    script.write_text(f"#!/bin/sh\necho run >> {tmp_path / 'runs.log'}\necho wrapper 1.0\n")
    script.chmod(0o755)
    runner = Runner(env=cache_env)
    assert [runner.run_fixed([str(script), "--version"]).cached for _ in range(2)] == [False, False]
    tool = _logging_tool(tmp_path)
    failing = [str(tool), "-c", f"echo run >> {tmp_path / 'runs.log'}; exit 3"]
    assert [runner.run_fixed(failing).status for _ in range(2)] == ["failed", "failed"]
    assert _runs(tmp_path) == 4


def test_a_dispatcher_named_after_itself_is_never_kept(tmp_path, cache_env):
    """ccache's masquerade folder (gcc -> ccache) and a version manager's shims are ELF files that run another
    executable, chosen from PATH or their own configuration: only an executable named after the command is kept."""
    tool = _logging_tool(tmp_path)
    dispatcher = tool.with_name("ccache")
    tool.rename(dispatcher)
    gcc = tmp_path / "bin" / "gcc"
    gcc.symlink_to(dispatcher)
    runner = Runner(env=cache_env)
    argv = [str(gcc), "-c", f"echo run >> {tmp_path / 'runs.log'}; echo 'gcc 12'"]
    assert [runner.run_fixed(argv).cached for _ in range(2)] == [False, False] and _runs(tmp_path) == 2
    plain = tmp_path / "bin" / "gcc-12"
    shutil.copy2(dispatcher, plain)
    gcc.unlink()
    gcc.symlink_to(plain)  # gcc -> gcc-12, as Debian's alternatives resolve: named after it, kept
    assert [runner.run_fixed(argv).cached for _ in range(2)] == [False, True] and _runs(tmp_path) == 3


def test_no_cache_runs_everything(tmp_path, cache_env):
    tool = _logging_tool(tmp_path)
    env = dict(cache_env, ENVDOCTOR_NO_CACHE="1")
    for _ in range(2):
        assert not Runner(env=env).run_fixed(_argv(tool, tmp_path)).cached
    assert _runs(tmp_path) == 2 and not (tmp_path / "cache" / "commands").exists()


def test_an_unwritable_cache_only_means_running_again(tmp_path, cache_env):
    tool = _logging_tool(tmp_path)
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    env = dict(cache_env, ENVDOCTOR_CACHE_DIR=str(blocker))  # the cache root is a file: nothing can be written
    results = [Runner(env=env).run_fixed(_argv(tool, tmp_path)) for _ in range(2)]
    assert [(r.ok, r.cached, r.stdout) for r in results] == [(True, False, "tool 1.0\n")] * 2 and _runs(tmp_path) == 2


def test_a_fresh_file_is_not_kept(tmp_path, cache_env, monkeypatch):
    """Within RACY_S of its last change a file could change again with the same timestamp: not stored then."""
    monkeypatch.setattr(witness_cache, "RACY_S", 2.0)
    tool = _logging_tool(tmp_path)  # its ctime is now
    runner = Runner(env=cache_env)
    assert [runner.run_fixed(_argv(tool, tmp_path)).cached for _ in range(2)] == [False, False]
    assert not list((tmp_path / "cache").glob("commands/*.json"))


def test_a_broken_cache_file_is_ignored_and_rewritten(tmp_path, cache_env):
    tool = _logging_tool(tmp_path)
    runner = Runner(env=cache_env)
    runner.run_fixed(_argv(tool, tmp_path))
    [kept] = (tmp_path / "cache" / "commands").glob("*.json")
    for broken in ("{not json", json.dumps({"format": witness_cache.FORMAT, "witness": "x", "value": 1}),
                   json.dumps({"format": witness_cache.FORMAT + 1, "witness": [], "value": {"stdout": "", "stderr": ""}})):
        kept.write_text(broken)
        witness_cache._STORES.clear()
        assert not Runner(env=cache_env).run_fixed(_argv(tool, tmp_path)).cached  # run, and written again
        witness_cache._STORES.clear()
        assert Runner(env=cache_env).run_fixed(_argv(tool, tmp_path)).cached
    assert _runs(tmp_path) == 4


def test_at_most_max_entries_answers_are_kept(tmp_path, cache_env, monkeypatch):
    monkeypatch.setattr(witness_cache, "MAX_ENTRIES", 3)
    tool = _logging_tool(tmp_path)
    runner = Runner(env=cache_env)
    for i in range(5):
        runner.run_fixed(_argv(tool, tmp_path, f"v{i}"))
        time.sleep(0.01)  # distinct mtimes: the oldest go first
    kept = sorted(json.loads(p.read_text())["value"]["stdout"] for p in (tmp_path / "cache" / "commands").glob("*.json"))
    assert kept == ["v2\n", "v3\n", "v4\n"]


# -- the Python helper's answer ---------------------------------------------------------------------------------


@pytest.fixture
def target(tmp_path):
    """A real venv of this interpreter, and a folder on its PYTHONPATH."""
    root = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False, symlinks=True).create(root)
    extra = tmp_path / "extra"
    extra.mkdir()
    return root / "bin" / "python", extra


def _dist(base: Path, name: str, version: str) -> Path:
    d = base / f"{name}-{version}.dist-info"
    d.mkdir()
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n\n")
    return d


def _helper(python: Path, env: dict) -> dict:
    data, reason = pyenv.run_helper(str(python), Runner(env=env))
    assert data is not None, reason
    return data


def _torch_version(data: dict):
    return next((d["version"] for d in data["dists"] if d["normalized"] == "torch"), None)


def test_the_helpers_answer_is_kept_until_the_environment_changes(target, cache_env):
    python, extra = target
    env = dict(cache_env, PYTHONPATH=str(extra))
    _dist(extra, "torch", "2.13.0")
    first = _helper(python, env)
    assert _torch_version(first) == "2.13.0" and "from_cache" not in first and "witness" not in first
    witness_cache._STORES.clear()
    again = _helper(python, env)
    assert again["from_cache"] > 5 and _torch_version(again) == "2.13.0"
    assert {k: v for k, v in again.items() if k != "from_cache"} == first

    # an upgrade: the folder's entries change
    shutil.rmtree(extra / "torch-2.13.0.dist-info")
    _dist(extra, "torch", "2.14.1")
    upgraded = _helper(python, env)
    assert "from_cache" not in upgraded and _torch_version(upgraded) == "2.14.1"
    assert _helper(python, env)["from_cache"]

    # a version file that was absent appears (the walk looked for it)
    (extra / "torch").mkdir()
    (extra / "torch" / "version.py").write_text("__version__ = '2.14.1+cu130'\ncuda = '13.0'\n")
    fresh = _helper(python, env)
    assert "from_cache" not in fresh
    assert fresh["dists"][0]["files"]["torch/version.py"]["text"].startswith("__version__ = '2.14.1+cu130'")

    # the metadata rewritten in place (same folder entries)
    meta = extra / "torch-2.14.1.dist-info" / "METADATA"
    meta.write_text(meta.read_text().replace("Version: 2.14.1", "Version: 2.14.2"))
    assert _torch_version(_helper(python, env)) == "2.14.2"


def test_a_user_site_or_pth_folder_that_appears_is_seen(target, cache_env, tmp_path):
    python, extra = target
    later = tmp_path / "later"
    site = next(python.parent.parent.glob("lib/python*/site-packages"))
    (site / "extra.pth").write_text(f"{later}\n")  # site adds a .pth folder only once it exists
    env = dict(cache_env)
    assert str(later) not in _helper(python, env)["sys_path"]
    assert _helper(python, env)["from_cache"]
    later.mkdir()
    _dist(later, "torch", "2.13.0")
    data = _helper(python, env)
    assert str(later) in data["sys_path"] and _torch_version(data) == "2.13.0"


def test_a_damaged_entry_runs_the_helper(target, cache_env, tmp_path):
    python, _ = target
    _helper(python, cache_env)
    [path] = (tmp_path / "cache" / "pyenv").glob("*.json")
    raw = json.loads(path.read_text())
    raw["value"]["dists"] = [{"name": 3}]
    path.write_text(json.dumps(raw))
    witness_cache._STORES.clear()
    data = _helper(python, cache_env)
    assert "from_cache" not in data and all(isinstance(d["name"], str) for d in data["dists"])


def test_a_wrapper_that_runs_another_interpreter_is_never_kept(tmp_path, cache_env):
    wrapper = tmp_path / "python-wrapper"
    wrapper.write_text(f"#!/bin/sh\necho run >> {tmp_path / 'runs.log'}\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    for _ in range(2):
        assert "from_cache" not in _helper(wrapper, cache_env)
    assert _runs(tmp_path) == 2


def test_check_says_the_answer_came_from_an_earlier_run(target, cache_env, tmp_path):
    """Through the real CLI: the second probe of an unchanged venv shows that its answer is an earlier run's, and
    the snapshot is otherwise the same. (The racy window is real here: the venv is left 2 s to age first.)"""
    python, _ = target
    time.sleep(witness_cache.RACY_S + 2.1)  # the fixture zeroed RACY_S in this process only; the CLI uses its own
    env = dict(cache_env)

    def probe() -> dict:
        out = subprocess.run([sys.executable, "-m", "envdoctor", "probe", "--python", str(python), "--format", "json"],
                             capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    first, second = probe(), probe()
    said = [e["excerpt"] for e in second["python"]["evidence"] if "earlier run" in e["excerpt"]]
    assert said and "paths the walk read are unchanged" in said[0]
    assert not [e for e in first["python"]["evidence"] if "earlier run" in e["excerpt"]]
    assert first["python"]["packages"] == second["python"]["packages"]
    assert first["python"]["sys_path"] == second["python"]["sys_path"]


def test_the_key_ignores_envdoctors_own_switches_but_not_the_environment():
    base = {"PATH": "/usr/bin", "PYTHONPATH": "/a"}
    key = witness_cache.make_key("cmd", ["nvcc", "-V"], base, cwd="/w")
    assert witness_cache.make_key("cmd", ["nvcc", "-V"], dict(base, ENVDOCTOR_NO_WATCHDOG="1"), cwd="/w") == key
    assert witness_cache.make_key("cmd", ["nvcc", "-V"], dict(base, PYTHONPATH="/b"), cwd="/w") != key
