"""ED100: the NVIDIA driver against each framework build's CUDA version (run through the engine)."""
from __future__ import annotations

import pytest

from envdoctor.knowledge import load_matrices
from envdoctor.knowledge.matrices import Matrices
from envdoctor.context import Context
from envdoctor.rules.engine import run_rules, select_rules
from envdoctor.snapshot import Framework
from tests.snapfactory import jax, machine, tensorflow, torch

MINE = ["ED100", "ED101", "ED102", "ED103", "ED104", "ED105", "ED2", "ED500", "ED900", "ED901"]


@pytest.fixture(scope="module")
def mat():
    return load_matrices()


def run(snap, mat, only=("ED100",)):
    only = [o for o in only if _exists(o)]
    return run_rules(Context(snap, mat), select_rules(only=list(only)))


def _exists(sel):
    from envdoctor.rules.engine import all_rules

    return any(r.id.startswith(sel) for r in all_rules())


def ids(findings, severity=None):
    return [f.id for f in findings if severity is None or f.severity == severity]


def serious(findings):
    return [f for f in findings if f.severity in ("error", "warning")]


# --------------------------------------------------------------------------- driver too old (real reports)


def test_torch_cu121_on_470_driver_is_an_error_with_both_fixes(mat):
    """https://github.com/lllyasviel/Fooocus/issues/1313: RTX 3050 Laptop, nvidia-smi 470.86 / CUDA 11.4,
    Fooocus' torch 2.1.0 cu121 -> "The NVIDIA driver on your system is too old (found version 11040)"."""
    snap = machine(driver="470.86", driver_cuda="11.4", gpus=["NVIDIA GeForce RTX 3050 Laptop GPU:8.6"],
                   frameworks=[torch("2.1.0+cu121", cuda="12.1", cudnn="8.9.2")], python="3.10.12")
    fs = run(snap, mat)
    [f] = [f for f in fs if f.id == "ED100"]
    assert f.severity == "error"
    assert "torch 2.1.0+cu121" in f.message and "470.86" in f.message and "525.60.13" in f.message
    assert "12.1" in f.message and "11.4" in f.message
    assert any("525.60.13" in x for x in f.fix)
    assert "$ pip install torch==2.1.0 --index-url https://download.pytorch.org/whl/cu118" in f.fix
    sources = [e.source for e in f.evidence]
    assert "nvml" in sources  # the probe fact
    assert any("minor-version-compatibility" in s or "cuda-compatibility" in s for s in sources)  # the matrix row
    assert any("torch/version.py" in s for s in sources)


def test_one_old_driver_several_frameworks_is_one_cause(mat):
    """Tesla K80 hosts stay on the 470 branch (K80 support ended there, CUDA 11.4): CUDA 12 builds of torch,
    TensorFlow and JAX all fail the same way (https://github.com/jax-ml/jax/issues/15961 shows a K80 on
    470.182.03)."""
    snap = machine(driver="470.57.02", driver_cuda="11.4", gpus=["Tesla K80:3.7"],
                   frameworks=[torch("2.1.2+cu121", cuda="12.1"), tensorflow("2.15.0", cuda="12.2", cudnn="8")]
                   + jax("0.4.30", plugin="jax-cuda12-plugin"), python="3.10.12")
    fs = run(snap, mat)
    heads = [f for f in fs if f.id == "ED100"]
    assert len(heads) == 1 and heads[0].severity == "error"
    cons = " ".join(heads[0].consequences)
    assert "tensorflow 2.15.0" in cons and "jax-cuda12-plugin 0.4.30" in cons
    # the driver fix covers every failing build
    assert any(x.startswith("Upgrade the NVIDIA driver to >= 525.60.13") for x in heads[0].fix)


def test_tensorflow_alone_gets_a_tensorflow_alternative(mat):
    snap = machine(driver="470.57.02", driver_cuda="11.4", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                   frameworks=[tensorflow("2.15.0", cuda="12.2", cudnn="8")], python="3.10.12")
    [f] = [f for f in run(snap, mat) if f.id == "ED100"]
    assert f.severity == "error" and "tensorflow 2.15.0" in f.message and "12.2" in f.message
    tf_cmds = [x for x in f.fix if x.startswith("$ pip install 'tensorflow")]
    # the TF lock chooses here: 2.12-2.14 (11.8) run on 470 via MVC, but reach sm_86 only through compute_80 PTX
    # (their build_info lists sm_35 ... sm_75, compute_80), which needs the CUDA 11.8 toolkit's driver (>= 520) to
    # JIT; a release whose arch list the data lacks ranks below every known fit
    from envdoctor.frameworks.base import FrameworkRequest, GpuTarget, Target
    from envdoctor.lock.resolve import resolve

    locked = resolve(Target(frameworks=[FrameworkRequest("tensorflow")], driver="470.57.02", gpus=[GpuTarget("8.6")],
                            python="3.10", companions=[]), mat, explain=False)
    assert locked.ok and locked.picks[0].archs and not locked.unknown
    assert tf_cmds and f"~={mat.tf_release(locked.picks[0].version).tested}'" in tf_cmds[0]


def test_jax_cuda13_plugin_on_a_cuda12_driver_suggests_the_cuda12_plugin_of_the_same_release(mat):
    snap = machine(driver="570.133.20", driver_cuda="12.8", gpus=["NVIDIA H100 80GB HBM3:9.0"],
                   frameworks=jax("0.10.2", plugin="jax-cuda13-plugin"), python="3.12.3")
    [f] = [f for f in run(snap, mat) if f.id == "ED100"]
    assert f.severity == "error" and "580" in f.message and "570.133.20" in f.message
    assert "$ pip install 'jax[cuda12]==0.10.2'" in f.fix


def test_a_platform_no_key_names_gets_the_finding_without_a_wheel_alternative(mat):
    """On a machine whose arch no platform key names (s390x), the alternative build is looked for on no platform:
    the finding stands with the driver fix alone (it once failed as ED003 with a TypeError, found by mypy, #13)."""
    snap = machine(driver="570.133.20", driver_cuda="12.8", gpus=["NVIDIA H100 80GB HBM3:9.0"],
                   frameworks=jax("0.10.2", plugin="jax-cuda13-plugin"), python="3.12.3", machine_arch="s390x")
    found = run(snap, mat)
    assert not [f for f in found if f.id == "ED003"], [f.message for f in found]
    [f] = [f for f in found if f.id == "ED100"]
    assert f.severity == "error" and "580" in f.message
    assert f.fix == ["Upgrade the NVIDIA driver to >= 580.65.06."]


def test_cupy_for_cuda12_on_470(mat):
    cupy = Framework("cupy", "cupy-cuda12x", "13.3.0", build="cuda")
    snap = machine(driver="470.223.02", driver_cuda="11.4", gpus=["Tesla T4:7.5"], frameworks=[cupy])
    [f] = [f for f in run(snap, mat) if f.id == "ED100"]
    assert f.severity == "error" and "cupy-cuda12x 13.3.0" in f.message
    assert any("cupy-cuda11x" in x for x in f.fix)


def test_reported_cuda_version_decides_when_driver_version_is_unknown(mat):
    snap = machine(driver=None, driver_cuda="11.4", state="ok", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                   frameworks=[torch("2.1.2+cu121", cuda="12.1")])
    [f] = [f for f in run(snap, mat) if f.id == "ED100"]
    assert f.severity == "error" and "CUDA 11.4" in f.message


def test_wsl_compares_with_windows_driver_floors(mat):
    # WSL2 reports the Windows driver (522.06 = CUDA 11.8); CUDA 12 needs >= 527.41 on Windows.
    bad = machine(driver="522.06", driver_cuda="11.8", wsl=2, gpus=["NVIDIA GeForce RTX 3060:8.6"],
                  frameworks=[torch("2.1.2+cu121", cuda="12.1")])
    [f] = [f for f in run(bad, mat) if f.id == "ED100"]
    assert f.severity == "error" and "527.41" in f.message
    good = machine(driver="560.94", driver_cuda="12.6", wsl=2, gpus=["NVIDIA GeForce RTX 4070:8.9"],
                   frameworks=[torch("2.5.1+cu124", cuda="12.4")])
    assert not serious(run(good, mat))


# --------------------------------------------------------------------------- minor-version compatibility


def test_mvc_is_not_an_error(mat):
    """torch 2.4.1+cu124 on a 535 driver (CUDA 12.2) runs through minor-version compatibility."""
    snap = machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA GeForce RTX 4090:8.9"],
                   frameworks=[torch("2.4.1+cu124", cuda="12.4")])
    fs = [f for f in run(snap, mat) if f.id == "ED100"]
    assert not serious(fs)
    assert fs and fs[0].severity == "info" and "550.54.14" in fs[0].message


def test_tensorflow_cuda_11_2_on_450_80_is_fine_with_native_kernels(mat):
    """https://github.com/tensorflow/docs/pull/1902: CUDA 11.2 builds need only >= 450.80.02 (MVC).
    A V100 has sm_70 cubins in TF 2.5 (sm_35 ... sm_75, compute_80)."""
    snap = machine(driver="450.80.02", driver_cuda="11.0", gpus=["Tesla V100-SXM2-32GB:7.0"],
                   frameworks=[tensorflow("2.5.0", cuda="11.2", cudnn="8")], python="3.8.10")
    assert not serious(run(snap, mat))


def test_a100_on_450_80_needs_cuda_11_2_ptx_jit(mat):
    """https://github.com/PaddlePaddle/Paddle/issues/54454: A100-SXM4-40GB, driver 450.80.02 (CUDA 11.0), a
    CUDA 11.2 build -> "the provided PTX was compiled with an unsupported toolchain". TF 2.5 has no sm_80
    cubin either (compute_80 PTX only), so the A100 depends on JIT that this driver cannot do."""
    snap = machine(driver="450.80.02", driver_cuda="11.0", gpus=["A100-SXM4-40GB:8.0"],
                   frameworks=[tensorflow("2.5.0", cuda="11.2", cudnn="8")], python="3.8.10")
    [f] = [f for f in run(snap, mat) if f.id == "ED100"]
    assert f.severity == "warning"
    assert "tensorflow 2.5.0" in f.message and "compute_80" in f.message and "460.27.03" in f.message
    assert any(e.fact.endswith("compiled archs") for e in f.evidence)


def test_ptx_dependence_on_an_older_driver_is_a_warning(mat):
    """(Same mechanism as https://github.com/CY-CHENYUE/ComfyUI-Molmo/issues/26, TF 2.18:
    'cuModuleLoadData' failed with 'CUDA_ERROR_UNSUPPORTED_PTX_VERSION'.) TF 2.19 ships sm_60..sm_89 cubins and compute_90 PTX (CUDA 12.5): an H100 JIT-compiles that PTX,
    which a 535 (CUDA 12.2) driver cannot ("the provided PTX was compiled with an unsupported toolchain")."""
    snap = machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA H100 80GB HBM3:9.0"],
                   frameworks=[tensorflow("2.19.0", cuda="12.5.1", cudnn="9",
                                          caps=["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"])])
    [f] = [f for f in run(snap, mat) if f.id == "ED100"]
    assert f.severity == "warning" and "compute_90" in f.message and "555.42.02" in f.message


def test_forward_compatibility_reported_cuda_is_trusted(mat):
    """A container with the CUDA forward-compatibility package: nvidia-smi shows driver 470.182.03 with
    CUDA 11.8 (as in https://github.com/jax-ml/jax/issues/15961); here a compat package for 12.2."""
    snap = machine(driver="470.182.03", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[torch("2.1.2+cu121", cuda="12.1")])
    assert not serious(run(snap, mat))


# --------------------------------------------------------------------------- unknown facts -> silence


@pytest.mark.parametrize("snap", [
    machine(driver=None, driver_cuda=None, state="ok", gpus=["NVIDIA GeForce RTX 3090:8.6"],
            frameworks=[torch("2.1.2+cu121", cuda="12.1")]),
    machine(driver="garbage", driver_cuda="??", state="ok", gpus=["NVIDIA GeForce RTX 3090:8.6"],
            frameworks=[torch("2.1.2+cu121", cuda="12.1")]),
    machine(driver="470.57.02", driver_cuda="11.4", state="smi_failed", gpus=["NVIDIA GeForce RTX 3090:8.6"],
            frameworks=[torch("2.1.2+cu121", cuda="12.1")]),
    machine(driver="470.57.02", driver_cuda="11.4", gpus=["NVIDIA GeForce RTX 3090:8.6"],
            frameworks=[Framework("torch", "torch", "2.1.2", build="unknown")]),
])
def test_unknown_facts_are_silent(snap, mat):
    assert not [f for f in run(snap, mat) if f.id == "ED100"]


def test_no_matrices_no_crash_no_guess():
    snap = machine(driver="470.57.02", driver_cuda="11.4", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                   frameworks=[torch("2.1.2+cu121", cuda="12.1")])
    fs = run_rules(Context(snap, Matrices.empty()), select_rules(only=["ED100", "ED2", "ED500", "ED9"]))
    assert not [f for f in fs if "could not run" in f.message]
    # without data the driver's own CUDA level still tells
    assert [f.severity for f in fs if f.id == "ED100"] == ["error"]


# --------------------------------------------------------------------------- healthy machines, 2022-2026


HEALTHY = [
    machine(driver="525.85.12", driver_cuda="12.0", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
            frameworks=[torch("1.13.1+cu117", cuda="11.7")], python="3.10.12"),
    machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA GeForce RTX 3090:8.6"],
            frameworks=[torch("2.1.2+cu121", cuda="12.1"), tensorflow("2.15.0", cuda="12.2", cudnn="8")],
            python="3.11.7"),
    machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA GeForce RTX 4090:8.9"],
            frameworks=[torch("2.4.1+cu124", cuda="12.4")] + jax("0.4.30", plugin="jax-cuda12-plugin"),
            python="3.11.7"),
    machine(driver="570.124.06", driver_cuda="12.8", gpus=["NVIDIA H100 80GB HBM3:9.0"] * 8,
            frameworks=[torch("2.7.1+cu128", cuda="12.8")], python="3.12.3"),
    machine(driver="575.57.08", driver_cuda="12.9", gpus=["NVIDIA GeForce RTX 5090:12.0"],
            frameworks=[torch("2.8.0", cuda="12.8")], python="3.12.3"),
    machine(driver="580.82.07", driver_cuda="13.0", gpus=["NVIDIA B200:10.0"],
            frameworks=[torch("2.11.0", cuda="13.0")], python="3.12.3"),
    machine(frameworks=[torch("2.13.0+cpu"), tensorflow("2.21.0", dist="tensorflow-cpu")] + jax("0.10.2"),
            python="3.11.7", system="Linux"),
]


@pytest.mark.parametrize("snap", HEALTHY, ids=["a100-525-1.13", "3090-535-2.1-tf2.15", "4090-550-2.4-jax0.4.30",
                                               "h100-570-2.7", "5090-575-2.8", "b200-580-2.11", "cpu-laptop"])
def test_healthy_machines_get_no_error_or_warning(snap, mat):
    fs = run(snap, mat, only=MINE)
    assert not serious(fs), [(f.id, f.message) for f in serious(fs)]
