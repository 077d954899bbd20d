"""ED010-ED022 (envdoctor/rules/machine.py): WSL, the driver's health, and CUDA_VISIBLE_DEVICES.

Each rule has a case modelled on a real report (URL in the docstring, its versions in the snapshot), a
healthy counterpart, and a case where the fact is unknown. Raw messages come from tests/fixtures/machine.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.rules.machine import resolve_visible_devices
from envdoctor.snapshot import GPU, Evidence, Library, ProbeStatus
from tests.rules.helpers import by_id, serious  # noqa: F401
from tests.rules.helpers import check as _check
from tests.snapfactory import machine, tensorflow, torch

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "machine"
MINE = ["ED01", "ED02"]


def lines(name):
    return [ln for ln in (FIX / name).read_text().splitlines() if ln.strip()]


def proc_module_version(name):
    m = re.search(r"Kernel Module\s+([0-9.]+)", (FIX / name).read_text())
    return m.group(1)


def check(snap, only=MINE):
    return _check(snap, only)


def ran_nvidia(snap):
    snap.probes = [ProbeStatus("nvidia", "ok"), ProbeStatus("platform", "ok")]
    return snap


# -- WSL ----------------------------------------------------------------------------------------------
def test_wsl1_with_cuda_framework_is_an_error():
    """https://github.com/microsoft/WSL/issues/1788 - tensorflow with GPU under WSL 1 (2017: tensorflow-gpu 1.0.1, CUDA 8.0)."""
    snap = machine(wsl=1, frameworks=[tensorflow("1.0.1", cuda="8.0", cudnn="5.1", dist="tensorflow-gpu")])
    fs = check(snap)
    f = by_id(fs, "ED010")[0]
    assert f.severity == "error"
    assert "tensorflow 1.0.1" in f.message and "WSL 1" in f.message
    assert any("--set-version" in s and s.endswith(" 2") for s in f.fix)


def test_wsl1_cpu_only_is_info_only():
    snap = machine(wsl=1, frameworks=[torch("2.1.2+cpu")])
    fs = check(snap)
    assert [f.severity for f in by_id(fs, "ED010")] == ["info"]
    assert serious(fs) == []


def test_linux_driver_in_wsl_is_the_one_error_and_folds_its_symptoms():
    """https://github.com/microsoft/WSL/issues/12272 (driver installed in WSL by mistake) with the nvidia-smi
    failure of https://github.com/microsoft/WSL/issues/7716 (Ubuntu 20.04, WSL 2)."""
    snap = ran_nvidia(machine(wsl=2, state="module_not_loaded", frameworks=[torch("2.1.2+cu121", cuda="12.1")]))
    snap.platform.distro_version = "20.04"
    snap.driver.linux_driver_in_wsl = True
    snap.driver.wsl_libcuda = "/usr/lib/wsl/lib/libcuda.so.1"
    snap.driver.nvidia_smi = "failed"
    snap.driver.messages = lines("smi_couldnt_communicate_wsl_7716.txt")
    snap.loader.libraries = [
        Library("libcuda", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "1", "ldconfig"),
        Library("libcuda", "/usr/lib/wsl/lib/libcuda.so.1", "1", "ldconfig"),
    ]
    fs = check(snap)
    errors = [f for f in fs if f.severity == "error"]
    assert [f.id for f in errors] == ["ED011"]
    head = errors[0]
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.1" in head.message
    assert "$ sudo apt-get remove --purge '^nvidia-.*'" in head.fix
    assert any("cuda-toolkit" in s for s in head.fix)
    folded = " ".join(head.consequences)
    assert "ED012" in folded and "ED016" in folded
    assert by_id(fs, "ED014") == []  # modprobe advice is wrong inside WSL


def test_wsl2_without_libcuda_but_with_nvidia_driver_is_an_error():
    """https://github.com/microsoft/WSL/issues/11589 - nvidia-smi 545.46 (Windows driver 546.80) in WSL 2 reports
    'CUDA Version: ERR!': here modelled as no libcuda under /usr/lib/wsl/lib."""
    snap = ran_nvidia(machine(driver="546.80", wsl=2, gpus=["NVIDIA GeForce RTX 3060 Laptop GPU:8.6"],
                              frameworks=[torch("2.3.0+cu121", cuda="12.1")]))
    fs = check(snap)
    f = by_id(fs, "ED012")[0]
    assert f.severity == "error"
    assert "$ wsl.exe --update" in f.fix
    assert any("ld.wsl.conf" in s for s in f.fix)


def test_wsl2_without_libcuda_and_no_nvidia_evidence_is_only_info():
    """https://github.com/microsoft/WSL/issues/5604 - libcuda vanished from /usr/lib/wsl/lib (Windows driver 451.67);
    nothing else in WSL proves an NVIDIA GPU, so only an info (an AMD laptop looks the same)."""
    snap = ran_nvidia(machine(wsl=2, frameworks=[torch("1.5.1+cu101", cuda="10.1")]))
    fs = check(snap)
    assert [f.severity for f in by_id(fs, "ED012")] == ["info"]
    assert serious(fs) == []


def test_wsl2_libcuda_shadowed_by_ld_library_path():
    """https://github.com/microsoft/WSL/issues/9099 - `export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:/usr/lib/x86_64-linux-gnu`
    made nvidia-smi fail in WSL 2 until the variable was removed."""
    snap = ran_nvidia(machine(driver="531.41", wsl=2, gpus=["NVIDIA GeForce RTX 3080:8.6"],
                              ld_library_path=["/usr/local/cuda-12.1/lib64", "/usr/lib/x86_64-linux-gnu"]))
    snap.driver.wsl_libcuda = "/usr/lib/wsl/lib/libcuda.so.1"
    snap.loader.libraries = [
        Library("libcuda", "/usr/lib/x86_64-linux-gnu/libcuda.so.1", "1", "LD_LIBRARY_PATH"),
        Library("libcuda", "/usr/lib/wsl/lib/libcuda.so.1", "1", "ldconfig"),
    ]
    f = by_id(check(snap), "ED012")[0]
    assert f.severity == "error"
    assert "/usr/lib/x86_64-linux-gnu/libcuda.so.1" in f.message
    assert "$ export LD_LIBRARY_PATH=/usr/local/cuda-12.1/lib64" in f.fix


def test_healthy_wsl2_is_silent():
    snap = ran_nvidia(machine(driver="555.99", driver_cuda="12.5", wsl=2, gpus=["NVIDIA GeForce RTX 4070:8.9"],
                              frameworks=[torch("2.3.0+cu121", cuda="12.1")]))
    snap.driver.wsl_libcuda = "/usr/lib/wsl/lib/libcuda.so.1"
    snap.loader.libraries = [Library("libcuda", "/usr/lib/wsl/lib/libcuda.so.1", "1", "ldconfig")]
    assert check(snap) == []


def test_wsl2_unknown_when_the_driver_probe_did_not_run():
    snap = machine(wsl=2, frameworks=[torch("2.3.0+cu121", cuda="12.1")])
    snap.probes = [ProbeStatus("nvidia", "unknown", "timed out")]
    assert check(snap) == []


def test_wsl2_amd_laptop_cpu_torch_is_silent():
    snap = ran_nvidia(machine(wsl=2, frameworks=[torch("2.3.0+cpu")]))
    assert check(snap) == []


# -- the driver ---------------------------------------------------------------------------------------
def _mismatch_truenas():
    """https://github.com/zzzhouuu/truenas-nvidia-drivers/issues/19 - module 580.173.02 loaded, NVML library 580.178."""
    snap = machine(state="version_mismatch", frameworks=[torch("2.8.0+cu128", cuda="12.8")])
    snap.platform.distro_id, snap.platform.distro_name = "debian", "Debian GNU/Linux 12 (bookworm)"
    snap.driver.kernel_module_version = proc_module_version("proc_version_580.173.02_truenas_19.txt")
    snap.driver.nvml = "mismatch"
    snap.driver.nvidia_smi = "failed"
    snap.driver.messages = lines("smi_mismatch_nvml_580.178_truenas_19.txt")
    return snap


def test_version_mismatch_names_both_versions_and_folds():
    fs = check(_mismatch_truenas())
    errors = [f for f in fs if f.severity == "error"]
    assert [f.id for f in errors] == ["ED013"]
    f = errors[0]
    assert "580.173.02" in f.message and "580.178" in f.message and "torch 2.8.0+cu128" in f.message
    assert f.fix[0] == "$ sudo reboot"
    assert any(s.startswith("$ sudo rmmod nvidia_uvm") for s in f.fix)
    assert any("/var/log/apt/history.log" in s for s in f.fix)
    assert any(c.startswith("ED016:") for c in f.consequences)  # nvidia-smi's failure is a symptom
    assert by_id(fs, "ED017") == [] and by_id(fs, "ED001") == []


def test_version_mismatch_userspace_version_from_driver_version():
    """https://github.com/oddmario/NVIDIA-Ubuntu-Driver-Guide/issues/4 - nvidia-driver-550 550.107.02 installed, /proc
    still reports 550.90.07 (Ubuntu 24.04)."""
    snap = machine(driver="550.107.02", state="version_mismatch")
    snap.platform.distro_version = "24.04"
    snap.driver.kernel_module_version = proc_module_version("proc_version_550.90.07_oddmario_4.txt")
    snap.driver.messages = lines("smi_mismatch_plain_oddmario_4.txt")
    snap.driver.disagreements = ["kernel module 550.90.07 but user-space libraries 550.107.02"]
    f = by_id(check(snap), "ED013")[0]
    assert f.severity == "error"
    assert "kernel module 550.90.07" in f.message and "are 550.107.02" in f.message
    assert any(e.value == "kernel module 550.90.07 but user-space libraries 550.107.02" for e in f.evidence)


def test_version_mismatch_in_container_points_at_the_image():
    snap = _mismatch_truenas()
    snap.platform.container = "docker"
    f = by_id(check(snap), "ED013")[0]
    assert "$ sudo reboot" not in f.fix
    assert any("--gpus all" in s for s in f.fix)


def test_module_not_built_for_new_kernel():
    """https://github.com/NVIDIA/nvidia-docker/issues/365 - kernel 3.13.0-116-generic after an update, module only
    built for 3.13.0-88 (Ubuntu 14.04, .run driver without DKMS)."""
    snap = machine(state="module_not_loaded", frameworks=[tensorflow("1.0.1", cuda="8.0", dist="tensorflow-gpu")])
    snap.platform.kernel, snap.platform.distro_version = "3.13.0-116-generic", "14.04"
    snap.driver.nvidia_smi = "failed"
    snap.driver.messages = lines("smi_module_not_found_nvidia_docker_365.txt")
    fs = check(snap)
    f = by_id(fs, "ED014")[0]
    assert f.severity == "error"
    assert "3.13.0-116-generic" in f.message and "tensorflow 1.0.1" in f.message
    assert "$ sudo dkms status   (is the nvidia module built for kernel 3.13.0-116-generic?)" in f.fix
    assert "$ sudo apt-get install linux-headers-3.13.0-116-generic" in f.fix
    assert [x.id for x in fs if x.severity == "error"] == ["ED014"]
    assert any(c.startswith("ED016:") for c in f.consequences)


def test_module_not_loaded_without_gpu_software_is_a_warning():
    """Same report without any CUDA software in the snapshot (the host only ran nvidia-docker)."""
    snap = machine(state="module_not_loaded")
    snap.platform.kernel = "3.13.0-116-generic"
    snap.driver.messages = lines("smi_module_not_found_nvidia_docker_365.txt")
    assert [f.severity for f in by_id(check(snap), "ED014")] == ["warning"]


def test_module_rejected_by_secure_boot():
    """https://github.com/acidanthera/bugtracker/issues/2237 - 'Key was rejected by service' (Ubuntu)."""
    snap = machine(driver="525.89.02", state="module_not_loaded", frameworks=[torch("1.13.1", cuda="11.7")])
    snap.driver.messages = lines("journal_key_rejected_acidanthera_2237.txt") + lines("smi_couldnt_communicate_acidanthera_2237.txt")
    f = by_id(check(snap), "ED014")[0]
    assert "Secure Boot" in f.message and "525.89.02" in f.message
    assert "$ mokutil --sb-state" in f.fix
    assert any("/var/lib/shim-signed/mok/MOK.der" in s for s in f.fix)


def test_module_not_loaded_rpm_family_fix():
    snap = machine(state="module_not_loaded", frameworks=[torch("2.1.2+cu121", cuda="12.1")])
    snap.platform.distro_id, snap.platform.kernel = "rocky", "5.14.0-362.8.1.el9_3.x86_64"
    f = by_id(check(snap), "ED014")[0]
    assert "$ sudo dnf install kernel-devel-5.14.0-362.8.1.el9_3.x86_64 kernel-headers" in f.fix


def test_nvidia_smi_hangs_after_xid_79():
    """https://github.com/NVIDIA/open-gpu-kernel-modules/issues/507 - RTX 3070 Ti fell off the bus, driver 530.41.03."""
    snap = machine(driver="530.41.03", state="unknown", frameworks=[torch("2.0.1", cuda="11.7")])
    snap.platform.distro_id, snap.platform.kernel = "gentoo", "6.3.4-gentoo-x86_64"
    snap.driver.nvidia_smi = snap.driver.nvml = "timeout"
    f = by_id(check(snap), "ED015")[0]
    assert f.severity == "error" and "530.41.03" in f.message
    assert any("xid" in s.lower() and s.startswith("$ sudo dmesg") for s in f.fix)
    assert "$ sudo reboot   (a GPU that stopped responding is only recovered by a reset or reboot)" in f.fix


def test_slow_nvidia_smi_with_working_nvml_is_a_warning():
    snap = machine(driver="535.104.05", gpus=["NVIDIA A100-SXM4-80GB:8.0"] * 8)
    snap.driver.nvidia_smi = "timeout"
    assert [f.severity for f in by_id(check(snap), "ED015")] == ["warning"]


def test_nvml_unknown_error_in_container():
    """https://github.com/NVIDIA/nvidia-docker/issues/1671 - driver 510.68.02, container lost its GPU after
    `systemctl daemon-reload` on the host."""
    snap = machine(driver="510.68.02", state="unknown", frameworks=[torch("1.12.1+cu116", cuda="11.6")])
    snap.platform.container = "docker"
    snap.driver.nvml = snap.driver.nvidia_smi = "failed"
    snap.driver.messages = lines("smi_nvml_unknown_error_nvidia_docker_1671.txt")
    f = by_id(check(snap), "ED016")[0]
    assert f.severity == "error"
    assert "Failed to initialize NVML: Unknown Error" in f.message and "torch 1.12.1+cu116" in f.message
    assert any("nvidia-ctk system create-dev-char-symlinks" in s for s in f.fix)


def test_rm_init_adapter_failed_no_devices():
    """https://github.com/NVIDIA/open-gpu-kernel-modules/issues/789 - RTX 3090 at 0000:98:00.0, driver 550.144.03,
    'No devices were found', RmInitAdapter failed."""
    bus = re.search(r"GPU (\S+): RmInitAdapter failed", (FIX / "dmesg_rminitadapter_ogkm_789.txt").read_text()).group(1)
    snap = machine(driver="550.144.03", state="no_devices", frameworks=[torch("2.2.0", cuda="12.1")])
    snap.gpus = [GPU(index=0, name="NVIDIA GeForce RTX 3090", bus_id=bus, source="proc")]
    snap.driver.kernel_module_version = "550.144.03"
    snap.driver.nvml = snap.driver.nvidia_smi = "no_devices"
    snap.driver.messages = lines("smi_no_devices_ogkm_789.txt")
    fs = check(snap, ["ED0"])
    f = by_id(fs, "ED017")[0]
    assert f.severity == "error"
    assert "0000:98:00.0" in f.message and "550.144.03" in f.message
    assert by_id(fs, "ED001") == []


def test_driver_without_any_gpu_is_info():
    snap = machine(driver="550.54.15")  # a driver installed on a machine with no GPU
    snap.driver.nvml = snap.driver.nvidia_smi = "no_devices"
    assert [f.severity for f in by_id(check(snap), "ED017")] == ["info"]


def test_healthy_driver_is_silent():
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[torch("2.3.0+cu121", cuda="12.1")])
    assert check(snap) == []


def test_unknown_driver_is_silent():
    snap = machine(state="unknown", frameworks=[torch("2.3.0+cu121", cuda="12.1")])
    snap.driver.nvml = snap.driver.nvidia_smi = "not_run"
    assert check(snap) == []


def test_cpu_only_machine_is_silent():
    snap = machine(frameworks=[torch("2.3.0+cpu")], gpu_env={"CUDA_VISIBLE_DEVICES": ""})
    assert check(snap) == []


# -- CUDA_VISIBLE_DEVICES -----------------------------------------------------------------------------
def test_index_beyond_gpu_count_hides_everything():
    """https://github.com/pytorch/pytorch/issues/1040 - CUDA_VISIBLE_DEVICES=2 on a machine with one TITAN X
    (Pascal), driver 375.39: 'no CUDA-capable device is detected'."""
    snap = machine(driver="375.39", gpus=["TITAN X (Pascal):6.1"], frameworks=[torch("0.1.10", cuda="8.0")],
                   gpu_env={"CUDA_VISIBLE_DEVICES": "2"})
    f = by_id(check(snap), "ED020")[0]
    assert f.severity == "error"
    assert '"2"' in f.message and "TITAN X (Pascal)" in f.message and "torch 0.1.10" in f.message
    assert "$ export CUDA_VISIBLE_DEVICES=0   (valid indices here: 0..0)" in f.fix


def test_empty_string_hides_everything():
    """https://github.com/pytorch/pytorch/issues/40618 - CUDA_VISIBLE_DEVICES='' with four RTX 2080 Ti, driver 440.82,
    torch 1.4.0 (CUDA 10.1): is_available() False."""
    snap = machine(driver="440.82", gpus=["GeForce RTX 2080 Ti:7.5"] * 4, frameworks=[torch("1.4.0", cuda="10.1")],
                   gpu_env={"CUDA_VISIBLE_DEVICES": ""})
    f = by_id(check(snap), "ED020")[0]
    assert "empty string" in f.message and "4 GPUs" in f.message
    assert "$ export CUDA_VISIBLE_DEVICES=0,1,2,3   (valid indices here: 0..3)" in f.fix


@pytest.mark.parametrize("value, severity", [("-1", "warning"), ("none", "warning"), ("", "warning"),
                                             ("NoDevFiles", "error"), ("3", "error")])
def test_invalid_first_entry_hides_everything(value, severity):
    """"", -1 and none are how people force the CPU on purpose: a warning. Other values that hide every GPU are mistakes."""
    snap = machine(driver="535.104.05", gpus=["NVIDIA A10G:8.6"], gpu_env={"CUDA_VISIBLE_DEVICES": value})
    assert [f.severity for f in by_id(check(snap), "ED020")] == [severity]


def test_bad_entry_drops_the_gpus_after_it():
    """The CUDA programming guide's own example: CUDA_VISIBLE_DEVICES=0,2,-1,1 leaves only 0 and 2 visible."""
    snap = machine(driver="440.82", gpus=["GeForce RTX 2080 Ti:7.5"] * 4, gpu_env={"CUDA_VISIBLE_DEVICES": "0,2,-1,1"})
    fs = check(snap)
    assert by_id(fs, "ED020") == []
    f = by_id(fs, "ED021")[0]
    assert f.severity == "warning"
    assert '"-1"' in f.message and "(1) are ignored" in f.message and "only 0, 2 stay visible" in f.message
    assert f.fix == ["$ export CUDA_VISIBLE_DEVICES=0,2,1"]


def _uuid_gpus(snap):
    uuids = ["GPU-8932f937-d72c-4106-c12f-20bd9faed9f6", "GPU-1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"]
    for g, u in zip(snap.gpus, uuids):
        g.uuid = u
    return snap


def test_uuid_prefix_of_a_present_gpu_is_fine_and_a_foreign_uuid_is_not():
    snap = _uuid_gpus(machine(driver="535.104.05", gpus=["NVIDIA A100-SXM4-80GB:8.0"] * 2,
                              gpu_env={"CUDA_VISIBLE_DEVICES": "GPU-8932f937"}))
    assert check(snap) == []
    snap.loader.gpu_env["CUDA_VISIBLE_DEVICES"] = "GPU-ffffffff-0000-0000-0000-000000000000"
    assert [f.id for f in check(snap)] == ["ED020"]


def test_redacted_uuids_are_unknown():
    snap = machine(driver="535.104.05", gpus=["NVIDIA A100-SXM4-80GB:8.0"] * 2,
                   gpu_env={"CUDA_VISIBLE_DEVICES": "GPU-ffffffff"})
    for g in snap.gpus:
        g.uuid = "<redacted>"
    assert check(snap) == []
    snap.loader.gpu_env["CUDA_VISIBLE_DEVICES"] = "GPU-<redacted>"
    assert check(snap) == []


@pytest.mark.parametrize("value", ["0", "1,0", "MIG-GPU-8932f937-d72c-4106-c12f-20bd9faed9f6/1/0", "0,"])
def test_valid_or_unjudgeable_values_are_silent(value):
    snap = machine(driver="535.104.05", gpus=["NVIDIA A100-SXM4-80GB:8.0"] * 2, gpu_env={"CUDA_VISIBLE_DEVICES": value})
    assert check(snap) == []


def test_resolver_follows_cuda_semantics():
    gpus = [GPU(index=i, uuid=f"GPU-{i}0000000-0000-0000-0000-000000000000") for i in range(3)]
    r = resolve_visible_devices("2,0,7,1", gpus)
    assert r.visible == [2, 0] and r.invalid == "7" and r.ignored == ["1"] and r.valid_tokens == ["2", "0", "1"]
    assert resolve_visible_devices("", gpus).visible == []
    assert resolve_visible_devices("GPU-1", gpus).visible == [1]
    assert resolve_visible_devices("GPU-", gpus).unknown  # ambiguous prefix


def test_nvidia_visible_devices_void_in_docker():
    snap = machine(frameworks=[torch("2.1.2+cu121", cuda="12.1")], gpu_env={"NVIDIA_VISIBLE_DEVICES": "void"})
    snap.platform.container = "docker"
    fs = check(snap)
    f = by_id(fs, "ED022")[0]
    assert f.severity == "warning" and '"void"' in f.message and "torch 2.1.2+cu121" in f.message
    assert "$ docker run --gpus all <image> ..." in f.fix


def test_nvidia_visible_devices_none_explains_no_devices():
    snap = machine(driver="535.104.05", state="no_devices", gpu_env={"NVIDIA_VISIBLE_DEVICES": "none"})
    snap.platform.container = "kubernetes"
    snap.driver.nvidia_smi = "no_devices"
    fs = check(snap)
    assert by_id(fs, "ED017") == []
    f = by_id(fs, "ED022")[0]
    assert any("nvidia.com/gpu" in s for s in f.fix)


def test_nvidia_visible_devices_outside_container_or_with_gpus_is_silent():
    snap = machine(gpu_env={"NVIDIA_VISIBLE_DEVICES": "void"})
    assert check(snap) == []
    snap = machine(driver="535.104.05", gpus=["NVIDIA A10G:8.6"], gpu_env={"NVIDIA_VISIBLE_DEVICES": "none"})
    snap.platform.container = "docker"
    assert check(snap) == []


# -- the whole command ------------------------------------------------------------------------------
def _cli(tmp_path, snap, *extra):
    from envdoctor.cli import cli

    p = tmp_path / "snap.json"
    p.write_text(snap.to_json())
    return CliRunner().invoke(cli, ["check", "--snapshot", str(p), "--format", "json", *extra])


def test_cli_check_exits_1_on_a_driver_mismatch(tmp_path):
    res = _cli(tmp_path, _mismatch_truenas())
    assert res.exit_code == 1, res.output
    report = json.loads(res.output)
    ed013 = [f for f in report["findings"] if f["id"] == "ED013"]
    assert ed013 and ed013[0]["severity"] == "error" and "580.178" in ed013[0]["message"]


def test_cli_check_exits_0_on_a_healthy_machine(tmp_path):
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[torch("2.3.0+cu121", cuda="12.1")], gpu_env={"CUDA_VISIBLE_DEVICES": "0"})
    snap.driver.evidence = [Evidence("nvml", "driver 550.54.15")]
    # only the doctor's machine/environment rules: other areas are judged by their own tests
    res = _cli(tmp_path, snap, "--only", "ED0,ED6")
    assert res.exit_code == 0, res.output
    report = json.loads(res.output)
    assert report["summary"]["error"] == 0 and report["summary"]["warning"] == 0
