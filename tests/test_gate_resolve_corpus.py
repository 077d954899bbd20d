"""The gate corpus (issue 17): 20 real install inputs from public ML repositories (tests/fixtures/gate, sources in
SOURCES.toml), each judged on four targets.  Every verdict here is what the OFFLINE path (the data-only planner,
``--offline``) says; each was read by hand against what the real resolver installs (uv / pip against the default
index, run by hand on 2026-12-01 where that index could serve the file; the PyTorch / jax indexes were not reachable
from the recording machine).  Known offline misses, kept visible (the resolving path fixes them, see
tests/test_gate_resolve.py): sd-webui, whisper, generative-models, bark, llava resolve an unpinned / ranged torch to
the newest release, where the real resolver, with xformers==0.0.20 / triton==2.0.0, installs torch 2.0.1 -- those
lines are listed under "not judged" (asserted below), not ignored.

Each entry: input, target, exit code, the error findings as ID@lines.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli

GATE_FIX = Path(__file__).parent / "fixtures" / "gate"
TARGETS = {"pascal-470-py310": ["--driver", "470.82.01", "--gpu", "sm_61", "--python-version", "3.10"],
           "a100-535-py311": ["--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.11"],
           "rtx5090-580-py312": ["--driver", "580.65.06", "--gpu", "sm_120", "--python-version", "3.12"],
           "cpu-py311": ["--cpu", "--python-version", "3.11"]}
EXPECTED = [
    ('keras/requirements-jax-cuda.txt', 'pascal-470-py310', 1, ['ED100@11']),
    ('keras/requirements-jax-cuda.txt', 'a100-535-py311', 0, []),
    ('keras/requirements-jax-cuda.txt', 'rtx5090-580-py312', 0, []),
    ('keras/requirements-jax-cuda.txt', 'cpu-py311', 0, []),
    ('keras/requirements-tensorflow-cuda.txt', 'pascal-470-py310', 1, ['ED100@2']),
    ('keras/requirements-tensorflow-cuda.txt', 'a100-535-py311', 0, []),
    ('keras/requirements-tensorflow-cuda.txt', 'rtx5090-580-py312', 1, ['ED160@', 'ED200@2']),  # ED160: its nvidia-cuda-nvcc 12.5 ptxas cannot target sm_120 either
    ('keras/requirements-tensorflow-cuda.txt', 'cpu-py311', 0, []),
    ('keras-cv/requirements-torch-cuda.txt', 'pascal-470-py310', 0, []),
    ('keras-cv/requirements-torch-cuda.txt', 'a100-535-py311', 0, []),
    ('keras-cv/requirements-torch-cuda.txt', 'rtx5090-580-py312', 1, ['ED200@6', 'ED803@6']),
    ('keras-cv/requirements-torch-cuda.txt', 'cpu-py311', 0, []),
    ('keras-2024/requirements-torch-cuda.txt', 'pascal-470-py310', 0, []),
    ('keras-2024/requirements-torch-cuda.txt', 'a100-535-py311', 0, []),
    ('keras-2024/requirements-torch-cuda.txt', 'rtx5090-580-py312', 1, ['ED200@6']),
    ('keras-2024/requirements-torch-cuda.txt', 'cpu-py311', 0, []),
    ('rise-gen/requirements_cu121.txt', 'pascal-470-py310', 1, ['ED100@10']),
    ('rise-gen/requirements_cu121.txt', 'a100-535-py311', 0, []),
    ('rise-gen/requirements_cu121.txt', 'rtx5090-580-py312', 1, ['ED200@10']),
    ('rise-gen/requirements_cu121.txt', 'cpu-py311', 0, []),
    ('neural-amp-modeler/environment_gpu.yml', 'pascal-470-py310', 1, ['ED100@23']),
    ('neural-amp-modeler/environment_gpu.yml', 'a100-535-py311', 0, []),
    ('neural-amp-modeler/environment_gpu.yml', 'rtx5090-580-py312', 1, ['ED200@23']),
    ('neural-amp-modeler/environment_gpu.yml', 'cpu-py311', 0, []),
    ('llava/pyproject.toml', 'pascal-470-py310', 1, ['ED100@18', 'ED200@18']),
    ('llava/pyproject.toml', 'a100-535-py311', 1, ['ED100@18']),
    ('llava/pyproject.toml', 'rtx5090-580-py312', 0, []),
    ('llava/pyproject.toml', 'cpu-py311', 0, []),
    ('uv-10326/pyproject.toml', 'pascal-470-py310', 0, []),
    ('uv-10326/pyproject.toml', 'a100-535-py311', 0, []),
    ('uv-10326/pyproject.toml', 'rtx5090-580-py312', 0, []),
    ('uv-10326/pyproject.toml', 'cpu-py311', 0, []),
    ('pylock/pylock.example.toml', 'pascal-470-py310', 1, ['ED803@3']),
    ('pylock/pylock.example.toml', 'a100-535-py311', 1, ['ED803@3']),
    ('pylock/pylock.example.toml', 'rtx5090-580-py312', 0, []),
    ('pylock/pylock.example.toml', 'cpu-py311', 1, ['ED803@3']),
    ('sd-webui/requirements_versions.txt', 'pascal-470-py310', 1, ['ED100@19', 'ED200@19']),
    ('sd-webui/requirements_versions.txt', 'a100-535-py311', 1, ['ED100@19']),
    ('sd-webui/requirements_versions.txt', 'rtx5090-580-py312', 0, []),
    ('sd-webui/requirements_versions.txt', 'cpu-py311', 0, []),
    ('text-generation-webui/requirements.txt', 'pascal-470-py310', 0, []),
    ('text-generation-webui/requirements.txt', 'a100-535-py311', 1, ['ED803@28', 'ED803@30', 'ED803@37', 'ED803@41']),
    ('text-generation-webui/requirements.txt', 'rtx5090-580-py312', 1, ['ED803@28', 'ED803@30', 'ED803@37', 'ED803@41']),
    ('text-generation-webui/requirements.txt', 'cpu-py311', 1, ['ED803@28', 'ED803@30', 'ED803@37', 'ED803@41']),
    ('audiocraft/requirements.txt', 'pascal-470-py310', 1, ['ED100@12']),
    ('audiocraft/requirements.txt', 'a100-535-py311', 0, []),
    ('audiocraft/requirements.txt', 'rtx5090-580-py312', 1, ['ED200@12', 'ED803@12']),
    ('audiocraft/requirements.txt', 'cpu-py311', 0, []),
    ('compvis-sd/environment.yaml', 'pascal-470-py310', 0, []),
    ('compvis-sd/environment.yaml', 'a100-535-py311', 0, []),
    ('compvis-sd/environment.yaml', 'rtx5090-580-py312', 0, []),
    ('compvis-sd/environment.yaml', 'cpu-py311', 0, []),
    ('whisper/requirements.txt', 'pascal-470-py310', 1, ['ED100@3', 'ED200@3']),
    ('whisper/requirements.txt', 'a100-535-py311', 1, ['ED100@3']),
    ('whisper/requirements.txt', 'rtx5090-580-py312', 0, []),
    ('whisper/requirements.txt', 'cpu-py311', 0, []),
    ('generative-models/requirements/pt2.txt', 'pascal-470-py310', 1, ['ED100@27', 'ED200@27']),
    ('generative-models/requirements/pt2.txt', 'a100-535-py311', 1, ['ED100@27']),
    ('generative-models/requirements/pt2.txt', 'rtx5090-580-py312', 0, []),
    ('generative-models/requirements/pt2.txt', 'cpu-py311', 0, []),
    ('bark/pyproject.toml', 'pascal-470-py310', 1, ['ED100@25', 'ED200@25']),
    ('bark/pyproject.toml', 'a100-535-py311', 1, ['ED100@25']),
    ('bark/pyproject.toml', 'rtx5090-580-py312', 0, []),
    ('bark/pyproject.toml', 'cpu-py311', 0, []),
    ('vllm/requirements-cuda.txt', 'pascal-470-py310', 1, ['ED100@7']),
    ('vllm/requirements-cuda.txt', 'a100-535-py311', 0, []),
    ('vllm/requirements-cuda.txt', 'rtx5090-580-py312', 1, ['ED200@7']),
    ('vllm/requirements-cuda.txt', 'cpu-py311', 0, []),
    ('alphafold3/pyproject-cuda.toml', 'pascal-470-py310', 1, ['ED100@21', 'ED803@14', 'ED803@21,22']),
    ('alphafold3/pyproject-cuda.toml', 'a100-535-py311', 1, ['ED803@14']),
    ('alphafold3/pyproject-cuda.toml', 'rtx5090-580-py312', 0, []),
    ('alphafold3/pyproject-cuda.toml', 'cpu-py311', 1, ['ED803@14']),
    ('nanochat/pyproject.toml', 'pascal-470-py310', 1, ['ED100@23', 'ED200@23']),
    ('nanochat/pyproject.toml', 'a100-535-py311', 0, []),
    ('nanochat/pyproject.toml', 'rtx5090-580-py312', 0, []),
    ('nanochat/pyproject.toml', 'cpu-py311', 0, []),
    ('lwm/gpu_requirements.txt', 'pascal-470-py310', 1, ['ED100@2']),
    ('lwm/gpu_requirements.txt', 'a100-535-py311', 0, []),
    ('lwm/gpu_requirements.txt', 'rtx5090-580-py312', 1, ['ED803@6']),
    ('lwm/gpu_requirements.txt', 'cpu-py311', 0, []),
]
INDIRECT = {"sd-webui/requirements_versions.txt": [53], "generative-models/requirements/pt2.txt": [29, 34, 39],
            "whisper/requirements.txt": [7], "audiocraft/requirements.txt": [17, 28], "vllm/requirements-cuda.txt": [10]}


def run(path: str, target: str):
    r = CliRunner().invoke(cli, ["gate", str(GATE_FIX / path), *TARGETS[target], "--offline", "--format", "json"])
    assert r.exception is None or isinstance(r.exception, SystemExit), r.output
    return r.exit_code, json.loads(r.output)


@pytest.mark.parametrize("path,target,code,errors", EXPECTED, ids=[f"{p}-{t}" for p, t, _, _ in EXPECTED])
def test_corpus_offline_verdict(path, target, code, errors):
    got_code, data = run(path, target)
    got = sorted({f["id"] + "@" + ",".join(str(x["line"]) for x in f["locations"])
                  for u in data["inputs"] for f in u["findings"] if f["severity"] == "error"})
    assert (got_code, got) == (code, errors)
    assert data["inputs"][0]["resolver"].startswith("offline")


@pytest.mark.parametrize("path,lines", sorted(INDIRECT.items()))
def test_corpus_lines_that_constrain_torch_indirectly_are_not_judged_offline(path, lines):
    _, data = run(path, "a100-535-py311")
    got = sorted(int(x["location"].rsplit(":", 1)[1]) for x in data["inputs"][0]["not_judged"]
                 if "not resolved offline" in x["why"])
    assert got == lines


def test_corpus_has_twenty_inputs_with_sources():
    assert len({p for p, *_ in EXPECTED}) >= 20 and len(EXPECTED) == 4 * len({p for p, *_ in EXPECTED})


def test_corpus_offline_time(capsys):
    start = time.monotonic()
    for path in sorted({p for p, *_ in EXPECTED}):
        run(path, "a100-535-py311")
    with capsys.disabled():
        print(f"\ngate --offline on the {len({p for p, *_ in EXPECTED})}-input corpus (one target, in process): "
              f"{time.monotonic() - start:.1f} s")
