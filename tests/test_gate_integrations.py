"""The shipped integrations: .pre-commit-hooks.yaml and the GitHub composite action (action.yml) parse, reference
real options of the CLI, and their command lines work against the real-world fixtures."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from envdoctor.gate.inputs import load_yaml as read_yaml_plain

ROOT = Path(__file__).resolve().parent.parent
FIX = Path(__file__).parent / "fixtures" / "gate"
RISE = "rise-gen/requirements_cu121.txt"


def load_yaml(path: Path):
    """The file as envdoctor's YAML reader reads it, checked against PyYAML's safe_load (what pre-commit reads
    it with)."""
    import yaml

    text = path.read_text()
    data = read_yaml_plain(text)
    assert data == yaml.safe_load(text)
    return data


def cli(args, capsys, cwd=None):
    from envdoctor.entry import main

    old = os.getcwd()
    if cwd:
        os.chdir(cwd)
    try:
        with pytest.raises(SystemExit) as info:
            main(list(args))
    finally:
        os.chdir(old)
    out, err = capsys.readouterr()
    return info.value.code, out, err


def _options(command_name: str) -> set:
    from envdoctor.cli import cli as group

    import click

    cmd = group.get_command(click.Context(group), command_name)
    return {opt for p in cmd.params for opt in list(p.opts) + list(p.secondary_opts) if opt.startswith("-")}


# --------------------------------------------------------------------------- the gate command is registered


def test_gate_is_a_command(capsys):
    rc, out, _ = cli(["--help"], capsys)
    assert rc == 0 and re.search(r"^\s+gate\s", out, re.M)
    from envdoctor.cli import COMMANDS

    assert COMMANDS["gate"] == ("envdoctor.gate.cli", "gate")


def test_registration_keeps_startup_light():
    code = ("import sys, envdoctor.cli; heavy = [m for m in ('envdoctor.gate.plan', 'envdoctor.gate.inputs', "
            "'envdoctor.gate.render', 'envdoctor.rules', 'packaging.requirements') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(ROOT), timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "[]"


# --------------------------------------------------------------------------- pre-commit


def _hook():
    hooks = load_yaml(ROOT / ".pre-commit-hooks.yaml")
    assert isinstance(hooks, list)
    return next(h for h in hooks if h["id"] == "envdoctor-gate")


def test_pre_commit_hook_definition():
    hook = _hook()
    assert hook["entry"] == "envdoctor gate" and hook["language"] == "python"
    files = re.compile(hook["files"])
    for name in ("requirements.txt", "requirements-torch-cuda.txt", "keras/requirements_cu121.txt", "requirements/pt2.txt", "pyproject.toml",
                 "sub/pyproject.toml", "environment.yml", "environment.yaml", "environment_gpu.yml"):
        assert files.search(name), name
    for name in ("README.md", "setup.py", "environment.yml.j2", "my-requirements.txt/x", "pyproject.toml.bak"):
        assert not files.search(name), name
    # every fixture input of those kinds is one the hook runs on
    for p in FIX.rglob("*"):
        if p.suffix in (".txt", ".yml") or p.name == "pyproject.toml":
            assert files.search(str(p.relative_to(FIX))), p
    assert set(hook.get("args", [])) <= _options("gate")


def test_pre_commit_hook_command_line_runs(capsys):
    """pre-commit runs `entry args... files...` from the repository root."""
    hook = _hook()
    entry = shlex.split(hook["entry"])
    assert entry[0] == "envdoctor"
    files = [f for f in (RISE, "keras-cv/requirements-torch-cuda.txt", "llava/pyproject.toml",
                         "neural-amp-modeler/environment_gpu.yml") if re.search(hook["files"], f)]
    assert len(files) == 4
    args = ["--driver", "470.57.02", "--gpu", "sm_70", "--python-version", "3.10"]  # what a user puts in `args:`
    rc, out, err = cli(entry[1:] + hook.get("args", []) + args + files, capsys, cwd=FIX)
    assert rc == 1 and f"{RISE}:10: ED100" in out and "Traceback" not in err
    rc, out, _ = cli(entry[1:] + ["--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.10", RISE,
                                  "keras-cv/requirements-torch-cuda.txt"], capsys, cwd=FIX)
    assert rc == 0
    # without args the hook judges the machine it runs on
    rc, _, err = cli(entry[1:] + [RISE], capsys, cwd=FIX)
    assert rc in (0, 1) and "Traceback" not in err


# the gate's own rules (ED8xx) and the machine rules, each producing a finding through the integration's command line
FAMILY_CASES = [
    ("gate", "torch==2.3.0+cu121\n", "550.144.03", "ED800"),  # a +cu121 pin without its index
    ("gate", "tensorflow-gpu==2.12.0\n", "550.144.03", "ED807"),  # the empty stub sdist
    ("machine", "--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.3.0+cu121\n", "470.57.02", "ED100"),
]


@pytest.mark.parametrize("family, text, driver, rid", FAMILY_CASES)
def test_pre_commit_hook_runs_every_gate_rule_family(tmp_path, capsys, family, text, driver, rid):
    from envdoctor.rules.base import REGISTRY
    from envdoctor.rules.engine import family_of

    hook = _hook()
    (tmp_path / "requirements.txt").write_text(text)
    assert re.search(hook["files"], "requirements.txt")
    entry = shlex.split(hook["entry"])
    rc, out, err = cli(entry[1:] + hook.get("args", []) + ["--driver", driver, "--gpu", "sm_75", "--python-version", "3.10",
                                                           "requirements.txt"], capsys, cwd=tmp_path)
    assert rc == 1 and f"requirements.txt:{text.count(chr(10))}: {rid}" in out, out
    assert "nothing stops this install" not in out and family_of(REGISTRY[rid]) == family


def test_pre_commit_hook_runs_the_installed_console_script():
    exe = shutil.which("envdoctor")
    if exe is None:
        pytest.skip("the envdoctor console script is not on PATH")
    hook = _hook()
    argv = shlex.split(hook["entry"]) + ["--cpu", "--python-version", "3.11", RISE]
    p = subprocess.run(argv, cwd=str(FIX), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "torch 2.3.0+cu121" in p.stdout


# --------------------------------------------------------------------------- GitHub composite action


def _action():
    return load_yaml(ROOT / "action.yml")


def test_action_definition():
    action = _action()
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    for name in ("command", "files", "snapshot", "driver", "gpu", "python-version", "platform", "cpu", "strict", "format"):
        assert name in inputs and "description" in inputs[name]
    assert inputs["command"]["default"] == "gate" and inputs["format"]["default"] == "github"
    install, run = action["runs"]["steps"]
    assert "pip install" in install["run"] and "${{ github.action_path }}" in str(install["env"].values())
    assert all(step["shell"] == "bash" for step in action["runs"]["steps"])
    # every input reaches the run step through the environment (no ${{ }} expansion inside the script)
    assert "${{" not in run["run"]
    for name in inputs:
        if name not in ("python", "working-directory"):
            assert any(v == "${{ inputs.%s }}" % name for v in run["env"].values()), name


def test_action_uses_real_options():
    run = _action()["runs"]["steps"][1]["run"]
    used = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", run))
    assert used, run
    gate_opts, check_opts = _options("gate"), _options("check")
    gate_part, check_part = run.split('elif [ "$INPUT_COMMAND" = check ]')
    assert set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", gate_part)) <= gate_opts
    assert set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", check_part)) <= check_opts


def _run_action(env_inputs, cwd):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("bash is not available")
    action = _action()
    step = action["runs"]["steps"][1]
    env = {k: "" for k in step["env"]}
    for name, spec in action["inputs"].items():
        key = "INPUT_" + name.upper().replace("-", "_")
        if key in env:
            env[key] = str(spec.get("default", ""))
    env.update(env_inputs)
    env["ENVDOCTOR_PYTHON"] = sys.executable
    full = dict(os.environ, **env)
    full.pop("GITHUB_WORKSPACE", None)
    return subprocess.run([bash, "-c", step["run"]], cwd=str(cwd), env=full, capture_output=True, text=True, timeout=300)


def test_action_gate_annotates_the_offending_line():
    p = _run_action({"INPUT_FILES": f"{RISE}\nkeras-cv/requirements-torch-cuda.txt", "INPUT_DRIVER": "470.57.02",
                     "INPUT_GPU": "Tesla V100-SXM2-16GB", "INPUT_PYTHON_VERSION": "3.10"}, FIX)
    assert p.returncode == 1, p.stderr
    assert p.stdout.startswith(f"::error file={RISE},line=10,title=ED100::torch 2.3.0+cu121")
    assert "envdoctor gate: 1 error(s)" in p.stdout
    p = _run_action({"INPUT_FILES": RISE, "INPUT_DRIVER": "535.104.05", "INPUT_GPU": "sm_80, sm_90",
                     "INPUT_PYTHON_VERSION": "3.10", "INPUT_FORMAT": "text"}, FIX)
    assert p.returncode == 0, p.stderr
    assert "Ampere GPU (sm_80), Hopper GPU (sm_90)" in p.stdout


@pytest.mark.parametrize("family, text, driver, rid", FAMILY_CASES)
def test_action_gate_runs_every_rule_family(tmp_path, family, text, driver, rid):
    (tmp_path / "requirements.txt").write_text(text)
    p = _run_action({"INPUT_FILES": "requirements.txt", "INPUT_DRIVER": driver, "INPUT_GPU": "sm_75",
                     "INPUT_PYTHON_VERSION": "3.10"}, tmp_path)
    assert p.returncode == 1, p.stderr
    line = text.count("\n")
    assert re.search(rf"^::error file=requirements\.txt,line={line},title={rid}::", p.stdout, re.M), p.stdout


def test_action_check_runs_the_machine_rules(tmp_path):
    from envdoctor.gate.plan import stated_snapshot
    from envdoctor.knowledge import load_matrices

    snap = stated_snapshot(load_matrices(), driver="470.57.02", gpus=["sm_70"], python="3.10")
    from tests import snapfactory as sf

    snap.python.frameworks = [sf.torch("2.3.0+cu121", cuda="12.1", cudnn="8.9.2")]
    (tmp_path / "node.json").write_text(snap.to_json())
    p = _run_action({"INPUT_COMMAND": "check", "INPUT_SNAPSHOT": "node.json"}, tmp_path)
    assert p.returncode == 1 and "ED100" in p.stdout, p.stdout + p.stderr


def test_action_gate_with_extra_and_strict(tmp_path):
    shutil.copytree(FIX / "uv-10326", tmp_path / "uv")
    p = _run_action({"INPUT_FILES": "pyproject.toml", "INPUT_CPU": "true", "INPUT_EXTRA": "cpu",
                     "INPUT_STRICT": "true", "INPUT_FORMAT": "json"}, tmp_path / "uv")
    assert p.returncode == 0, p.stderr
    assert '"version": "2.' in p.stdout and "+cpu" in p.stdout


def test_action_check_command(tmp_path):
    from envdoctor.gate.plan import stated_snapshot
    from envdoctor.knowledge import load_matrices

    (tmp_path / "node.json").write_text(stated_snapshot(load_matrices(), cpu=True, python="3.11").to_json())
    p = _run_action({"INPUT_COMMAND": "check", "INPUT_SNAPSHOT": "node.json"}, tmp_path)
    assert p.returncode == 0, p.stderr
    p = _run_action({"INPUT_COMMAND": "deploy"}, tmp_path)
    assert p.returncode == 2 and "::error title=envdoctor::" in p.stdout


def test_action_malformed_input_exits_2(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch=2.1.2\n")
    p = _run_action({"INPUT_FILES": "requirements.txt", "INPUT_CPU": "true"}, tmp_path)
    assert p.returncode == 2
    assert "::error file=requirements.txt,line=1,title=envdoctor gate%3A input::invalid requirement" in p.stdout
