"""The README's commands as written: its set-up block runs in a fresh clone on a machine with only the
system's PATH and a fresh HOME (so it cannot drift from what works), and its test command is what .ci/run runs."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


def block(name: str) -> str:
    """The shell lines of README.md between <!-- NAME:begin --> and <!-- NAME:end -->."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    m = re.search(rf"<!-- {name}:begin -->\s*```sh\n(.*?)```\s*<!-- {name}:end -->", text, re.S)
    assert m, f"README.md has no {name} block between markers"
    return m.group(1).strip()


def test_readme_blocks_are_plain_commands():
    setup = block("setup")
    assert "python3 -m venv .venv" in setup and "envdoctor check" in setup
    assert "sudo" not in setup and "--break-system-packages" not in setup
    assert "python -m pytest -q" in block("test")


def test_ci_runs_the_readme_test_command_and_the_slow_part():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert block("test") in ci  # the same line, so the two cannot drift apart
    assert re.search(r"pytest -q -m slow", ci)


def test_ci_runs_the_type_check_after_the_test_command():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    lines = [ln.strip() for ln in ci.splitlines()]
    test = lines.index(block("test"))
    # a plain command under `set -e` (no `|| true`, no `;` chain after it): an error from mypy fails CI
    assert "python -m mypy" in lines[test + 1:], "no `python -m mypy` line after the README's test command"
    assert "set -euo pipefail" in lines
    assert "python -m mypy" in (REPO / "README.md").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.network
def test_setup_block_works_in_a_fresh_clone_with_the_system_path(tmp_path):
    python3 = shutil.which("python3", path=SYSTEM_PATH)
    if python3 is None:
        pytest.skip("no python3 on the system PATH")
    probe = subprocess.run([python3, "-c", "import venv, ensurepip"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("the system python3 has no venv/ensurepip (apt-get install python3-venv)")
    git = shutil.which("git")
    if git is None:
        pytest.skip("no git to clone with")
    clone = tmp_path / "clone"
    subprocess.run([git, "clone", "-q", str(REPO), str(clone)], check=True, capture_output=True, timeout=120)
    home = tmp_path / "home"
    home.mkdir()
    # a fresh machine: the system's PATH, an empty HOME (no user pip config), none of this shell's variables
    env = {"PATH": SYSTEM_PATH, "HOME": str(home), "LANG": "C.UTF-8"}
    proc = subprocess.run(["/bin/sh", "-ec", block("setup")], cwd=clone, env=env, capture_output=True, text=True,
                          timeout=900)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "CPU" in proc.stdout or "GPU" in proc.stdout, proc.stdout  # the doctor's report, not an error
    assert (clone / ".venv" / "bin" / "envdoctor").exists()
    again = subprocess.run([str(clone / ".venv" / "bin" / "envdoctor"), "check", "--format", "json"], cwd=clone, env=env,
                           capture_output=True, text=True, timeout=120)
    assert again.returncode == 0 and '"findings"' in again.stdout, again.stderr
