"""Parsers of nvidia-smi output and of the NVIDIA kernel driver's /proc files, on real outputs."""
from __future__ import annotations

from pathlib import Path

import pytest

from envdoctor.parsers import nvidia_smi as smi
from envdoctor.parsers import proc_driver as proc

FIX = Path(__file__).parent / "fixtures" / "nvidia"


def read(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


# file -> (NVIDIA-SMI version, driver version, CUDA version, raw CUDA word, GPU names, first bus id, first memory MiB)
BANNERS = {
    "smi_331.62_3x_gtx680_old_banner.txt": ("331.62", "331.62", None, None, ["GeForce GTX 680"] * 3, "0000:03:00.0", 4095),
    "smi_384.69_gtx1080ti.txt": ("384.69", "384.69", None, None, ["GeForce GTX 108..."], "00000000:4B:00.0", 11171),
    "smi_384.66_titanxp_old_processes.txt": ("384.66", "384.66", None, None, ["TITAN Xp"], "00000000:41:00.0", 12174),
    "smi_410.104_v100.txt": ("410.104", "410.104", "10.0", "10.0", ["Tesla V100-PCIE..."], "00000000:3D:00.0", 32480),
    "smi_440.33.01_2x_gv100.txt": ("440.33.01", "440.33.01", "10.2", "10.2", ["Quadro GV100"] * 2, "00000000:15:00.0", 32508),
    "smi_450.57_titanxp.txt": ("450.57", "450.57", "11.0", "11.0", ["TITAN Xp"], "00000000:17:00.0", 12196),
    "smi_470.63.01_processes.txt": ("470.63.01", "470.63.01", "11.4", "11.4", ["NVIDIA GeForce ..."], "00000000:01:00.0", 16116),
    "smi_470.256.02_tool_with_580_driver.txt": ("470.256.02", "580.95.05", "13.0", "13.0", ["NVIDIA RTX PRO ..."], "00000000:01:00.0", 8151),
    "smi_535.247.01_a10g.txt": ("535.247.01", "535.247.01", "12.2", "12.2", ["NVIDIA A10G"], "00000000:00:1E.0", 23028),
    "smi_546.12_windows_wddm.txt": ("546.12", "546.12", "12.3", "12.3", ["NVIDIA GeForce RTX 3050 ..."], "00000000:01:00.0", 4096),
    "smi_550.127.05_a10_no_processes.txt": ("550.127.05", "550.127.05", "12.4", "12.4", ["NVIDIA A10"], "00000000:06:00.0", 23028),
    "smi_550.40.07_rtx4070.txt": ("550.40.07", "550.40.07", "12.4", "12.4", ["NVIDIA GeForce RTX 4070"], "00000000:2D:00.0", 12282),
    "smi_555.52.01_wsl.txt": ("555.52.01", "555.99", "12.5", "12.5", ["NVIDIA GeForce RTX 4070 ..."], "00000000:01:00.0", 12282),
    "smi_545.46_wsl_cuda_err.txt": ("545.46", "546.80", None, "ERR!", ["NVIDIA GeForce RTX 3060 ..."], "00000000:01:00.0", 6144),
    "smi_575.64.03_cuda_na.txt": ("575.64.03", "575.64.03", None, "N/A", ["NVIDIA GeForce RTX 5070"], "00000000:02:00.0", 12227),
    "smi_580.126.09_2x_a100.txt": ("580.126.09", "580.126.09", "13.0", "13.0", ["NVIDIA A100-SXM4-40GB"] * 2, "00000000:10:1C.0", 40960),
    "smi_595.71.05_rtx5090.txt": ("595.71.05", "595.71.05", "13.2", "13.2", ["NVIDIA GeForce RTX 5090"], "00000000:C5:00.0", 32607),
    "smi_610.43.02_kmd_2x_b200.txt": ("610.43.02", "610.43.02", "13.3", "13.3", ["NVIDIA B200"] * 2, "00000000:63:00.0", 183359),
}


def test_every_banner_fixture_is_covered():
    on_disk = {p.name for p in FIX.glob("smi_*.txt")} - {"smi_mig_devices_table.txt"}
    assert on_disk == set(BANNERS)


@pytest.mark.parametrize("name", sorted(BANNERS))
def test_banner(name):
    smi_v, drv, cuda, cuda_raw, names, bus0, mem0 = BANNERS[name]
    b = smi.parse_banner(read(name))
    assert b is not None
    assert b.smi_version == smi_v
    assert b.driver_version == drv
    assert b.cuda_version == cuda
    assert b.cuda_version_raw == cuda_raw
    assert [g.name for g in b.gpus] == names
    assert [g.index for g in b.gpus] == list(range(len(names)))
    assert b.gpus[0].bus_id == bus0
    assert b.gpus[0].memory_total_mib == mem0
    assert [g.name_truncated for g in b.gpus] == [n.endswith("...") for n in names]


def test_banner_rows_are_not_processes_or_mig_devices():
    # process rows carry a GPU index and MiB too; they must never become GPUs
    assert len(smi.parse_banner(read("smi_470.63.01_processes.txt")).gpus) == 1
    assert len(smi.parse_banner(read("smi_384.66_titanxp_old_processes.txt")).gpus) == 1
    mig = read("smi_mig_devices_table.txt")
    assert smi.parse_banner(mig) is None  # no driver version in the MIG table alone
    combined = read("smi_550.127.05_a10_no_processes.txt").replace("\n\n+---", "\n" + mig + "\n+---", 1)
    b = smi.parse_banner(combined)
    assert [g.name for g in b.gpus] == ["NVIDIA A10"]


def test_banner_is_not_a_failure():
    for name in BANNERS:
        assert smi.detect_failure(read(name)) is None, name


FAILURES = {
    "fail_couldnt_communicate.txt": ("module_not_loaded", "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver", None),
    "fail_wsl_driver_not_loaded.txt": ("module_not_loaded", "NVIDIA-SMI has failed because it couldn't communicate", None),
    "fail_version_mismatch_570.txt": ("version_mismatch", "Failed to initialize NVML: Driver/library version mismatch", "570.124"),
    "fail_version_mismatch_plain.txt": ("version_mismatch", "Failed to initialize NVML: Driver/library version mismatch", None),
    "fail_no_devices.txt": ("no_devices", "No devices were found", None),
    "fail_compute_cap_field.txt": ("invalid_field", 'Field "compute_cap" is not a valid field to query.', None),
}


@pytest.mark.parametrize("name", sorted(FAILURES))
def test_failure_messages(name):
    kind, start, lib = FAILURES[name]
    f = smi.detect_failure(read(name))
    assert f is not None
    assert f.kind == kind
    assert f.message.startswith(start)
    assert f.nvml_library_version == lib
    assert smi.parse_banner(read(name)) is None


def test_failure_keeps_every_line_in_order():
    f = smi.detect_failure(read("fail_wsl_driver_not_loaded.txt"))
    assert len(f.lines) == 2
    assert f.lines[1] == "Failed to properly shut down NVML: Driver Not Loaded"


# -- --query-gpu CSV ------------------------------------------------------------------------


def test_query_with_header_two_gpus():
    fields = ["compute_cap", "compute_mode", "driver_version", "name", "index"]
    gpus = smi.parse_query_gpus(read("query_header_2gpu_570.csv"), fields)
    assert [(g.index, g.name, g.compute_cap, g.driver_version) for g in gpus] == [
        (0, "NVIDIA TITAN V", "7.0", "570.86.15"),
        (1, "NVIDIA RTX 5880 Ada Generation", "8.9", "570.86.15"),
    ]


def test_query_header_decides_column_order():
    # asked in another order: the header line still maps the columns right
    fields = ["index", "name", "driver_version", "compute_mode", "compute_cap"]
    gpus = smi.parse_query_gpus(read("query_header_2gpu_570.csv"), fields)
    assert [(g.index, g.compute_cap) for g in gpus] == [(0, "7.0"), (1, "8.9")]


def test_query_compute_cap_only():
    rows = smi.parse_query_csv(read("query_compute_cap_only_570.csv"), ["compute_cap"])
    assert rows == [{"compute_cap": "8.9"}]


def test_query_noheader_nounits_name_with_spaces_and_na():
    fields = ("power.limit,power.min_limit,power.max_limit,memory.total,vbios_version,driver_version,name,gpu_uuid,"
              "power.draw,temperature.gpu,temperature.memory,clocks.current.graphics,clocks.sm,clocks.mem,"
              "utilization.gpu,utilization.memory,fan.speed,pcie.link.width.current,pstate").split(",")
    rows = smi.parse_query_csv(read("query_noheader_nounits_440.csv"), fields)
    assert len(rows) == 1
    assert rows[0]["name"] == "GeForce RTX 2080"
    assert rows[0]["temperature.memory"] is None  # N/A
    gpus = smi.parse_query_gpus(read("query_noheader_nounits_440.csv"), fields)
    assert gpus[0].memory_total_mib == 7979
    assert gpus[0].uuid == "GPU-22b2c6ac-2d49-4863-197c-9c469071178a"
    assert gpus[0].driver_version == "440.64"


@pytest.mark.parametrize("name", ["query_bracket_na.csv", "query_bracket_not_supported.csv"])
def test_query_bracketed_na(name):
    fields = ["memory.total", "memory.free", "memory.used", "temperature.gpu", "fan.speed", "utilization.gpu", "utilization.memory"]
    rows = smi.parse_query_csv(read(name), fields)
    assert rows[0]["fan.speed"] is None
    assert rows[0]["memory.total"] == "2004"


def test_query_gb10_memory_not_available():
    rows = smi.parse_query_csv(read("query_gb10_memory_na.csv"), ["memory.used", "memory.total", "utilization.memory"])
    assert rows == [{"memory.used": None, "memory.total": None, "utilization.memory": "0"}]


def test_query_wrong_column_count_is_skipped():
    assert smi.parse_query_csv(read("query_bracket_na.csv"), ["index", "name"]) == []
    assert smi.parse_query_gpus(read("fail_compute_cap_field.txt"), ["compute_cap"]) == []


# -- /proc ------------------------------------------------------------------------------------

PROC = {
    "proc_version_384.98_proprietary.txt": ("384.98", "proprietary", "x86_64", "7.2.0"),
    "proc_version_565.57.01_open.txt": ("565.57.01", "open", "x86_64", "13.3.0"),
    "proc_version_525.60.11_open_arch.txt": ("525.60.11", "open", "x86_64", "12.2.0"),
    "proc_version_jetson_aarch64.txt": ("35.3.1", "open", "aarch64", "9.3.0"),
}


@pytest.mark.parametrize("name", sorted(PROC))
def test_proc_version(name):
    v = proc.parse_proc_version(read(name))
    assert (v.version, v.flavor, v.arch, v.gcc) == PROC[name]
    assert v.line.startswith("NVRM version:")


def test_proc_gpu_information_old_and_new():
    old = proc.parse_gpu_information(read("proc_gpu_information_gtx650.txt"))
    assert (old.model, old.uuid, old.bus_location, old.device_minor, old.excluded) == (
        "GeForce GTX 650", "GPU-e3f822b9-8c5f-95a5-b379-8dfdeefd7758", "0000:04:00.0", None, None)
    new = proc.parse_gpu_information(read("proc_gpu_information_l4.txt"))
    assert (new.model, new.uuid, new.bus_location, new.device_minor, new.excluded) == (
        "NVIDIA L4", "GPU-3291dfa4-fcc4-0110-615b-c894a0d7c689", "0000:70:00.0", 0, False)


def test_module_version():
    assert proc.parse_module_version("565.57.01\n") == "565.57.01"
    assert proc.parse_module_version("not a version\n") is None


def test_normalize_bus_id_matches_all_spellings():
    assert smi.normalize_bus_id("00000000:4B:00.0") == smi.normalize_bus_id("0000:4b:00.0") == "0000:4b:00.0"
    assert smi.normalize_bus_id("") == ""


# -- garbage ------------------------------------------------------------------------------------

GARBAGE = [None, "", "   \n", "\x00\x01\x02binary\xff", "random words\nno table here\n", "| | |\n+--+\n",
           "NVIDIA-SMI", "Driver Version: banana", b"\x7fELF\x02\x01\x01\x00", 12345, "NVRM version: nonsense",
           "Model:\nGPU UUID: nope\n"]


@pytest.mark.parametrize("junk", GARBAGE)
def test_garbage_never_raises(junk):
    assert smi.parse_banner(junk) is None
    assert smi.parse_query_gpus(junk, ["index", "name"]) == []
    assert smi.detect_failure(junk) is None
    assert proc.parse_proc_version(junk) is None
    assert proc.parse_module_version(junk) is None
    info = proc.parse_gpu_information(junk)
    assert info is None or (info.uuid is None and info.bus_location is None)


def test_truncated_fixtures_never_raise():
    for path in sorted(FIX.iterdir()):
        if path.suffix not in (".txt", ".csv"):
            continue
        text = path.read_text(encoding="utf-8")
        for cut in range(0, len(text), 53):
            part = text[:cut]
            smi.parse_banner(part)
            smi.detect_failure(part)
            smi.parse_query_gpus(part, ["index", "name", "compute_cap"])
            proc.parse_proc_version(part)
            proc.parse_gpu_information(part)


# -- a number nvidia-smi cannot have printed keeps the GPU, through the real CLI ----------

def test_check_with_inf_memory_in_query_still_finds_the_gpu(tmp_path):
    """`--query-gpu` printing `inf` for memory.total made the probe raise OverflowError, and
    `check` then said "ED001 No NVIDIA GPU or driver found ... No issues found!"."""
    import json
    import os
    import subprocess
    import sys

    from tests.fakes import make_exe

    bindir = tmp_path / "bin"
    make_exe(bindir / "nvidia-smi", "\n".join([
        'case "$1" in',
        '  --query-gpu=*) echo "0, NVIDIA A10G, 8.6, inf, 00000000:00:1E.0, GPU-3b1c5f6e-5a0e-9c4d-8b7e-1f2a3b4c5d6e, 535.247.01";'
        " exit 0;;",
        "esac",
        f'cat "{FIX / "smi_535.247.01_a10g.txt"}"',
    ]))
    root = tmp_path / "root"
    root.mkdir()
    env = dict(os.environ, PATH=f"{bindir}:{os.environ['PATH']}")
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--root", str(root), "--format", "json"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    data = json.loads(proc.stdout)
    nvidia = next(p for p in data["snapshot"]["probes"] if p["name"] == "nvidia")
    assert nvidia["status"] == "ok", nvidia
    [gpu] = data["snapshot"]["gpus"]
    assert (gpu["name"], gpu["compute_capability"]) == ("NVIDIA A10G", "8.6")
    assert gpu["memory_total_mib"] in (None, 23028)  # the banner's figure or unknown, never inf
    assert "ED001" not in [f["id"] for f in data["findings"]]
