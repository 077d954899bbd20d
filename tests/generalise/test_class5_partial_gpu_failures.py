"""Class 5: partial device failures are judged. A machine whose driver still answers for some GPUs while
another fails (NVML lists fewer GPUs than /proc, "Unknown Error" / "GPU is lost" for one GPU, nvidia-smi printing
only "Unable to determine the device handle ...") gets ED018 on the GPUs line, never a ✓. Real nvidia-smi outputs
are in tests/fixtures/nvidia (SOURCES.toml)."""
from __future__ import annotations

import pytest

from envdoctor.snapshot import Snapshot
from tests.generalise.common import _own_cache, by_id, check, check_text  # noqa: F401
from tests.test_probe_nvidia import FIX, ctx_for, fake_smi, make_pynvml, nvml_ctx, proc_root, run_probe, smi_script

L4 = {"name": "NVIDIA L4", "cc": [8, 9], "mem": 24152899584, "bus": "00000000:70:00.0",
      "uuid": "GPU-3291dfa4-fcc4-0110-615b-c894a0d7c689"}


def _with_frameworks(snap: Snapshot) -> Snapshot:
    from tests import snapfactory as sf

    snap.python = sf.machine(frameworks=[sf.torch("2.4.1+cu121", cuda="12.1")]).python
    return snap


def _nvml_machine(tmp_path, monkeypatch, error_text: str) -> Snapshot:
    """/proc lists two GPUs; NVML's handle for the second one raises `error_text` (pynvml's str of the error)."""
    root = proc_root(tmp_path, "proc_version_565.57.01_open.txt",
                     infos=("proc_gpu_information_l4.txt", "proc_gpu_information_gtx650.txt"))
    fake = make_pynvml(tmp_path, driver="565.57.01", cuda=12070, devices=[L4, L4], handle_error=(1, error_text))
    return run_probe(nvml_ctx(tmp_path, monkeypatch, fake, root=root))


@pytest.mark.parametrize("error_text,url", [
    ("Unknown Error", "https://github.com/NVIDIA/open-gpu-kernel-modules/issues/387"),
    ("GPU is lost", "https://github.com/rossumai/nvgpu/issues/6"),
])
def test_nvml_answers_for_one_gpu_of_two(tmp_path, monkeypatch, capsys, error_text, url):
    """open-gpu-kernel-modules#387 (GPU 1 of 4 fell off the bus, "Unknown Error") and rossumai/nvgpu#6
    (nvmlDeviceGetHandleByIndex raises NVMLError_GpuIsLost "GPU is lost"): the driver answers, one GPU does not."""
    snap = _with_frameworks(_nvml_machine(tmp_path, monkeypatch, error_text))
    assert snap.driver.state == "ok" and len(snap.gpus) == 1, (url, snap.driver)
    [f] = by_id(check(snap, ["ED0"]), "ED018")
    assert f.severity == "error" and f.area == "gpu"
    assert "lists 1 GPU but /proc/driver/nvidia/gpus lists 2 GPUs" in f.message
    assert error_text in f.message and f.fix
    # the lost GPU by the bus id /proc/driver/nvidia/gpus holds for it (the GTX 650 fixture's 0000:04:00.0), in
    # the message and in the reset command; the GPU that answers kept by its UUID
    assert "GPU 0000:04:00.0 failed" in f.message, f.message
    assert "$ sudo nvidia-smi -r -i 0000:04:00.0" in f.fix
    assert f"$ export CUDA_VISIBLE_DEVICES={L4['uuid']}" in " ".join(f.fix)
    rc, text = check_text(snap, tmp_path, capsys)
    gpus_line = next(x for x in text.splitlines() if x.startswith("[") and "GPUs" in x)
    assert gpus_line.startswith("[✗] GPUs"), text
    assert rc == 1


@pytest.mark.parametrize("fixture", ["fail_device_handle_unknown_error.txt", "fail_device_handle_gpu_is_lost.txt"])
def test_nvidia_smi_prints_only_the_device_handle_error(tmp_path, capsys, fixture):
    """The real nvidia-smi outputs of https://github.com/NVIDIA/open-gpu-kernel-modules/issues/387 and
    https://github.com/JosephKJ/OWOD/issues/81 on a machine whose kernel module still lists its GPUs: ED016 says
    nvidia-smi fails and ED018 names the GPU on the GPUs line (not ✓)."""
    root = proc_root(tmp_path, "proc_version_565.57.01_open.txt",
                     infos=("proc_gpu_information_l4.txt", "proc_gpu_information_gtx650.txt"))
    fake_smi(tmp_path / "bin", f'cat "{FIX / fixture}"; exit 255')
    snap = _with_frameworks(run_probe(ctx_for(root, tmp_path / "bin")))
    found = check(snap, ["ED0"])
    [f] = by_id(found, "ED018")
    bus = "0000:0B:00.0" if "unknown" in fixture else "0000:02:00.0"
    assert f.severity == "error" and bus in f.message
    assert f"$ sudo nvidia-smi -r -i {bus}" in f.fix  # named as nvidia-smi wrote it
    rc, text = check_text(snap, tmp_path, capsys)
    gpus_line = next(x for x in text.splitlines() if x.startswith("[") and "GPUs" in x)
    assert not gpus_line.startswith("[✓]"), text


def test_a_healthy_two_gpu_machine_has_no_partial_failure(tmp_path):
    """Counterpart: the real 2x A100 nvidia-smi output (580.126.09) with nothing failing."""
    fake_smi(tmp_path / "bin", smi_script(FIX / "smi_580.126.09_2x_a100.txt"))
    snap = run_probe(ctx_for(tmp_path / "root", tmp_path / "bin"))
    assert len(snap.gpus) == 2
    assert not by_id(check(snap, ["ED0"]), "ED018")
