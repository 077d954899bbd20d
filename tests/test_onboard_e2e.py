"""`envdoctor onboard` for real on this CPU-only machine: one venv built from a generated CPU lock
(torch==2.13.0+cpu from local disk through pip's configured find-links; jax and tensorflow-cpu from the
configured index), installed with pip, smoke-tested, reported; then a rerun that skips every finished step.

Slow (a couple of minutes; pip's cache makes reruns faster).  The report is opened in headless Chromium
when it is installed."""
from __future__ import annotations

import glob
import json
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest

from envdoctor.lock.render import parse_lock
from envdoctor.onboard import plan as P
from tests.test_onboard import _DomFacts, chromium_dom

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parent.parent
FRAMEWORKS = "torch==2.13.0,jax,tensorflow"


def _pip_find_links(env) -> list:
    dirs = shlex.split(env.get("PIP_FIND_LINKS", ""))
    got = subprocess.run([sys.executable, "-m", "pip", "config", "get", "global.find-links"], capture_output=True,
                         text=True, env=env)
    if got.returncode == 0:
        dirs += shlex.split(got.stdout)
    return [d[len("file://"):] if d.startswith("file://") else d for d in dirs]


def _onboard(env, target: Path) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "envdoctor", "onboard", "--frameworks", FRAMEWORKS, "--companions", "none",
            "--installer", "pip", "--env-dir", str(target), "--yes"]
    return subprocess.run(argv, capture_output=True, text=True, env=env, timeout=1800, cwd=str(REPO))


@pytest.fixture(scope="module")
def onboarded(tmp_path_factory):
    if sys.platform != "linux" or platform.machine() not in ("x86_64", "AMD64"):
        pytest.skip("the CPU lock here is for linux-x86_64")
    env = dict(os.environ)
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONPATH"):
        env.pop(var, None)
    env["ENVDOCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("empty-cache"))  # the bundled data
    # The CPU lock names the PyTorch CPU index as an extra index; where it cannot be reached, pip's default
    # 5 retries cost seconds for every package it looks up.  A pip setting, as any user may set it.
    env.setdefault("PIP_RETRIES", "0")
    if not any(glob.glob(os.path.join(d, "torch-2.13.0+cpu-*.whl")) for d in _pip_find_links(env)):
        pytest.skip("torch 2.13.0+cpu is not on local disk through pip's find-links on this machine")
    probe = subprocess.run([sys.executable, "-m", "envdoctor", "probe", "--format", "json"], capture_output=True,
                           text=True, env=env, cwd=str(REPO))
    machine = json.loads(probe.stdout)
    if machine["gpus"]:
        pytest.skip("this end-to-end test is for a CPU-only machine")
    target = tmp_path_factory.mktemp("onboard") / "venv"
    start = time.monotonic()
    first = _onboard(env, target)
    took = time.monotonic() - start
    log = target / P.LOG_FILE
    assert first.returncode == 0, first.stderr[-4000:] + (log.read_text()[-4000:] if log.exists() else "")
    return {"target": target, "first": first, "took": took, "env": env, "machine": machine,
            "state": json.loads((target / P.STATE_FILE).read_text())}


def test_onboard_builds_installs_smokes_and_reports(onboarded):
    target, st = onboarded["target"], onboarded["state"]
    assert [st["steps"][s]["status"] for s in P.STEPS] == ["ok"] * len(P.STEPS)
    lock = parse_lock((target / P.LOCK_FILE).read_text())
    pins = {r.name: r.version for r in lock.requirements}
    assert pins["torch"] == "2.13.0+cpu"  # the CPU build, which pip finds on local disk
    assert "tensorflow-cpu" in pins and "jax" in pins
    # what is installed is what the lock pinned (read from the environment's own metadata)
    py = target / "bin" / "python"
    got = subprocess.run([str(py), "-c", "import importlib.metadata as m, json; print(json.dumps("
                          "{d: m.version(d) for d in ('torch', 'tensorflow-cpu', 'jax')}))"],
                         capture_output=True, text=True)
    installed = json.loads(got.stdout)
    assert installed == {"torch": pins["torch"], "tensorflow-cpu": pins["tensorflow-cpu"], "jax": pins["jax"]}
    # the smoke test ran in it: every framework passed its CPU steps; no GPU, so no GPU step ran
    smoke = st["steps"]["smoke"]["result"]
    assert smoke["python"] == str(py) and not smoke["require_gpu"]
    assert sorted(f["name"] for f in smoke["frameworks"]) == ["jax", "tensorflow", "torch"]
    for fw in smoke["frameworks"]:
        cpu_steps = [s for s in fw["steps"] if s["device"] == "cpu"]
        assert cpu_steps and all(s["status"] == "ok" for s in cpu_steps), fw
        assert all(s["status"] == "not_available" for s in fw["steps"] if s["device"] == "gpu")
    # progress and the final lines
    err = onboarded["first"].stderr
    for n, name in enumerate(P.STEPS, 1):
        assert f"[{n}/7] {name}" in err
    assert "ready:" in onboarded["first"].stdout
    md = (target / P.REPORT_MD).read_text()
    assert "torch 2.13.0+cpu" in md and "## Smoke test" in md and "3 of 3 frameworks passed" in md
    log = (target / P.LOG_FILE).read_text()
    assert "Successfully installed" in log


def test_rerun_skips_every_finished_step(onboarded):
    target = onboarded["target"]
    before = onboarded["state"]
    start = time.monotonic()
    again = _onboard(onboarded["env"], target)
    took = time.monotonic() - start
    assert again.returncode == 0, again.stderr[-3000:]
    for name in ("create", "install", "smoke"):
        line = next(ln for ln in again.stderr.splitlines() if ln.startswith(f"[{P.STEPS.index(name) + 1}/7] {name}"))
        assert "↷" in line, line
    st = json.loads((target / P.STATE_FILE).read_text())
    for name in ("create", "install", "smoke"):
        assert st["steps"][name] == before["steps"][name]
    assert took < onboarded["took"] / 3


def test_report_in_headless_chromium(onboarded):
    target, machine = onboarded["target"], onboarded["machine"]
    dom = chromium_dom(target / P.REPORT_HTML)
    facts = _DomFacts()
    facts.feed(dom)
    assert facts.scripts == 0
    assert facts.texts["driver-state"].strip() == machine["driver"]["state"]
    assert facts.texts["outcome"].startswith("OK")
    pins = {r.name: r.version for r in parse_lock((target / P.LOCK_FILE).read_text()).requirements}
    installed = facts.texts["installed"]
    for dist in ("torch", "tensorflow-cpu", "jax"):
        assert dist in installed and pins[dist] in installed
    rows = {(r.get("data-step"), r.get("data-status")) for r in facts.rows}
    for step in ("probe", "check", "lock", "create", "install", "smoke"):
        assert (step, "ok") in rows or (step, "skipped") in rows
    for label in ("import", "matmul (cpu)", "conv (cpu)", "compile (cpu)"):
        assert (label, "ok") in rows
    assert ("matmul (gpu)", "not_available") in rows
    assert "frameworks passed" in facts.texts["smoke-summary"]
