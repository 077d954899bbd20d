"""Reading the output, as a person at a terminal does: through the real CLI (`python -m envdoctor`) on snapshots
built from recorded shapes (tests/snapfactory.py)."""
from __future__ import annotations

import json

from tests.cli_run import run
from tests.snapfactory import machine, torch


def _check(tmp_path, snap, *args):
    path = tmp_path / "snap.json"
    path.write_text(snap.to_json())
    return run("check", "--snapshot", str(path), *args, env={"NO_COLOR": "1"})


def test_an_absence_is_not_ticked(tmp_path):
    p = _check(tmp_path, machine(state="not_installed"))
    lines = p.stdout.splitlines()
    assert "[-] NVIDIA driver: not installed" in lines and "[-] GPUs: none" in lines, p.stdout
    assert not any(x.startswith("[✓] NVIDIA driver") or x.startswith("[✓] GPUs") for x in lines)
    p = _check(tmp_path, machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"]))
    assert "[✓] NVIDIA driver: 535.104.05 (supports CUDA <= 12.2)" in p.stdout.splitlines(), p.stdout


def test_identical_gpus_are_counted_not_listed(tmp_path):
    eight = ["NVIDIA A100-SXM4-80GB:8.0"] * 8
    p = _check(tmp_path, machine(driver="535.104.05", driver_cuda="12.2", gpus=eight))
    assert "[✓] GPUs: 0-7: 8 × NVIDIA A100-SXM4-80GB (sm_80)" in p.stdout.splitlines(), p.stdout
    mixed = ["NVIDIA A100-SXM4-80GB:8.0", "NVIDIA A100-SXM4-80GB:8.0", "NVIDIA L4:8.9"]
    p = _check(tmp_path, machine(driver="535.104.05", driver_cuda="12.2", gpus=mixed))
    assert "GPUs: 0,1: 2 × NVIDIA A100-SXM4-80GB (sm_80); 2: NVIDIA L4 (sm_89)" in p.stdout, p.stdout
    one = ["NVIDIA L4:8.9"]
    p = _check(tmp_path, machine(driver="535.104.05", driver_cuda="12.2", gpus=one))
    assert "GPUs: 0: NVIDIA L4 (sm_89)" in p.stdout, p.stdout


def test_a_fix_list_never_starts_with_or(tmp_path):
    """Python 3.4 with a torch whose Requires-Python excludes it, and no torch release in the data for 3.4: the only
    remedy left is the alternative, and it reads as the first step."""
    fw = torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2")
    fw.requires_python = ">=3.8.0"
    snap = machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"], frameworks=[fw],
                   python="3.4.10")
    p = _check(tmp_path, snap, "--format", "json")
    fixes = [f["fix"] for f in json.loads(p.stdout)["findings"] if f["fix"]]
    assert fixes, p.stdout
    assert all(not x[0].lower().startswith("or ") for x in fixes), fixes
    assert any(x[0].startswith("Run it with a Python that >=3.8.0 allows") for x in fixes), fixes


def test_markdown_says_a_finding_once(tmp_path):
    snap = machine(driver="470.57.02", driver_cuda="11.4", gpus=["Tesla V100-SXM2-16GB:7.0"],
                   frameworks=[torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2")])
    p = _check(tmp_path, snap, "--format", "markdown")
    line = next(x for x in p.stdout.splitlines() if x.startswith("- **ERROR ED100**"))
    from envdoctor.rules.engine import all_rules

    title = next(r.title for r in all_rules() if r.id == "ED100")
    assert title not in line and "torch 2.1.2+cu121" in line, line


def test_bare_envdoctor_prints_its_help_without_an_error():
    p = run()
    assert p.returncode == 0 and p.stderr == "", p.stderr
    assert p.stdout.startswith("Usage: envdoctor") and "check" in p.stdout


def test_a_misspelt_option_suggests_the_nearest_first():
    p = run("check", "--formt", "json")
    assert p.returncode == 2
    assert "Did you mean '--format'" in p.stderr, p.stderr
    assert "error: No such option '--formt'" in p.stderr


def test_an_unknown_gpu_name_gets_the_nearest_names(tmp_path):
    (tmp_path / "r.txt").write_text("torch\n")
    p = run("gate", str(tmp_path / "r.txt"), "--gpu", "GeForce RTX 4090x", "--offline", env={"ENVDOCTOR_GATE_RESOLVER": "off"})
    assert p.returncode == 2 and "did you mean 'NVIDIA GeForce RTX 4090'" in p.stderr, p.stderr
    p = run("lock", "--gpu", "A10O", "--driver", "535.104.05", "--python-version", "3.11")
    assert p.returncode == 2 and "'NVIDIA A100'" in p.stderr, p.stderr


def test_help_texts_name_no_internal_module():
    """--help speaks to users: no module path (envdoctor.x.y, a .py file, the repository's folders)."""
    import re

    import click

    from envdoctor.cli import cli

    bad = re.compile(r"envdoctor\.[a-z_]+\.[a-z_]+|\b[a-z_]+\.py\b|\b(?:tests|matrices|docs)/")
    seen = []

    def walk(cmd, path):
        seen.append(path)
        p = run(*path, "--help")
        assert p.returncode == 0, (path, p.stderr)
        hits = bad.findall(p.stdout)
        assert not hits, (path, hits)
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd)
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), path + [name])

    walk(cli, [])
    assert len(seen) > 12, seen


def test_a_lock_file_keeps_its_record_out_of_the_comments_people_read(tmp_path):
    out = tmp_path / "requirements-cuda.txt"
    p = run("lock", "--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.11", "--torch", "-o", str(out))
    assert p.returncode == 0, p.stderr
    lines = out.read_text().splitlines()
    first = next(i for i, x in enumerate(lines) if x.startswith("# envdoctor-lock: "))
    assert len(lines) - first > 2 and max(len(x) for x in lines[first:]) <= 120, lines[first:]
    assert all(not x.strip() or x.startswith("# envdoctor-lock") for x in lines[first:])  # the record ends the file
    assert any(x.startswith("torch==") for x in lines[:first])
    # --check reads the record back from its pieces
    p = run("lock", "--check", str(out), "--driver", "470.82.01")
    assert p.returncode == 1 and "needs >= 525.60.13" in p.stdout, p.stdout + p.stderr
