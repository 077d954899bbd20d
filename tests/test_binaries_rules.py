"""ED250 / ED251 / ED650 on snapshots, and NVIDIA's compatibility rules as the data states them."""
from __future__ import annotations

import pytest

from envdoctor.binaries.compat import judge, load_facts, runs
from envdoctor.snapshot import CudaBinary, LinkedLibrary
from tests.rules.helpers import by_id, check
from tests.snapfactory import machine

RULES = ("ED250", "ED251", "ED650")


def _bin(sass=(), ptx=(), isa="9.0", package="flash-attn", version="2.7.4", path=None, libs=()):
    return CudaBinary(path=path or f"/venv/site-packages/{package}/_C.so", package=package, package_version=version,
                      sass=list(sass), ptx=list(ptx), ptx_isa={t: isa for t in ptx}, libraries=list(libs))


def _snap(gpus, binaries, driver_cuda="13.0", driver="580.126.09"):
    snap = machine(driver=driver, driver_cuda=driver_cuda, gpus=gpus)
    snap.binaries.binaries = list(binaries)
    return snap


@pytest.mark.parametrize("target, cc, expected", [
    ("sm_80", (8, 0), True), ("sm_80", (8, 6), True), ("sm_80", (7, 5), False), ("sm_80", (9, 0), False),
    ("sm_90a", (9, 0), True), ("sm_100a", (10, 3), False),
    ("sm_100f", (10, 0), True), ("sm_100f", (10, 3), True), ("sm_100f", (11, 0), False), ("sm_100f", (12, 0), False),
    ("compute_75", (7, 5), True), ("compute_75", (12, 0), True), ("compute_80", (7, 5), False),
    ("compute_90a", (9, 0), True), ("compute_90a", (10, 0), False),
    ("compute_100f", (10, 3), True), ("compute_100f", (12, 0), False),
])
def test_rules_from_the_data(target, cc, expected):
    assert runs(target, cc) is expected


def test_every_rule_row_and_ptx_row_cites_nvidia():
    facts = load_facts()
    assert len(facts.runs_on) == 6 and facts.ptx_cuda["9.0"] == "13.0" and facts.ptx_cuda["8.8"] == "12.9"
    assert all(src.startswith("https://docs.nvidia.com/") for src in facts.sources.values())


def test_ptx_newer_than_the_driver_does_not_count():
    v = judge(["sm_80"], ["compute_75"], {"compute_75": "9.0"}, (7, 5), "12.4")
    assert (v.kind, v.too_new_ptx) == ("none", ["compute_75"])


def test_no_kernel_names_package_files_and_archs():
    snap = _snap(["Tesla T4:7.5"], [_bin(["sm_80", "sm_90"])])
    [f] = by_id(check(snap, RULES), "ED250")
    assert f.severity == "error"
    assert "flash-attn 2.7.4" in f.message and "sm_80, sm_90 (no PTX)" in f.message and "7.5" in f.message
    assert "/venv/site-packages/flash-attn/_C.so" in f.message


def test_one_file_with_a_kernel_is_enough_for_the_package():
    snap = _snap(["Tesla T4:7.5"], [_bin(["sm_90a"], path="/v/a.so"), _bin(["sm_75"], path="/v/b.so")])
    assert check(snap, RULES) == []


def test_ptx_too_new_for_the_driver_is_an_error_saying_so():
    snap = _snap(["Tesla T4:7.5"], [_bin(["sm_80"], ["compute_75"])], driver_cuda="12.4", driver="550.54.15")
    [f] = by_id(check(snap, RULES), "ED250")
    assert "newer than this driver (CUDA 12.4)" in f.message
    assert f.fix[0].startswith("Upgrade the NVIDIA driver"), f.fix
    assert f.fix[1].startswith("Or install a build of"), f.fix


def test_jit_warning_with_the_driver_floor():
    snap = _snap(["NVIDIA GeForce RTX 5090:12.0"], [_bin(["sm_80", "sm_90"], ["compute_90"], isa="8.8")])
    [f] = by_id(check(snap, RULES), "ED251")
    assert f.severity == "warning" and "compute_90" in f.message and "CUDA >= 12.9" in f.message
    assert by_id(check(snap, RULES), "ED250") == []


def test_each_gpu_of_a_mixed_machine_is_judged():
    snap = _snap(["NVIDIA A100-SXM4-80GB:8.0", "Tesla T4:7.5"], [_bin(["sm_80"])])
    found = check(snap, RULES)
    assert [(f.id, "7.5" in f.message) for f in found] == [("ED250", True)]


def test_arch_specific_only_build_on_another_gpu_of_that_major():
    snap = _snap(["NVIDIA H20:9.0", "NVIDIA B200:10.0"], [_bin(["sm_90a"], package="flashmla")])
    [f] = by_id(check(snap, RULES), "ED250")
    assert "10.0" in f.message and "sm_90a" in f.message


def test_no_gpu_no_arch_finding():
    snap = _snap([], [_bin(["sm_80"])])
    assert by_id(check(snap, RULES), "ED250") == []


def test_missing_library_names_file_and_soname():
    libs = [LinkedLibrary("libcudart.so.12", "/usr/lib/libcudart.so.12", "ld.so.cache"),
            LinkedLibrary("libcudnn.so.8", None, "not found", searched=["/venv/nvidia/cudnn/lib", "ld.so.cache"])]
    snap = _snap(["NVIDIA A10:8.6"], [_bin(["sm_86"], libs=libs)])
    [f] = check(snap, RULES)
    assert (f.id, f.severity) == ("ED650", "error")
    assert "libcudnn.so.8" in f.message and "/venv/site-packages/flash-attn/_C.so" in f.message
    assert "libcudart" not in f.message


def test_driver_library_missing_without_a_driver_is_left_to_the_driver_rules():
    libs = [LinkedLibrary("libcuda.so.1", None, "not found")]
    snap = _snap([], [_bin(["sm_86"], libs=libs)], driver=None, driver_cuda=None)
    assert by_id(check(snap, RULES), "ED650") == []


# NVIDIA's own libraries: their CUDA release decides, not their fatbin section. The shapes are the real wheels'
# (matrices/ptx_isa.toml, [[outside_fatbin]]): nvidia-cufft 12.2.0.57 (CUDA 13) carries one sm_75 cubin in a
# 672-byte .nv_fatbin, nvidia-cufft-cu12 11.4.1.4 one sm_52 cubin; their kernels lie in .ldata.
CUFFT13 = dict(sass=["sm_75"], package="nvidia-cufft", version="12.2.0.57",
               path="/venv/site-packages/nvidia/cu13/lib/libcufft.so.12")
CUFFT12 = dict(sass=["sm_52"], package="nvidia-cufft-cu12", version="11.4.1.4",
               path="/venv/site-packages/nvidia/cufft/lib/libcufft.so.11")


@pytest.mark.parametrize("shape", [CUFFT13, CUFFT12])
def test_a_stub_fatbin_of_nvidias_own_library_is_no_evidence_of_no_kernel(shape):
    snap = _snap(["NVIDIA A100-SXM4-80GB:8.0"], [_bin(**shape)])
    assert check(snap, RULES) == []


def test_nvidias_libraries_on_a_gpu_their_cuda_line_dropped_are_one_finding():
    libs = [_bin(**CUFFT13), _bin(["sm_75", "sm_120"], package="nvidia-cublas", version="13.4.1.3",
                                  path="/venv/site-packages/nvidia/cu13/lib/libcublas.so.13")]
    [f] = check(_snap(["NVIDIA GeForce GTX 1080:6.1"], libs), RULES)
    assert f.id == "ED250" and "CUDA 13 libraries" in f.message and "nvidia-cublas 13.4.1.3" in f.message
    assert "nvidia-cufft 12.2.0.57" in f.message and f.cause == "cuda-line-cc:13:6.1"
    # the CUDA 12 line still targets sm_61: served
    assert check(_snap(["NVIDIA GeForce GTX 1080:6.1"], [_bin(**CUFFT12)]), RULES) == []


def test_an_extension_is_still_judged_by_its_fatbin():
    snap = _snap(["NVIDIA GeForce GTX 1080:6.1"], [_bin(["sm_75", "sm_80"], package="xformers", version="0.0.35")])
    [f] = check(snap, RULES)
    assert f.id == "ED250" and "xformers 0.0.35" in f.message


def test_an_extension_needing_another_cuda_runtime_than_its_framework_says_so():
    from tests.snapfactory import torch

    libs = [LinkedLibrary("libc10.so", "/venv/site-packages/torch/lib/libc10.so", "already loaded",
                          "torch 2.15.0", loaded_by="torch 2.15.0"),
            LinkedLibrary("libcudart.so.12", None, "not found", searched=["/usr/lib"])]
    snap = _snap(["NVIDIA A100-SXM4-80GB:8.0"], [_bin(["sm_80"], package="xformers", version="0.0.35", libs=libs)])
    snap.python.frameworks = [torch("2.15.0", cuda="13.2")]
    [f] = check(snap, RULES)
    assert f.id == "ED650" and "libcudart.so.12" in f.message and "libc10.so" not in f.message
    assert "built for CUDA 12" in f.message and "CUDA 13 build" in f.message
    assert any("already loaded by torch 2.15.0" in e.value for e in f.evidence)


def test_a_cuda_line_that_dropped_the_gpu_is_said_once_with_its_consequences_folded():
    """torch's CUDA 13 build on a GTX 1080 (sm_61, which CUDA 13 dropped): ED200 is the cause; torch's own
    binaries and the CUDA 13 nvidia-* libraries it brings are its consequences, not errors of their own."""
    from tests.snapfactory import torch

    libs = [_bin(**CUFFT13), _bin(["sm_75", "sm_120"], package="nvidia-cublas", version="13.4.1.3",
                                  path="/venv/site-packages/nvidia/cu13/lib/libcublas.so.13"),
            _bin(["sm_75", "sm_80", "sm_90", "sm_100", "sm_120"], package="torch", version="2.9.0",
                 path="/venv/site-packages/torch/lib/libtorch_cuda.so")]
    snap = _snap(["NVIDIA GeForce GTX 1080:6.1"], libs)
    snap.python.frameworks = [torch("2.9.0", cuda="13.0")]
    found = check(snap, ("ED200",) + RULES)
    assert [f.id for f in found] == ["ED200"], [(f.id, f.message[:80]) for f in found]
    assert len(found[0].consequences) == 2


def _variant(tag, found):
    lib = LinkedLibrary(f"libcudart.so.{tag[:2]}", "/venv/nvidia/lib/libcudart.so" if found else None,
                        "RUNPATH" if found else "not found")
    return _bin(["sm_80"], package="bitsandbytes", version="0.49.1", libs=[lib],
                path=f"/venv/site-packages/bitsandbytes/libbitsandbytes_cuda{tag}.so")


def test_per_cuda_builds_of_one_library_need_only_one_that_loads():
    """bitsandbytes ships libbitsandbytes_cuda118.so ... _cuda132.so and dlopens the one for torch's CUDA (its
    real install: tests/fixtures/realwheels/torch-bitsandbytes.json, imported fine): the others' missing CUDA 11
    and 12 runtimes are no error; when none of them can load, it is one."""
    snap = _snap(["NVIDIA A100-SXM4-80GB:8.0"], [_variant("118", False), _variant("121", False), _variant("130", True)])
    assert check(snap, RULES) == []
    snap = _snap(["NVIDIA A100-SXM4-80GB:8.0"], [_variant("118", False), _variant("121", False)])
    assert {f.id for f in check(snap, RULES)} == {"ED650"}
