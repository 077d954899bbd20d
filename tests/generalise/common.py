"""What the issue-14 tests share: real reports rebuilt as snapshots, judged by the rules and through the CLI."""
from __future__ import annotations

import json

import pytest

from envdoctor.parsers.jax_build import jaxlib_label_build
from envdoctor.snapshot import Evidence, Framework
from tests.rules.helpers import by_id, check, serious  # noqa: F401
from tests.test_gate_integrations import cli as _cli

SITE = "/home/user/venv/lib/python3.11/site-packages"


def jaxlib(version: str) -> Framework:
    """jaxlib as the probe records it: build, CUDA and cuDNN from its local version label (+cuda11.cudnn86)."""
    build, cuda, cudnn, rocm = jaxlib_label_build(version)
    return Framework("jaxlib", "jaxlib", version, build=build, cuda_version=cuda, cudnn_version=cudnn,
                     rocm_version=rocm, evidence=[Evidence(f"file:{SITE}/jaxlib-{version}.dist-info/METADATA",
                                                           f"Version: {version}")])


def jax_with(version: str, jaxlib_version: str) -> list:
    lib = jaxlib(jaxlib_version)
    return [Framework("jax", "jax", version, build=lib.build, cuda_version=lib.cuda_version,
                      requires=[f"jaxlib<={jaxlib_version.split('+')[0]}"]), lib]


def check_cli(snap, tmp_path, capsys, *extra, cwd=None):
    """`envdoctor check --snapshot FILE --format json EXTRA`: (exit code, report)."""
    f = tmp_path / "snap.json"
    f.write_text(snap.to_json())
    rc, out, err = _cli(["check", "--snapshot", str(f), "--format", "json", *extra], capsys, cwd=cwd)
    assert "Traceback" not in err, err
    return rc, json.loads(out)


def check_text(snap, tmp_path, capsys, *extra, cwd=None):
    f = tmp_path / "snap.json"
    f.write_text(snap.to_json())
    rc, out, err = _cli(["check", "--snapshot", str(f), *extra], capsys, cwd=cwd)
    assert "Traceback" not in err, err
    return rc, out


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "cache"))
