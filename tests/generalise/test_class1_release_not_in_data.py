"""Class 1: a release older than (or absent from) the data is judged from what the build states about
itself, and what cannot be judged is an explicit finding (ED902) whose framework line is never ✓."""
from __future__ import annotations

from tests import snapfactory as sf
from tests.generalise.common import _own_cache, by_id, check, check_cli, check_text, jax_with, serious  # noqa: F401


def _k40m_torch13():
    return sf.machine(driver="418.87.01", driver_cuda="10.1", gpus=["Tesla K40m:3.5"],
                      frameworks=[sf.torch("1.3.0", cuda="10.1")], python="3.7.5")


def test_torch_1_3_on_a_k40m_is_not_a_silent_pass(tmp_path, capsys):
    """https://github.com/pytorch/pytorch/issues/30532 : torch 1.3 (CUDA 10.1) on a Tesla K40m; torch.cuda.is_available()
    is True and the first kernel fails (the 1.3.1 binaries start at sm_37 / compute_37). The data's torch 1.3 row judges
    the arch: as its list is marked presumed (1.3.0 was still built with sm_35), a warning, and the PyTorch line is not
    ✓; there is nothing left for ED902 to name."""
    rc, report = check_cli(_k40m_torch13(), tmp_path, capsys)
    assert not [f for f in report["findings"] if f["id"] == "ED902"], report["findings"]
    ed200 = [f for f in report["findings"] if f["id"] == "ED200"]
    assert [f["severity"] for f in ed200] == ["warning"], report["findings"]
    assert "sm_37" in ed200[0]["message"] and "presumed" in ed200[0]["message"]
    rc, text = check_text(_k40m_torch13(), tmp_path, capsys)
    line = next(x for x in text.splitlines() if "PyTorch" in x and x.startswith("["))
    assert line.startswith("[!] PyTorch"), text
    assert "No issues found" not in text


def test_torch_1_8_cu101_on_an_rtx_3090_is_judged_from_its_arch_list():
    """https://github.com/mit-han-lab/bevfusion/issues/283 : torch==1.8.1+cu101 on an RTX 3090 (sm_86), "CUDA
    error: no kernel image". The data's torch 1.8 cu101 row (pytorch/builder: sm_37 sm_50 sm_60 sm_70, no PTX) has no
    kernel for sm_86: an error, with a fix that installs a build that has one."""
    snap = sf.machine(driver="460.32.03", driver_cuda="11.2", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                      frameworks=[sf.torch("1.8.1+cu101", cuda="10.1")], python="3.8.10")
    found = check(snap, ["ED200", "ED902"])
    ed200 = by_id(found, "ED200")
    assert [f.severity for f in ed200] == ["error"], [f.message for f in found]
    assert "sm_37" in ed200[0].message and "sm_70" in ed200[0].message
    assert "pip install torch==" in " ".join(ed200[0].fix)
    assert not by_id(found, "ED902")


def test_a_cuda_12_build_on_kepler_is_an_error_without_any_release_row():
    """https://github.com/pytorch/pytorch/pull/101187 ("Kepler ... is no longer supported by CUDA 12") and
    https://github.com/googlecolab/colabtools/issues/2377 (a K80 under CUDA 11.1+ gets "no kernel image"): a torch
    source build (2.1.0a0+git..., no row, no arch list) stating CUDA 12.1 on a Tesla K80 (sm_37) cannot run: CUDA
    12 emits no sm_37 code at all, not even PTX."""
    snap = sf.machine(driver="470.256.02", driver_cuda="11.4", gpus=["Tesla K80:3.7"],
                      frameworks=[sf.torch("2.1.0a0+git7bcf7da", cuda="12.1")], python="3.10.12")
    ed200 = by_id(check(snap, ["ED200"]), "ED200")
    assert [f.severity for f in ed200] == ["error"]
    assert "cannot run torch 2.1.0a0+git7bcf7da" in ed200[0].message


def test_the_same_torch_on_a_gpu_its_cuda_targets_gets_no_arch_error():
    """Counterpart: torch 1.8.1+cu101 on a V100 (sm_70, in its arch list): no ED200 and no ED902."""
    snap = sf.machine(driver="460.32.03", driver_cuda="11.2", gpus=["Tesla V100-SXM2-16GB:7.0"],
                      frameworks=[sf.torch("1.8.1+cu101", cuda="10.1")], python="3.8.10")
    found = check(snap, ["ED200", "ED902"])
    assert not by_id(found, "ED200") and not by_id(found, "ED902")


def test_jax_0_4_9_on_a_k80_is_judged_from_the_jaxlib_row():
    """https://github.com/jax-ml/jax/issues/15961 : jax 0.4.9 / jaxlib 0.4.9+cuda11.cudnn86 on a Tesla K80 with
    driver 470.182.03 (reports CUDA 11.8 in the container). jaxlib no longer supports Kepler (jax-ml/jax#14411): the
    data's jaxlib 0.4.4-0.4.11 row (.bazelrc sm_52 and up) says so, an ED200 error on the K80, and nothing is left for
    ED902 to name."""
    snap = sf.machine(driver="470.182.03", driver_cuda="11.8", gpus=["Tesla K80:3.7"],
                      frameworks=jax_with("0.4.9", "0.4.9+cuda11.cudnn86"), python="3.8.10")
    found = check(snap, ["ED902", "ED200"])
    assert not by_id(found, "ED902"), [f.message for f in found]
    ed200 = by_id(found, "ED200")
    assert [f.severity for f in ed200] == ["error"] and "sm_52" in ed200[0].message


def test_jaxlib_0_1_with_no_cudnn_label_says_cudnn_was_not_judged():
    """https://github.com/jax-ml/jax/issues/5464 : jaxlib 0.1.55+cuda110 with only cuDNN 7 on the machine
    ("Could not load dynamic library 'libcudnn.so.8'"). The label names no cuDNN: ED902 says the cuDNN it
    needs was not judged, instead of a silent ✓."""
    snap = sf.machine(driver="450.80.02", driver_cuda="11.0", gpus=["NVIDIA GeForce GTX 1080 Ti:6.1"],
                      frameworks=jax_with("0.2.7", "0.1.55+cuda110"), python="3.8.10")
    f = by_id(check(snap, ["ED902"]), "ED902")
    assert len(f) == 1 and "the cuDNN it needs" in f[0].message


def test_releases_the_data_knows_and_cpu_builds_raise_nothing():
    """Healthy counterparts: a known release (torch 2.4.1+cu121 on an A100), and an old CPU-only torch on a CPU
    laptop (nothing there needs the data)."""
    known = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                       frameworks=[sf.torch("2.4.1+cu121", cuda="12.1")])
    laptop = sf.machine(frameworks=[sf.torch("1.3.0")], python="3.7.5")
    for snap in (known, laptop):
        assert not by_id(check(snap, ["ED902", "ED200"]), "ED902")
    assert not serious(check(laptop, ["ED"]))


def test_a_cuda_build_of_a_known_release_without_its_row_is_named_not_passed(tmp_path, capsys):
    """torch 1.9.0+cu113, a CUDA label the data's torch 1.9 rows do not hold (they hold the builds whose arch lists a
    source states): its arch list is unknown, so the PyTorch line is not ✓ and ED902 names the release's known
    builds; a labelled build the data does hold (+cu111) gets no ED902."""
    def snap(label, cuda):
        return sf.machine(driver="470.82.01", driver_cuda="11.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                          frameworks=[sf.torch(f"1.9.0+{label}", cuda=cuda)], python="3.8.10")

    rc, report = check_cli(snap("cu113", "11.3"), tmp_path, capsys)
    [ed902] = [f for f in report["findings"] if f["id"] == "ED902"]
    assert ed902["severity"] == "warning" and "no row for" in ed902["message"], ed902
    assert "cu111" in ed902["message"] and "its compiled GPU arch list" in ed902["message"]
    rc, text = check_text(snap("cu113", "11.3"), tmp_path, capsys)
    assert "No issues found" not in text and "[!] PyTorch" in text, text
    rc, report = check_cli(snap("cu111", "11.1"), tmp_path, capsys)
    assert not [f for f in report["findings"] if f["id"] == "ED902"], report["findings"]
