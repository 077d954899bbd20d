"""The offline planner's indirect pins (matrices/gate_indirect.toml [[pin]] rows) against the real resolver: gate
without --offline asks uv (or pip) against the package index this machine's pip configuration names; the torch it
installs is the torch the offline planner plans.  Needs that index (marked network; skipped when gate could not
resolve, e.g. no index reachable)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli

pytestmark = [pytest.mark.network, pytest.mark.slow]

PASCAL = ["--driver", "470.82.01", "--gpu", "sm_61"]


def _gate(tmp_path, text, py, *extra):
    req = tmp_path / "requirements.txt"
    req.write_text(text)
    r = CliRunner().invoke(cli, ["gate", str(req), *PASCAL, "--python-version", py, "--format", "json", *extra],
                           env={"ENVDOCTOR_GATE_RESOLVER": "uv", "UV_CACHE_DIR": str(tmp_path / "uv-cache")})
    assert r.exit_code in (0, 1), r.output
    unit = json.loads(r.output)["inputs"][0]
    torch = [p["version"] for p in unit["packages"] if p["name"] == "torch"]
    return r.exit_code, unit["resolver"], torch


@pytest.mark.parametrize("text,py,torch", [
    ("torch\nxformers==0.0.20\n", "3.10", "2.0.1"),  # stable-diffusion-webui's pins
    ("torch>=2.0.1\ntorchdata==0.6.1\ntriton==2.0.0\nxformers>=0.0.20\n", "3.10", "2.0.1"),  # generative-models'
    ("torch==2.1.0\nxformers<0.0.23\n", "3.11", "2.1.0"),  # audiocraft's
])
def test_the_real_resolver_installs_the_torch_the_offline_planner_plans(tmp_path, text, py, torch):
    code, resolver, resolved = _gate(tmp_path, text, py)
    if resolver.startswith("offline"):
        pytest.skip(f"gate could not resolve here: {resolver}")
    off_code, _, planned = _gate(tmp_path, text, py, "--offline")
    assert resolved == [torch] and planned == [torch], (resolver, resolved, planned)
    assert code == off_code


def test_where_xformers_0_0_20_has_no_python_3_12_wheel_the_install_fails(tmp_path):
    code, resolver, _ = _gate(tmp_path, "torch\nxformers==0.0.20\n", "3.12")
    # uv finds only xformers' sdist for cp312 (gate builds nothing): the planner judges it, from the [[pin]] rows
    assert code == 1 and resolver.startswith(("offline (xformers has only a source distribution", "uv")), resolver
