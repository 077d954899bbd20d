"""The gate corpus: 20 real install inputs from public ML repositories (tests/fixtures/gate, sources in
SOURCES.toml), each judged on four targets.  Every verdict here is what the OFFLINE path (the data-only planner,
``--offline``) says; each was read by hand against what the real resolver installs (uv / pip against the default
index, run by hand on 2026-12-01 where that index could serve the file; the PyTorch / jax indexes were not reachable
from the recording machine).  Lines that constrain torch indirectly are judged from the [[pin]] rows of
matrices/gate_indirect.toml (envdoctor/gate/constraints.py): sd-webui's unpinned torch with xformers==0.0.20, and
generative-models' torch>=2.0.1 with triton==2.0.0 / torchdata==0.6.1, plan torch 2.0.1 as uv does (uv pip compile
of those lines: torch 2.0.1, xformers 0.0.22 on 3.10; no solution on 3.12); whisper's triton>=2.0.0 leaves torch
the newest (uv: the same).  bark and llava have no such line: uv pip compile of their pyproject.toml (sdists built)
installs torch 2.14.1 on Python 3.10, so their ED100/ED200 on the 470 driver are real.  On Python 3.12 the
xformers / triton / torchtext / vllm-flash-attn releases these files pin have no wheel: ED803 on their lines (uv
agrees for vllm; "no wheels with a matching Python ABI tag" for the others), and nothing is laid in.  Lines without a
row (deepspeed, AutoGPTQ's direct wheel) are listed under "not judged" (asserted below), not ignored.

Each entry: input, target, exit code, the error findings as ID@lines.
"""
from __future__ import annotations

import json
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
    ('keras-cv/requirements-torch-cuda.txt', 'rtx5090-580-py312', 1, ['ED803@6', 'ED803@7']),  # torch 2.1.0 / torchvision 0.16.0: no cp312 wheel
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
    ('sd-webui/requirements_versions.txt', 'pascal-470-py310', 0, []),  # xformers==0.0.20 -> torch 2.0.1 (CUDA 11.7)
    ('sd-webui/requirements_versions.txt', 'a100-535-py311', 0, []),
    # xformers 0.0.20 and numpy 1.23.5: no cp312 wheel (numpy's source build needs distutils, gone in 3.12)
    ('sd-webui/requirements_versions.txt', 'rtx5090-580-py312', 1, ['ED803@16', 'ED803@53']),
    ('sd-webui/requirements_versions.txt', 'cpu-py311', 0, []),
    ('text-generation-webui/requirements.txt', 'pascal-470-py310', 0, []),
    ('text-generation-webui/requirements.txt', 'a100-535-py311', 1, ['ED803@28', 'ED803@30', 'ED803@37', 'ED803@41']),
    # and numpy==1.24 (line 11): no cp312 wheel, its source build fails on 3.12
    ('text-generation-webui/requirements.txt', 'rtx5090-580-py312', 1,
     ['ED803@11', 'ED803@28', 'ED803@30', 'ED803@37', 'ED803@41']),
    ('text-generation-webui/requirements.txt', 'cpu-py311', 1, ['ED803@28', 'ED803@30', 'ED803@37', 'ED803@41']),
    ('audiocraft/requirements.txt', 'pascal-470-py310', 1, ['ED100@12']),
    ('audiocraft/requirements.txt', 'a100-535-py311', 0, []),
    ('audiocraft/requirements.txt', 'rtx5090-580-py312', 1, ['ED803@12', 'ED803@13', 'ED803@17', 'ED803@27', 'ED803@28']),  # no cp312 wheels (uv: torch==2.1.0 has none)
    ('audiocraft/requirements.txt', 'cpu-py311', 0, []),
    ('compvis-sd/environment.yaml', 'pascal-470-py310', 0, []),
    ('compvis-sd/environment.yaml', 'a100-535-py311', 0, []),
    # pytorch 1.11.0 (cu113) has no sm_120 kernel and no PTX: it cannot run on an RTX 5090 (now in the data)
    ('compvis-sd/environment.yaml', 'rtx5090-580-py312', 1, ['ED200@9']),
    ('compvis-sd/environment.yaml', 'cpu-py311', 0, []),
    ('whisper/requirements.txt', 'pascal-470-py310', 1, ['ED100@3', 'ED200@3']),
    ('whisper/requirements.txt', 'a100-535-py311', 1, ['ED100@3']),
    ('whisper/requirements.txt', 'rtx5090-580-py312', 0, []),
    ('whisper/requirements.txt', 'cpu-py311', 0, []),
    ('generative-models/requirements/pt2.txt', 'pascal-470-py310', 0, []),  # triton==2.0.0 / torchdata==0.6.1 -> torch 2.0.1
    ('generative-models/requirements/pt2.txt', 'a100-535-py311', 0, []),
    ('generative-models/requirements/pt2.txt', 'rtx5090-580-py312', 1, ['ED803@34', 'ED804@27,28,29,31,39']),  # triton 2.0.0: no cp312; torchdata 0.6.1 (torch 2.0.1) and a cp312 xformers (torch >= 2.3.1); uv: no solution
    ('generative-models/requirements/pt2.txt', 'cpu-py311', 0, []),
    ('bark/pyproject.toml', 'pascal-470-py310', 1, ['ED100@25', 'ED200@25']),
    ('bark/pyproject.toml', 'a100-535-py311', 1, ['ED100@25']),
    ('bark/pyproject.toml', 'rtx5090-580-py312', 0, []),
    ('bark/pyproject.toml', 'cpu-py311', 0, []),
    ('vllm/requirements-cuda.txt', 'pascal-470-py310', 1, ['ED100@7']),
    ('vllm/requirements-cuda.txt', 'a100-535-py311', 0, []),
    ('vllm/requirements-cuda.txt', 'rtx5090-580-py312', 1, ['ED803@10']),  # vllm-flash-attn 2.5.9.post1: no cp312 wheel (uv agrees)
    ('vllm/requirements-cuda.txt', 'cpu-py311', 0, []),
    ('alphafold3/pyproject-cuda.toml', 'pascal-470-py310', 1, ['ED803@14', 'ED803@21,22']),  # ED100@21 folded into ED803@21
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
# Lines that constrain torch indirectly, listed as "not resolved offline" (no [[pin]] row in
# matrices/gate_indirect.toml): deepspeed builds against the installed torch, AutoGPTQ's direct wheel pins a +cu117
# torch. The xformers / triton / torchdata / torchtext / vllm-flash-attn lines of sd-webui, generative-models,
# whisper, audiocraft and vllm have rows: judged, so none of theirs is listed.
INDIRECT = {"sd-webui/requirements_versions.txt": [], "generative-models/requirements/pt2.txt": [],
            "whisper/requirements.txt": [], "audiocraft/requirements.txt": [], "vllm/requirements-cuda.txt": [],
            "llava/pyproject.toml": [20], "text-generation-webui/requirements.txt": [28]}


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
def test_corpus_lines_that_constrain_torch_indirectly_are_judged_from_the_data_or_listed_not_judged(path, lines):
    _, data = run(path, "a100-535-py311")
    got = sorted(int(x["location"].rsplit(":", 1)[1]) for x in data["inputs"][0]["not_judged"]
                 if "not resolved offline" in x["why"])
    assert got == lines


def test_corpus_has_twenty_inputs_with_sources():
    assert len({p for p, *_ in EXPECTED}) >= 20 and len(EXPECTED) == 4 * len({p for p, *_ in EXPECTED})

