"""One vocabulary for a target (envdoctor/target_options.py, docs/target.md): lock and gate take the same
--python / --python-version / --platform / --driver / --gpu / --cuda, through the real CLI."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from envdoctor.entry import main

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
TARGET = ("--python", "--python-version", "--platform", "--driver", "--gpu", "--cuda")


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def _option_help(text: str) -> dict:
    """--help text -> {option: its help, joined into one line}."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^  (--[a-z-]+|-\w, --[a-z-]+)(?: \S+)?\s{2,}(.*)$", line) or re.match(r"^  (--[a-z-]+)(\s.*)?$", line)
        if m:
            cur = m.group(1).split(", ")[-1]
            out[cur] = (m.group(2) or "").strip()
        elif cur and line.startswith("      "):
            out[cur] = (out[cur] + " " + line.strip()).strip()
    return out


def test_lock_and_gate_take_the_same_target_options_documented_once(capsys):
    _, lock_help, _ = run(capsys, "lock", "--help")
    _, gate_help, _ = run(capsys, "gate", "--help")
    lh, gh = _option_help(lock_help), _option_help(gate_help)
    for opt in TARGET:
        assert opt in lh and opt in gh, opt
        assert lh[opt] == gh[opt], opt  # one definition, one help text
    doc = (ROOT / "docs" / "target.md").read_text()
    for opt in TARGET:
        assert f"`{opt}" in doc, opt
    assert "docs/target.md" in (ROOT / "README.md").read_text()


def test_lock_help_shows_each_framework_its_own_versions(capsys):
    h = _option_help(run(capsys, "lock", "--help")[1])
    assert "2.5.1" in h["--torch"]
    for opt in ("--tensorflow", "--jax"):
        assert "2.5.1" not in h[opt] and "2.4" not in h[opt], h[opt]
    assert "2.16" in h["--tensorflow"] and "0.4" in h["--jax"]


def _first_release(branch: str) -> str:
    """The lowest driver of a branch that matrices/cuda_driver.toml names (read here straight from the TOML)."""
    data = tomllib.loads((ROOT / "matrices" / "cuda_driver.toml").read_text())
    names = [r.get(k) for r in data["release"] for k in ("driver_linux", "bundled_driver_linux")]
    names += [r.get("min_driver_linux") for r in data["mvc"]]
    mine = [v for v in names if v and (v == branch or v.startswith(branch + "."))]
    return min(mine, key=lambda v: tuple(int(x) for x in v.split(".")))


@pytest.mark.parametrize("given", ["580", "580.65"])
def test_a_driver_branch_means_its_first_release_and_says_so(capsys, given):
    first = _first_release("580")
    assert first.startswith(given + ".")
    rc, out, err = run(capsys, "lock", "--driver", given, "--gpu", "sm_90", "--python-version", "3.11", "--format", "json")
    assert rc == 0, err
    assert f"--driver {given} taken as {first}" in err
    lock = json.loads(out)["record"]
    rc2, out2, _ = run(capsys, "lock", "--driver", first, "--gpu", "sm_90", "--python-version", "3.11", "--format", "json")
    full = json.loads(out2)["record"]
    torch = next(p for p in lock["picks"] if p["framework"] == "torch")
    assert torch["cuda"].startswith("13.")  # not a silent fall back to a CUDA 12 build
    assert [p["requirement"] for p in lock["picks"]] == [p["requirement"] for p in full["picks"]]
    # gate: the same reading of the same option
    rc, out, err = run(capsys, "gate", str(_req(capsys, "torch==2.9.0")), "--driver", given, "--gpu", "sm_90",
                       "--python-version", "3.11")
    assert f"--driver {given} taken as {first}" in err and f"NVIDIA driver {first}" in out


def _req(capsys, line, _cache={}):  # noqa: B006 - one file per line for the module
    import tempfile

    if line not in _cache:
        d = Path(tempfile.mkdtemp(prefix="envdoctor-target-"))
        (d / "requirements.txt").write_text(line + "\n")
        _cache[line] = d / "requirements.txt"
    return _cache[line]


def test_python_version_is_the_one_spelling_and_the_old_one_warns(capsys):
    req = str(_req(capsys, "torch==2.9.0"))
    new = run(capsys, "gate", req, "--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.10")
    old = run(capsys, "gate", req, "--driver", "535.104.05", "--gpu", "sm_80", "--python", "3.10")
    assert new[0] == old[0] and new[1] == old[1]  # same judgement, same report
    assert "deprecated" not in new[2]
    assert "--python 3.10 is deprecated" in old[2] and "--python-version 3.10" in old[2]
    rc, out, err = run(capsys, "lock", "--cuda", "12.4", "--gpu", "sm_80", "--python", "3.11")
    assert rc == 0 and "--python 3.11 is deprecated" in err
    rc, _, err = run(capsys, "gate", req, "--python", "3.10", "--python-version", "3.11")
    assert rc == 2 and "disagree" in err and len(err.strip().splitlines()) == 1  # bad input: one line


def test_gate_takes_a_target_cuda_line(capsys):
    req = str(_req(capsys, "torch==2.6.0+cu124\n--extra-index-url https://download.pytorch.org/whl/cu124"))
    rc, out, err = run(capsys, "gate", req, "--cuda", "11.8", "--gpu", "sm_80", "--python-version", "3.11")
    assert rc == 1 and "runs CUDA 11.8" in out, out + err  # a CUDA 12 build on a CUDA 11 target
    rc, out, err = run(capsys, "gate", req, "--cuda", "12.8", "--gpu", "sm_80", "--python-version", "3.11")
    assert rc == 0, out + err
    # a 535 driver runs the CUDA 12.8 line's builds through minor-version compatibility, as lock judges them: the
    # target stands, judged by the driver's version (the cu124 build runs on it)
    rc, out, err = run(capsys, "gate", req, "--cuda", "12.8", "--driver", "535.104.05")
    assert rc == 0, out + err
    rc, _, err = run(capsys, "gate", req, "--cuda", "7.5")
    assert rc == 2 and "not a CUDA line the data knows" in err
