"""Class 6: severity follows consequence. A finding whose own rationale says the framework refuses to start
is an error; a failed fix look-up never suppresses a finding or leaves it without a fix line."""
from __future__ import annotations

import pytest

from envdoctor.snapshot import Cudnn, Evidence, Framework
from tests import snapfactory as sf
from tests.generalise.common import _own_cache, by_id, check, check_cli, jax_with  # noqa: F401

LIBDIR = "/usr/lib/x86_64-linux-gnu"


def _syscudnn(version):
    return Cudnn(version=version, kind="library", path=f"{LIBDIR}/libcudnn.so.{version}",
                 evidence=[Evidence(f"file:{LIBDIR}/libcudnn.so.{version}", f"libcudnn.so.{version}")])


def _jax_15268():
    """https://github.com/jax-ml/jax/issues/15268 : jaxlib 0.4.7+cuda11.cudnn86 with an older cuDNN 8.5 on the
    machine: "Loaded runtime CuDNN library: 8.5.0 but source was compiled with: 8.6.0" and no GPU."""
    return sf.machine(driver="525.85.12", driver_cuda="12.0", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                      frameworks=jax_with("0.4.7", "0.4.7+cuda11.cudnn86"), cudnn=[_syscudnn("8.5.0")],
                      python="3.9.16")


def _tf_60913():
    """https://github.com/tensorflow/tensorflow/issues/60913 : TF 2.12 (built with cuDNN 8.6) loading a system
    cuDNN 8.5: "Loaded runtime CuDNN library: 8.5.0 but source was compiled with: 8.6.0"."""
    return sf.machine(driver="530.30.02", driver_cuda="12.1", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                      frameworks=[sf.tensorflow("2.12.0", cuda="11.8", cudnn="8")], cudnn=[_syscudnn("8.5.0")],
                      python="3.10.6")


def _jax_6517():
    """https://github.com/jax-ml/jax/issues/6517 : jaxlib 0.1.65+cuda112 with cuDNN 8.0.5 ("Loaded runtime CuDNN
    library: 8.0.5 but source was compiled with: 8.1.0"). Its label names no cuDNN; the jaxlib row of its series
    does (jax's build/install_cuda.sh at jaxlib-v0.1.65: cuDNN 8.1.0.77 for CUDA 11.2)."""
    return sf.machine(driver="460.32.03", driver_cuda="11.2", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                      frameworks=jax_with("0.2.12", "0.1.65+cuda112"), cudnn=[_syscudnn("8.0.5")], python="3.8.10")


@pytest.mark.parametrize("make", [_jax_15268, _tf_60913])
def test_a_cudnn_older_than_the_build_is_an_error(make, tmp_path, capsys):
    rc, report = check_cli(make(), tmp_path, capsys, cwd=tmp_path)
    ed300 = [f for f in report["findings"] if f["id"] == "ED300"]
    assert [f["severity"] for f in ed300] == ["error"], report["findings"]
    assert "refuses" in ed300[0]["message"] and rc == 1
    assert ed300[0]["fix"]


def test_jaxlib_0_1_65_refuses_an_older_cudnn_as_the_report_says():
    found = check(_jax_6517(), ["ED300", "ED902"])
    ed300 = by_id(found, "ED300")
    assert [f.severity for f in ed300] == ["error"] and "8.1" in ed300[0].message and "8.0.5" in ed300[0].message
    assert not by_id(found, "ED902"), [f.message for f in found]


def test_torchvision_0_15_with_another_cuda_minor_refuses_to_load():
    """https://github.com/nolanaatama/sd-1click-colab/issues/30 : torch 1.13.1+cu117 with torchvision 0.15.1+cu118:
    "Detected that PyTorch and torchvision were compiled with different CUDA versions. PyTorch has CUDA
    Version=11.7 and torchvision has CUDA Version=11.8" at import: an error."""
    tv = Framework("torchvision", "torchvision", "0.15.1+cu118", build="cuda", cuda_version="11.8",
                   requires=["torch==2.0.0"])
    snap = sf.machine(driver="525.85.12", driver_cuda="12.0", gpus=["Tesla T4:7.5"],
                      frameworks=[sf.torch("1.13.1+cu117", cuda="11.7"), tv], python="3.9.16")
    found = by_id(check(snap, ["ED520"]), "ED520")
    assert "error" in [f.severity for f in found], [(f.severity, f.message) for f in found]


def test_a_newer_torchvision_with_another_cuda_minor_stays_a_warning():
    """Counterpart: torchvision 0.16+ accepts a CUDA minor difference (it compares majors only)."""
    tv = Framework("torchvision", "torchvision", "0.19.1+cu121", build="cuda", cuda_version="12.1")
    snap = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["Tesla T4:7.5"],
                      frameworks=[sf.torch("2.4.1+cu124", cuda="12.4"), tv], python="3.10.12")
    sev = [f.severity for f in by_id(check(snap, ["ED520"]), "ED520") if "CUDA 12.1" in f.message]
    assert sev and "error" not in sev


def test_a_failed_fix_lookup_keeps_the_finding_and_says_no_fix_is_known():
    """jax with no CUDA plugin on a GPU whose driver (450) is below every plugin's floor: the plugin look-up finds
    nothing, and ED400 still stands (it used to be dropped) with a "No fix known" line."""
    snap = sf.machine(driver="450.80.02", driver_cuda="11.0", gpus=["NVIDIA A100-SXM4-40GB:8.0"],
                      frameworks=sf.jax("0.4.26"))
    found = by_id(check(snap, ["ED400"]), "ED400")
    assert len(found) == 1 and any(x.startswith("No fix known") for x in found[0].fix)


def test_every_problem_finding_has_a_fix_line():
    """Across the class-6 machines, every error and warning carries at least one fix line."""
    for make in (_jax_15268, _tf_60913, _jax_6517):
        for f in check(make(), ["ED"]):
            if f.severity in ("error", "warning"):
                assert f.fix, (f.id, f.message)


def test_no_finding_that_says_refuses_is_below_error():
    """The audit as a test: on these real machines no finding states a refusal to start and is graded lower."""
    for make in (_jax_15268, _tf_60913):
        for f in check(make(), ["ED"]):
            if "refuses" in f.message and "older ones" not in f.message:
                assert f.severity == "error", (f.id, f.severity, f.message)
