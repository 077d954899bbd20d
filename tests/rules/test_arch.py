"""ED200 (GPU arch vs a build's arch list) and ED210 (Triton minimum compute capability)."""
from __future__ import annotations

import pytest

from envdoctor.knowledge import load_matrices
from envdoctor.context import Context
from envdoctor.facts.gpus import kernel_for
from envdoctor.rules.engine import run_rules, select_rules
from tests.snapfactory import jax, machine, tensorflow, torch


@pytest.fixture(scope="module")
def mat():
    return load_matrices()


def run(snap, mat, only=("ED200", "ED210")):
    return run_rules(Context(snap, mat), select_rules(only=list(only)))


def found(fs, rid):
    return [f for f in fs if f.id == rid]


# --------------------------------------------------------------------------- the compatibility model itself


@pytest.mark.parametrize("archs,cc,kind", [
    (["sm_80"], "8.6", "sass"),              # sm_80 cubin runs on 8.6
    (["sm_86"], "8.0", "none"),              # ... not the other way round
    (["sm_80", "compute_80"], "9.0", "ptx-major"),
    (["sm_90", "compute_90"], "12.0", "ptx-major"),
    (["sm_90"], "12.0", "none"),             # no PTX: nothing for Blackwell
    (["sm_90a"], "9.0", "sass"),
    (["sm_90a"], "10.0", "none"),            # arch-specific cubins run only on exactly 9.0
    (["compute_90a"], "10.0", "none"),
    (["sm_120", "compute_120"], "12.1", "sass"),
    (["compute_89"], "8.9", "ptx"),
    (["3.7", "5.0", "9.0+PTX"], "12.0", "ptx-major"),  # TORCH_CUDA_ARCH_LIST spelling
    (["sm_50"], "3.7", "none"),
    ([], "8.6", "unknown"),
    (["sm_80"], None, "unknown"),
    (["garbage"], "8.6", "unknown"),
])
def test_binary_compatibility_rules(archs, cc, kind):
    assert kernel_for(archs, cc)[0] == kind


# --------------------------------------------------------------------------- real failures


def test_rtx_5090_with_a_cu124_build(mat):
    """https://github.com/pytorch/pytorch/issues/150733 (and many copies, e.g. lllyasviel/Fooocus#3862):
    "NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch
    installation. The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86
    sm_90." - the arch list of the cu124/cu126 builds."""
    snap = machine(driver="572.16", driver_cuda="12.8", gpus=["NVIDIA GeForce RTX 5090:12.0"],
                   frameworks=[torch("2.6.0+cu126", cuda="12.6")], python="3.11.7")
    [f] = found(run(snap, mat), "ED200")
    assert f.severity == "error"
    assert "torch 2.6.0+cu126" in f.message and "12.0" in f.message and "sm_120" in f.message
    assert "sm_90" in f.message
    cmds = [x for x in f.fix if x.startswith("$ pip install torch==")]
    assert cmds and "/cu128" in cmds[0]  # 572 runs CUDA 12.8, not 13.x
    assert any("arch list" in e.fact for e in f.evidence)


def test_a_presumed_arch_list_is_an_error_only_where_the_toolkit_cannot_target_the_gpu(mat):
    """The data presumes some arch lists (arch_verified UNVERIFIED). torch 2.15.0+cu130's list (sm_75 ...
    sm_120) is presumed: a Jetson Thor (11.0, which CUDA 13.0 can target) missing from it is a warning that
    says so. The 2.6 cu124 list is presumed too, but CUDA 12.4 cannot build sm_120 at all (first in 12.8),
    so an RTX 5090 under it is still an error."""
    assert mat.torch_variant("2.15.0", "cu130").arch_unverified  # the premises of this test
    assert mat.torch_variant("2.6.0", "cu124").arch_unverified
    thor = machine(driver="580.65.06", driver_cuda="13.0", gpus=["NVIDIA Thor:11.0"],
                   frameworks=[torch("2.15.0+cu130", cuda="13.0")], python="3.12.3")
    [f] = found(run(thor, mat), "ED200")
    assert f.severity == "warning" and "presumed" in f.message
    rtx = machine(driver="572.16", driver_cuda="12.8", gpus=["NVIDIA GeForce RTX 5090:12.0"],
                  frameworks=[torch("2.6.0+cu124", cuda="12.4")], python="3.11.7")
    assert [f.severity for f in found(run(rtx, mat), "ED200")] == ["error"]


def test_pascal_with_torch_2_7_cu128_uses_the_builds_own_arch_list(mat):
    """https://github.com/turboderp-org/exllamav2/issues/786: torch 2.7.0+cu128 on a GTX 1080 Ti (6.1) and a
    Tesla P100 (6.0): "The current PyTorch install supports CUDA capabilities sm_75 sm_80 sm_86 sm_90 sm_100
    sm_120 compute_120." Each GPU of the mixed machine is judged."""
    own = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120", "compute_120"]
    snap = machine(driver="570.133.07", driver_cuda="12.8",
                   gpus=["NVIDIA GeForce GTX 1080 Ti:6.1", "Tesla P100-PCIE-16GB:6.0"],
                   frameworks=[torch("2.7.0+cu128", cuda="12.8", arch_list=own)], python="3.12.3")
    fs = found(run(snap, mat), "ED200")
    assert sorted(f.subject for f in fs) == ["torch 2.7.0+cu128 on GPU 0", "torch 2.7.0+cu128 on GPU 1"]
    assert all(f.severity == "error" for f in fs)
    assert all("compute_120" in f.message for f in fs)  # the build's own list, not the data's
    for f in fs:
        assert "$ pip install torch==2.7.0 --index-url https://download.pytorch.org/whl/cu126" in f.fix
        assert any(e.source.startswith("file:") for e in f.evidence)


def test_gtx_1050_with_torch_2_8_cu128(mat):
    """https://github.com/bnsreenu/digitalsreeni-image-annotator/issues/57: GTX 1050 (6.1), driver 550.163.01,
    torch 2.8.0+cu128 -> "no kernel image is available"; the reporter fell back to an older cu12x build."""
    snap = machine(driver="550.163.01", driver_cuda="12.4", gpus=["NVIDIA GeForce GTX 1050:6.1"],
                   frameworks=[torch("2.8.0+cu128", cuda="12.8")], python="3.12.3")
    [f] = found(run(snap, mat), "ED200")
    assert f.severity == "error" and "torch 2.8.0+cu128" in f.message and "6.1" in f.message
    assert "$ pip install torch==2.8.0 --index-url https://download.pytorch.org/whl/cu126" in f.fix
    assert not found(run(snap, mat), "ED210")  # torch cannot run there at all: ED200 says so


def test_pascal_after_the_last_cuda12_release_points_back(mat):
    """torch 2.15 has no CUDA 12.6 wheels (dev-discuss notice quoted in Comfy-Org/ComfyUI#16438): a Pascal
    GPU gets no wheel with kernels; the newest that has one is the 2.14 cu126 build."""
    snap = machine(driver="580.95.05", driver_cuda="13.0", gpus=["NVIDIA GeForce GTX 1080:6.1"],
                   frameworks=[torch("2.15.0", cuda="13.2")], python="3.12.3")
    [f] = found(run(snap, mat), "ED200")
    assert f.severity == "error" and "No newer torch release" in f.message and "2.14" in f.message
    assert any("torch==2.14" in x and "/cu126" in x for x in f.fix)


def test_kepler_k80_with_cu121(mat):
    """Tesla K80 (sm_37) under CUDA 12 builds (https://github.com/pytorch/pytorch/issues/46647 and
    nelson-liu/pytorch-manylinux-binaries#13: K80 hosts stay on driver 470 / CUDA 11.4): the fix must be a
    cu118 build that still has sm_37 and a cuDNN that supports Kepler."""
    snap = machine(driver="470.57.02", driver_cuda="11.4", gpus=["Tesla K80:3.7"],
                   frameworks=[torch("2.1.2+cu121", cuda="12.1")], python="3.10.12")
    [f] = found(run(snap, mat), "ED200")
    assert f.severity == "error" and "sm_37" in f.message
    assert "$ pip install torch==2.1.2 --index-url https://download.pytorch.org/whl/cu118" in f.fix


def test_tensorflow_on_blackwell_fails_in_xla(mat):
    """https://github.com/tensorflow/tensorflow/issues/101746 (TF 2.20.0 on an RTX 5080, CUDA_ERROR_INVALID_PTX)
    and /111958 ("PTX version 8.5 does not support target 'sm_120'"): TF built with CUDA 12.5 for
    sm_60..sm_89 + compute_90 cannot generate code for sm_120."""
    caps = ["sm_60", "sm_70", "sm_80", "sm_89", "compute_90"]
    snap = machine(driver="581.29", driver_cuda="13.0", gpus=["NVIDIA GeForce RTX 5080 Laptop GPU:12.0"],
                   frameworks=[tensorflow("2.20.0", cuda="12.5.1", cudnn="9", caps=caps)], python="3.11.7")
    [f] = found(run(snap, mat), "ED200")
    assert f.severity == "error" and "tensorflow 2.20.0" in f.message and "compute_90" in f.message
    assert "12.5" in f.message


def test_cross_major_ptx_is_a_warning_when_the_toolkit_knows_the_gpu(mat):
    """TF 2.14 (CUDA 11.8; sm_35 ... sm_75, compute_80) on an H100: CUDA 11.8 knows sm_90, so kernels
    JIT from compute_80 ("could take 30 minutes or longer"), which works but slowly."""
    snap = machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA H100 80GB HBM3:9.0"],
                   frameworks=[tensorflow("2.14.0", cuda="11.8", cudnn="8")], python="3.11.7")
    [f] = found(run(snap, mat), "ED200")
    assert f.severity == "warning" and "compute_80" in f.message


def test_jax_cuda13_plugin_on_pascal(mat):
    """jax-cuda13-plugin needs compute capability >= 7.5 (CUDA 13 dropped sm_50-sm_72); the cuda12 plugin of
    the same jax release still serves a P100."""
    snap = machine(driver="580.95.05", driver_cuda="13.0", gpus=["Tesla P100-PCIE-16GB:6.0"],
                   frameworks=jax("0.10.2", plugin="jax-cuda13-plugin"), python="3.12.3")
    [f] = found(run(snap, mat), "ED200")
    assert f.severity == "error" and "7.5" in f.message and "jax-cuda13-plugin 0.10.2" in f.message
    assert "$ pip install 'jax[cuda12]==0.10.2'" in f.fix


def test_cuda_visible_devices_hides_the_incompatible_gpu(mat):
    base = dict(driver="570.86.15", driver_cuda="12.8",
                gpus=["Tesla V100-SXM2-16GB:7.0", "NVIDIA GeForce RTX 5090:12.0"],
                frameworks=[torch("2.6.0+cu124", cuda="12.4")], python="3.11.7")
    both = found(run(machine(**base), mat), "ED200")
    assert [f.subject for f in both] == ["torch 2.6.0+cu124 on GPU 1"] and both[0].severity == "error"
    # the fix covers both GPUs of the machine
    assert any("/cu128" in x for x in both[0].fix)
    hidden = machine(**base, gpu_env={"CUDA_VISIBLE_DEVICES": "0", "CUDA_DEVICE_ORDER": "PCI_BUS_ID"})
    assert not found(run(hidden, mat), "ED200")
    unsure = machine(**base, gpu_env={"CUDA_VISIBLE_DEVICES": "0"})  # fastest-first numbering: cannot tell
    assert [f.severity for f in found(run(unsure, mat), "ED200")] == ["warning"]


# --------------------------------------------------------------------------- ED210 Triton


def test_triton_on_pascal_is_a_warning(mat):
    """https://github.com/karpathy/nanoGPT/issues/157 (GTX 1080, torch 2.0): "Found NVIDIA GeForce GTX 1080
    which is too old to be supported by the triton GPU compiler ... Triton only supports devices of CUDA
    Capability >= 7.0, but your device is of CUDA capability 6.1"; see also pytorch/pytorch#93801."""
    snap = machine(driver="525.85.05", driver_cuda="12.0", gpus=["NVIDIA GeForce GTX 1080:6.1"],
                   frameworks=[torch("2.0.1+cu117", cuda="11.7")], packages={"triton": "2.0.0"},
                   python="3.10.12")
    fs = run(snap, mat)
    assert not found(fs, "ED200")  # sm_60 cubins run on 6.1: eager torch works
    [f] = found(fs, "ED210")
    assert f.severity == "warning" and "7.0" in f.message and "6.1" in f.message
    assert "torch 2.0.1+cu117" in f.message
    assert "$ export TORCH_COMPILE_DISABLE=1" in f.fix
    [row] = [e for e in f.evidence if e.fact == "Triton minimum compute capability"]
    assert row.value == "7.0" and "torch/_inductor" in row.source


@pytest.mark.parametrize("snap", [
    machine(driver="525.85.05", driver_cuda="12.0", gpus=["Tesla T4:7.5"],
            frameworks=[torch("2.0.1+cu117", cuda="11.7")]),
    machine(driver="470.57.02", driver_cuda="11.4", gpus=["NVIDIA GeForce GTX 1080:6.1"],
            frameworks=[torch("1.13.1+cu116", cuda="11.6")]),  # no torch.compile before 2.0
    machine(frameworks=[torch("2.4.1+cpu")]),
    machine(driver="525.85.05", driver_cuda="12.0", gpus=["Mystery GPU"],  # cc unknown, name not in the data
            frameworks=[torch("2.0.1+cu117", cuda="11.7")]),
])
def test_triton_silent_cases(snap, mat):
    assert not found(run(snap, mat), "ED210")


def test_triton_uses_the_name_table_when_the_probe_has_no_cc(mat):
    snap = machine(driver="525.85.05", driver_cuda="12.0", gpus=["NVIDIA GeForce GTX 1080"],
                   frameworks=[torch("2.0.1+cu117", cuda="11.7")])
    [f] = found(run(snap, mat), "ED210")
    assert f.severity == "warning" and "6.1" in f.message


# --------------------------------------------------------------------------- unknown facts


@pytest.mark.parametrize("snap", [
    machine(driver="570.86.15", driver_cuda="12.8", gpus=["Mystery GPU"],  # cc unknown
            frameworks=[torch("2.6.0+cu124", cuda="12.4")]),
    machine(driver="570.86.15", driver_cuda="12.8", gpus=["NVIDIA GeForce RTX 5090:12.0"],  # source build
            frameworks=[torch("2.10.0a0+gite67e3d9", cuda="13.0")]),
    machine(driver="610.10", driver_cuda="13.3", gpus=["Future GPU:13.0"],  # PTX of cu130 disputed in the data
            frameworks=[torch("2.11.0", cuda="13.0")]),
    machine(state="smi_failed", driver="570.86.15", gpus=["NVIDIA GeForce RTX 5090:12.0"],
            frameworks=[torch("2.6.0+cu124", cuda="12.4")]),
])
def test_unknown_facts_are_silent(snap, mat):
    assert not found(run(snap, mat), "ED200")


def test_unknown_caps_are_judged_from_the_builds_own_cuda(mat):
    """A TF whose caps no source states (2.2: its build_info lists none) says CUDA 10.1 in its build_info, which
    predates sm_120: it cannot generate code for an RTX 5090 (as TF 2.17's CUDA 12.3 could not:
    https://github.com/tensorflow/tensorflow/issues/111958), an error judged from the build itself."""
    snap = machine(driver="570.86.15", driver_cuda="12.8", gpus=["NVIDIA GeForce RTX 5090:12.0"],
                   frameworks=[tensorflow("2.2.0", cuda="10.1", cudnn="7")])
    [f] = found(run(snap, mat), "ED200")
    assert f.severity == "error" and "Judged from the build itself" in f.message
