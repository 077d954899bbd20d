"""Shell completion through click's protocol (what `eval "$(_ENVDOCTOR_COMPLETE=bash_source envdoctor)"` sets up):
sub-commands, and the values of rule IDs, table names and GPU names, asked of a real `python -m envdoctor`."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.knowledge import load_matrices
from envdoctor.knowledge.rows import TABLE_NAMES
from envdoctor.rules.engine import all_rules


def _envdoctor() -> str:
    """The installed console script (completion goes by its program name, as in a user's shell)."""
    exe = shutil.which("envdoctor", path=str(Path(sys.executable).parent)) or shutil.which("envdoctor")
    if exe is None:
        pytest.skip("no envdoctor console script installed next to this interpreter")
    return exe


def complete(*words: str) -> list:
    """What bash completion offers for the last word of `envdoctor WORDS...` (an empty last word: everything)."""
    env = dict(os.environ, _ENVDOCTOR_COMPLETE="bash_complete", COMP_WORDS=" ".join(("envdoctor",) + words),
               COMP_CWORD=str(len(words)))
    proc = subprocess.run([_envdoctor()], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    items = [line.split(",", 1) for line in proc.stdout.splitlines() if "," in line]  # "type,value" per item
    return [value for kind, value in items if kind == "plain"]


def test_bash_source_script_is_offered():
    env = dict(os.environ, _ENVDOCTOR_COMPLETE="bash_source")
    proc = subprocess.run([_envdoctor()], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and "_ENVDOCTOR_COMPLETE=bash_complete" in proc.stdout


def test_sub_commands():
    got = complete("")
    for name in ("probe", "check", "lock", "gate", "smoke", "onboard", "explain", "matrices"):
        assert name in got, got


def test_rule_ids_for_only_skip_and_explain():
    ids = [r.id for r in all_rules()]
    assert set(complete("explain", "")) >= set(ids)
    got = complete("check", "--only", "ED00")
    assert got and all(v.startswith("ED00") for v in got) and set(got) == {i for i in ids if i.startswith("ED00")}
    got = complete("gate", "--skip", "ED001,ED1")  # a comma list completes its last item
    assert got and all(v.startswith("ED001,ED1") for v in got)


def test_table_names_for_matrices_show():
    assert complete("matrices", "show", "") == list(TABLE_NAMES)
    assert complete("matrices", "show", "cu") == [t for t in TABLE_NAMES if t.startswith("cu")]


@pytest.mark.parametrize("command", ["lock", "gate"])
def test_gpu_names_and_archs_for_gpu(command):
    m = load_matrices()
    got = complete(command, "--gpu", "sm_8")
    assert "sm_80" in got and "sm_86" in got and all(v.startswith("sm_8") for v in got)
    a100 = next(g.name for g in m.gpus if "A100" in g.name)
    assert a100 in complete(command, "--gpu", a100[:len(a100) - 2])
