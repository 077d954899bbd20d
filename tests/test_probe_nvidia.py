"""The NVIDIA probe on fake machines: fake roots, fake nvidia-smi scripts first on PATH, a fake pynvml."""
from __future__ import annotations

import json

import os
import shutil
import stat
import sys
import time
from pathlib import Path, PurePosixPath

import pytest

from envdoctor.fsroot import Root
from envdoctor.probes import nvidia
from envdoctor.probes.base import ProbeContext, ProbeUnknown
from envdoctor.snapshot import Snapshot

FIX = Path(__file__).parent / "fixtures" / "nvidia"


# -- building fake machines -------------------------------------------------------------------


def put(root: Path, abs_path: str, text: str = "") -> Path:
    p = root / abs_path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def fake_smi(bindir: Path, body: str, name: str = "nvidia-smi") -> Path:
    bindir.mkdir(parents=True, exist_ok=True)
    script = bindir / name
    script.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def smi_script(banner: str, query: str = None, query_cc: str = None, log: Path = None,
               banner_exit: int = 0, query_cc_exit: int = 0) -> str:
    """A /bin/sh nvidia-smi: plain call cats `banner`; --query-gpu with compute_cap cats `query_cc`,
    without it cats `query`."""
    lines = []
    if log is not None:
        lines.append(f'echo "$@" >> "{log}"')
    lines.append('case "$1" in')
    if query_cc is not None:
        lines.append(f'  --query-gpu=*compute_cap*) cat "{query_cc}"; exit {query_cc_exit};;')
    if query is not None:
        lines.append(f'  --query-gpu=*) cat "{query}"; exit 0;;')
    else:
        lines.append('  --query-gpu=*) echo "unexpected"; exit 2;;')
    lines.append("esac")
    lines.append(f'cat "{banner}"')
    lines.append(f"exit {banner_exit}")
    return "\n".join(lines)


def ctx_for(root, bindir: Path, timeout: float = 5.0, use_nvml: bool = False) -> ProbeContext:
    bindir.mkdir(parents=True, exist_ok=True)
    root_obj = root if isinstance(root, Root) else Root(root)
    env = {"PATH": f"{bindir}:/usr/bin:/bin", "LANG": "C"}
    return ProbeContext(root=root_obj, env=env, timeout=timeout, use_nvml=use_nvml)


def run_probe(ctx: ProbeContext) -> Snapshot:
    snap = Snapshot()
    nvidia.probe(ctx, snap)
    return snap


def run_probe_allow_unknown(ctx: ProbeContext) -> Snapshot:
    """For machines where no layer answers: the probe fills the snapshot, then says ProbeUnknown."""
    snap = Snapshot()
    try:
        nvidia.probe(ctx, snap)
    except ProbeUnknown:
        assert snap.driver.state == "unknown"
    return snap


class LiveLikeRoot(Root):
    """A fake root that the probe takes for the live system (so NVML and the WSL nvidia-smi
    fallback are tried), while every path still maps into the fake directory."""

    is_live = True  # type: ignore[assignment]

    def path(self, abs_path):
        rel = PurePosixPath(str(abs_path))
        if rel.is_absolute():
            rel = rel.relative_to("/")
        return self.base / rel

    def display(self, local):
        try:
            return "/" + str(Path(local).relative_to(self.base))
        except ValueError:
            return str(local)


# A --query-gpu answer for the probe's own field list, composed from the real 580 banner fixture
# (same GPUs, bus ids, memory, driver) in the CSV layout of the real query fixtures.
QUERY_580 = (
    "0, NVIDIA A100-SXM4-40GB, 8.0, 40960, 00000000:10:1C.0, GPU-aaaaaaaa-0000-0000-0000-000000000000, 580.126.09\n"
    "1, NVIDIA A100-SXM4-40GB, 8.0, 40960, 00000000:10:1D.0, GPU-aaaaaaaa-0000-0000-0000-000000000001, 580.126.09\n"
)


# -- no driver at all ----------------------------------------------------------------------------


def test_no_driver_at_all(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    assert snap.driver.state == "not_installed"
    assert snap.driver.nvidia_smi == "missing"
    assert snap.driver.nvml == "not_run"
    assert snap.driver.version is None
    assert snap.gpus == []


def _machine_has_nvidia() -> bool:
    return (
        os.path.exists("/proc/driver/nvidia")
        or os.path.exists("/sys/module/nvidia")
        or shutil.which("nvidia-smi") is not None
        or os.path.exists("/usr/lib/wsl/lib")
    )


@pytest.mark.skipif(_machine_has_nvidia(), reason="this machine has an NVIDIA driver")
def test_this_machine_without_driver():
    snap = Snapshot()
    nvidia.probe(ProbeContext(root=Root("/"), env=dict(os.environ), timeout=5.0), snap)
    assert snap.driver.state == "not_installed"
    assert snap.driver.nvml in ("missing", "not_run")
    assert snap.gpus == []
    assert snap.driver.disagreements == []


# -- nvidia-smi --------------------------------------------------------------------------------------


def test_smi_banner_and_query(tmp_path):
    q = put(tmp_path, "/q.csv", QUERY_580)
    log = tmp_path / "calls.log"
    fake_smi(tmp_path / "bin", smi_script(FIX / "smi_580.126.09_2x_a100.txt", query=q, query_cc=q, log=log))
    root = tmp_path / "root"
    root.mkdir()
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    d = snap.driver
    assert (d.state, d.nvidia_smi, d.version, d.cuda_version, d.source) == ("ok", "ok", "580.126.09", "13.0", "nvidia-smi")
    assert [(g.index, g.name, g.compute_capability, g.memory_total_mib, g.source) for g in snap.gpus] == [
        (0, "NVIDIA A100-SXM4-40GB", "8.0", 40960, "nvidia-smi"),
        (1, "NVIDIA A100-SXM4-40GB", "8.0", 40960, "nvidia-smi"),
    ]
    assert snap.gpus[1].bus_id == "00000000:10:1D.0"
    assert d.disagreements == []
    sources = [e.source for e in d.evidence]
    assert "cmd:nvidia-smi" in sources
    assert any(s.startswith("cmd:nvidia-smi --query-gpu=index,name,compute_cap") for s in sources)
    banner_ev = next(e for e in d.evidence if e.source == "cmd:nvidia-smi")
    assert "Driver Version: 580.126.09" in banner_ev.excerpt and len(banner_ev.excerpt) <= 2100
    assert len(log.read_text().splitlines()) == 2  # banner + one query
    assert snap.to_dict()["driver"]["state"] == "ok"  # serialisable


def test_old_driver_without_compute_cap_field(tmp_path):
    # 470: --query-gpu=...compute_cap... fails (exit 2) -> asked again without compute_cap
    q = put(tmp_path, "/q.csv", "0, NVIDIA GeForce RTX 3070, 7979, 00000000:01:00.0, GPU-bbbbbbbb-0000-0000-0000-000000000000, 470.63.01\n")
    log = tmp_path / "calls.log"
    fake_smi(tmp_path / "bin", smi_script(FIX / "smi_470.63.01_processes.txt", query=q,
                                          query_cc=FIX / "fail_compute_cap_field.txt", query_cc_exit=2, log=log))
    root = tmp_path / "root"
    root.mkdir()
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    calls = log.read_text().splitlines()
    assert len(calls) == 3
    assert "compute_cap" in calls[1] and "compute_cap" not in calls[2]
    assert snap.driver.state == "ok"
    assert snap.driver.cuda_version == "11.4"
    g = snap.gpus[0]
    assert g.compute_capability is None
    assert g.name == "NVIDIA GeForce RTX 3070"  # the query's full name, not the banner's "NVIDIA GeForce ..."
    assert g.memory_total_mib == 7979
    assert 'Field "compute_cap"' not in " ".join(snap.driver.messages)


def test_query_garbage_falls_back_to_banner_gpus(tmp_path):
    q = put(tmp_path, "/q.csv", "%%% no csv here %%%\n")
    fake_smi(tmp_path / "bin", smi_script(FIX / "smi_440.33.01_2x_gv100.txt", query=q, query_cc=q))
    root = tmp_path / "root"
    root.mkdir()
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    assert snap.driver.state == "ok"
    assert [g.name for g in snap.gpus] == ["Quadro GV100", "Quadro GV100"]
    assert all(g.compute_capability is None for g in snap.gpus)
    assert any("unrecognised" in m for m in snap.driver.messages)


@pytest.mark.parametrize(
    "fixture, code, state",
    [
        ("fail_couldnt_communicate.txt", 9, "module_not_loaded"),
        ("fail_version_mismatch_570.txt", 18, "version_mismatch"),
        ("fail_version_mismatch_plain.txt", 18, "version_mismatch"),
        ("fail_no_devices.txt", 6, "no_devices"),
    ],
)
def test_smi_failure_maps_to_state(tmp_path, fixture, code, state):
    fake_smi(tmp_path / "bin", f'cat "{FIX / fixture}"\nexit {code}')
    root = tmp_path / "root"
    root.mkdir()
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    first_line = (FIX / fixture).read_text().splitlines()[0]
    assert snap.driver.state == state
    assert snap.driver.nvidia_smi == "failed"
    assert first_line in snap.driver.messages
    assert snap.gpus == []


def test_smi_mismatch_records_nvml_library_version_against_kernel(tmp_path):
    root = tmp_path / "root"
    put(root, "/proc/driver/nvidia/version", (FIX / "proc_version_565.57.01_open.txt").read_text())
    fake_smi(tmp_path / "bin", f'cat "{FIX / "fail_version_mismatch_570.txt"}"\nexit 18')
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    assert snap.driver.state == "version_mismatch"
    assert snap.driver.version == "565.57.01" and snap.driver.source == "proc"
    assert any("565.57.01" in d and "570.124" in d for d in snap.driver.disagreements)


def test_smi_hang_costs_at_most_the_timeout(tmp_path):
    fake_smi(tmp_path / "bin", "sleep 60")
    root = tmp_path / "root"
    root.mkdir()
    start = time.monotonic()
    snap = run_probe(ctx_for(root, tmp_path / "bin", timeout=1.0))
    elapsed = time.monotonic() - start
    assert elapsed < 1.0 + 2.0
    assert snap.driver.nvidia_smi == "timeout"
    assert snap.driver.state == "smi_failed"
    assert any("no answer within" in m for m in snap.driver.messages)


def test_smi_prints_garbage(tmp_path):
    fake_smi(tmp_path / "bin", r"printf '\177ELF\002\001\001\000\000garbage\n'")
    root = tmp_path / "root"
    root.mkdir()
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    assert snap.driver.nvidia_smi == "garbage"
    assert snap.driver.state == "smi_failed"
    assert snap.gpus == []


def test_smi_table_with_nonzero_exit_is_kept(tmp_path):
    fake_smi(tmp_path / "bin", smi_script(FIX / "smi_595.71.05_rtx5090.txt", banner_exit=1,
                                          query_cc=FIX / "fail_compute_cap_field.txt", query_cc_exit=2))
    root = tmp_path / "root"
    root.mkdir()
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    assert snap.driver.nvidia_smi == "ok"
    assert snap.driver.state == "ok"
    assert [g.name for g in snap.gpus] == ["NVIDIA GeForce RTX 5090"]
    assert any("exit status 1" in m for m in snap.driver.messages)


def test_long_output_evidence_is_trimmed(tmp_path):
    long = put(tmp_path, "/long.txt", (FIX / "smi_550.127.05_a10_no_processes.txt").read_text() * 6)
    fake_smi(tmp_path / "bin", smi_script(long, query_cc=FIX / "fail_compute_cap_field.txt", query_cc_exit=2))
    root = tmp_path / "root"
    root.mkdir()
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    ev = next(e for e in snap.driver.evidence if e.source == "cmd:nvidia-smi")
    assert len(long.read_text()) > 6000
    assert len(ev.excerpt) <= 2100 and ev.excerpt.endswith("[...]")
    assert ev.excerpt.startswith("Wed Jan 22 04:28:25 2025")


def test_smi_tool_older_than_driver_is_a_disagreement(tmp_path):
    fake_smi(tmp_path / "bin", smi_script(FIX / "smi_470.256.02_tool_with_580_driver.txt",
                                          query_cc=FIX / "fail_compute_cap_field.txt", query_cc_exit=2))
    root = tmp_path / "root"
    root.mkdir()
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    assert snap.driver.version == "580.95.05"
    assert "nvidia-smi is version 470.256.02 but reports driver 580.95.05" in snap.driver.disagreements


# -- files --------------------------------------------------------------------------------------------


def proc_root(tmp_path: Path, version_fixture: str, infos=("proc_gpu_information_l4.txt",)) -> Path:
    root = tmp_path / "root"
    put(root, "/proc/driver/nvidia/version", (FIX / version_fixture).read_text())
    for info in infos:
        text = (FIX / info).read_text()
        bus = next(line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Bus Location"))
        put(root, f"/proc/driver/nvidia/gpus/{bus}/information", text)
    return root


def test_proc_only_machine(tmp_path):
    root = proc_root(tmp_path, "proc_version_565.57.01_open.txt")
    put(root, "/sys/module/nvidia/version", "565.57.01\n")
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    d = snap.driver
    assert (d.state, d.version, d.source, d.kernel_module_version) == ("ok", "565.57.01", "proc", "565.57.01")
    assert d.nvidia_smi == "missing"
    assert [(g.name, g.uuid, g.bus_id, g.source) for g in snap.gpus] == [
        ("NVIDIA L4", "GPU-3291dfa4-fcc4-0110-615b-c894a0d7c689", "0000:70:00.0", "proc")]
    assert "file:/proc/driver/nvidia/version" in [e.source for e in d.evidence]
    assert d.disagreements == []


def test_proc_and_smi_disagree(tmp_path):
    root = proc_root(tmp_path, "proc_version_565.57.01_open.txt",
                     infos=("proc_gpu_information_l4.txt", "proc_gpu_information_gtx650.txt"))
    fake_smi(tmp_path / "bin", smi_script(FIX / "smi_550.127.05_a10_no_processes.txt"))
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    d = snap.driver
    assert d.version == "565.57.01" and d.source == "proc"
    assert "/proc/driver/nvidia/version says 565.57.01 but nvidia-smi says 550.127.05" in d.disagreements
    assert "nvidia-smi lists 1 GPU but /proc/driver/nvidia/gpus lists 2 GPUs" in d.disagreements
    assert d.state == "ok"
    assert [g.source for g in snap.gpus] == ["nvidia-smi"]


def test_proc_fills_uuid_of_smi_gpu_by_bus_id(tmp_path):
    root = proc_root(tmp_path, "proc_version_384.98_proprietary.txt", infos=("proc_gpu_information_gtx650.txt",))
    banner = put(tmp_path, "/banner.txt", (FIX / "smi_384.69_gtx1080ti.txt").read_text().replace("00000000:4B:00.0", "00000000:04:00.0"))
    fake_smi(tmp_path / "bin", smi_script(banner, query_cc=FIX / "fail_compute_cap_field.txt", query_cc_exit=2))
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    g = snap.gpus[0]
    assert g.source == "nvidia-smi"
    assert g.uuid == "GPU-e3f822b9-8c5f-95a5-b379-8dfdeefd7758"
    assert g.name == "GeForce GTX 650"  # the banner's truncated "GeForce GTX 108..." gives way to the full name
    assert snap.driver.disagreements == ["/proc/driver/nvidia/version says 384.98 but nvidia-smi says 384.69"]


def test_installed_but_module_not_loaded(tmp_path):
    root = tmp_path / "root"
    put(root, "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    assert snap.driver.state == "module_not_loaded"
    assert snap.gpus == []


def test_smi_cannot_reach_a_loaded_module(tmp_path):
    root = proc_root(tmp_path, "proc_version_565.57.01_open.txt")
    fake_smi(tmp_path / "bin", f'cat "{FIX / "fail_couldnt_communicate.txt"}"\nexit 9')
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    assert snap.driver.state == "smi_failed"
    assert any("cannot reach the driver" in x and "565.57.01" in x for x in snap.driver.disagreements)


# -- WSL -----------------------------------------------------------------------------------------------


def wsl_root(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    put(root, "/usr/lib/wsl/lib/libcuda.so.1")
    return root


def test_wsl_ok(tmp_path):
    root = wsl_root(tmp_path)
    fake_smi(tmp_path / "bin", smi_script(FIX / "smi_555.52.01_wsl.txt"))
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    d = snap.driver
    assert d.state == "ok"
    assert d.wsl_libcuda == "/usr/lib/wsl/lib/libcuda.so.1"
    assert (d.version, d.cuda_version, d.source) == ("555.99", "12.5", "nvidia-smi")
    assert d.linux_driver_in_wsl is False
    assert d.disagreements == []  # NVIDIA-SMI 555.52.01 vs Windows driver 555.99 is normal in WSL


def test_wsl_with_linux_driver_installed(tmp_path):
    root = wsl_root(tmp_path)
    put(root, "/usr/lib/x86_64-linux-gnu/libcuda.so.1")
    snap = run_probe_allow_unknown(ctx_for(root, tmp_path / "bin"))
    assert snap.driver.linux_driver_in_wsl is True


def test_wsl_link_into_wsl_lib_is_fine(tmp_path):
    root = wsl_root(tmp_path)
    link = root / "usr/lib/x86_64-linux-gnu/libcuda.so.1"
    link.parent.mkdir(parents=True)
    os.symlink("/usr/lib/wsl/lib/libcuda.so.1", link)
    snap = run_probe_allow_unknown(ctx_for(root, tmp_path / "bin"))
    assert snap.driver.linux_driver_in_wsl is False


def test_wsl_smi_failure_is_smi_failed_not_module(tmp_path):
    root = wsl_root(tmp_path)
    fake_smi(tmp_path / "bin", f'cat "{FIX / "fail_wsl_driver_not_loaded.txt"}"\nexit 9')
    snap = run_probe(ctx_for(root, tmp_path / "bin"))
    assert snap.driver.state == "smi_failed"
    assert "Failed to properly shut down NVML: Driver Not Loaded" in snap.driver.messages


def test_wsl_nvidia_smi_found_outside_path(tmp_path):
    root = wsl_root(tmp_path)
    fake_smi(root / "usr/lib/wsl/lib", smi_script(FIX / "smi_545.46_wsl_cuda_err.txt"))
    snap = run_probe(ctx_for(LiveLikeRoot(root), tmp_path / "bin"))
    d = snap.driver
    assert d.nvidia_smi == "ok"
    assert (d.version, d.cuda_version) == ("546.80", None)
    assert any(e.source.endswith("/usr/lib/wsl/lib/nvidia-smi") for e in d.evidence)


def test_image_root_never_runs_its_wsl_nvidia_smi(tmp_path):
    root = wsl_root(tmp_path)
    marker = tmp_path / "ran"
    fake_smi(root / "usr/lib/wsl/lib", f'touch "{marker}"')
    snap = run_probe_allow_unknown(ctx_for(root, tmp_path / "bin"))
    assert not marker.exists()
    assert snap.driver.nvidia_smi == "missing"


# -- NVML through a fake pynvml ----------------------------------------------------------------------------


_FAKE_PYNVML = """\
# A fake pynvml (nvidia-ml-py's module), written by tests/test_probe_nvidia.py: the calls and answers of the real
# bindings as the probe uses them, with the NVML error codes of nvml.h. envdoctor asks it from a child process.
import json, os, time, types
CONF = json.loads({conf!r})
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18
_TEXTS = {{3: "Not Supported", 9: "Driver Not Loaded", 12: "NVML Shared Library Not Found",
          18: "RM has detected an NVML/RM version mismatch."}}


class NVMLError(Exception):
    def __init__(self, value):
        super().__init__(value)
        self.value = value

    def __str__(self):
        return _TEXTS.get(self.value, "NVML error %s" % self.value)


def _count(what):
    path = CONF["calls"]
    calls = json.load(open(path)) if os.path.exists(path) else {{"init": 0, "shutdown": 0}}
    calls[what] += 1
    json.dump(calls, open(path, "w"))


def nvmlInit():
    _count("init")
    if CONF["hang"]:
        deadline = time.monotonic() + 30
        while not os.path.exists(CONF["hang"]) and time.monotonic() < deadline:
            time.sleep(0.05)
    if CONF["crash"]:
        import ctypes
        ctypes.string_at(0)  # a segfault, as inside a broken libnvidia-ml
    if CONF["init_error"] is not None:
        raise NVMLError(CONF["init_error"])


def nvmlShutdown():
    _count("shutdown")


DEVICES = CONF["devices"]
nvmlSystemGetDriverVersion = lambda: CONF["driver"]
nvmlSystemGetCudaDriverVersion_v2 = lambda: CONF["cuda"]
nvmlDeviceGetCount = lambda: len(DEVICES)
class _HandleError(NVMLError):
    def __str__(self):
        return CONF["handle_error"][1]


def nvmlDeviceGetHandleByIndex(i):
    if CONF["handle_error"] and i == CONF["handle_error"][0]:
        raise _HandleError(999)
    return DEVICES[i]


nvmlDeviceGetName = lambda h: h["name"]
nvmlDeviceGetCudaComputeCapability = lambda h: tuple(h["cc"])
nvmlDeviceGetMemoryInfo = lambda h: types.SimpleNamespace(total=h["mem"], free=0, used=0)
nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=h["bus"].encode())
nvmlDeviceGetUUID = lambda h: h["uuid"]


def nvmlDeviceGetSerial(h):
    raise NVMLError(3)
"""


class FakeNvml:
    """A pynvml module file in its own folder (put on the child's PYTHONPATH by nvml_ctx); ``calls`` counts
    nvmlInit / nvmlShutdown as the child made them; ``handle_error`` (index, text): that GPU's handle raises an
    NVMLError whose text is ``text``."""

    def __init__(self, folder: Path, init_error=None, driver="550.54.15", cuda=12040, devices=None,
                 hang: Path = None, crash: bool = False, handle_error=None):
        self.dir = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._calls = folder / "calls.json"
        conf = {"init_error": init_error, "driver": driver, "cuda": cuda, "devices": devices or [],
                "hang": str(hang) if hang else "", "crash": crash, "calls": str(self._calls),
                "handle_error": list(handle_error) if handle_error else None}
        (folder / "pynvml.py").write_text(_FAKE_PYNVML.format(conf=json.dumps(conf)))

    @property
    def calls(self):
        return json.loads(self._calls.read_text()) if self._calls.exists() else {"init": 0, "shutdown": 0}


def make_pynvml(tmp_path: Path, **kw) -> FakeNvml:
    return FakeNvml(tmp_path / "pyfake", **kw)


H200 = {"name": "NVIDIA H200", "cc": [9, 0], "mem": 150754820096, "bus": "00000000:18:00.0",
        "uuid": "GPU-cccccccc-0000-0000-0000-000000000000"}


def nvml_ctx(tmp_path, monkeypatch, fake, root: Path = None, timeout: float = 5.0):
    root = root or (tmp_path / "root")
    root.mkdir(exist_ok=True)
    # a machine with an NVIDIA driver installed has its device node; NVML is only asked where one exists
    (root / "dev").mkdir(exist_ok=True)
    (root / "dev" / "nvidiactl").write_text("")
    ctx = ctx_for(LiveLikeRoot(root), tmp_path / "bin", timeout=timeout, use_nvml=True)
    if fake is not None:
        ctx.env["PYTHONPATH"] = str(fake.dir)
    return ctx


def test_nvml_ok_and_nvidia_smi_not_needed(tmp_path, monkeypatch):
    fake = make_pynvml(tmp_path, devices=[H200, dict(H200, bus="00000000:19:00.0", uuid="GPU-cccccccc-0000-0000-0000-000000000001")])
    marker = tmp_path / "smi-ran"
    fake_smi(tmp_path / "bin", f'touch "{marker}"')
    snap = run_probe(nvml_ctx(tmp_path, monkeypatch, fake))
    d = snap.driver
    assert (d.state, d.nvml, d.nvidia_smi, d.version, d.cuda_version, d.source) == (
        "ok", "ok", "not_run", "550.54.15", "12.4", "nvml")
    assert [(g.index, g.name, g.compute_capability, g.memory_total_mib, g.bus_id, g.serial, g.source) for g in snap.gpus] == [
        (0, "NVIDIA H200", "9.0", 143771, "00000000:18:00.0", "", "nvml"),
        (1, "NVIDIA H200", "9.0", 143771, "00000000:19:00.0", "", "nvml"),
    ]
    assert fake.calls == {"init": 1, "shutdown": 1}
    assert not marker.exists()
    assert "nvml" in [e.source for e in d.evidence]


@pytest.mark.parametrize(
    "code, nvml_status, state",
    [(12, "missing", "not_installed"), (9, "failed", "module_not_loaded"), (18, "mismatch", "version_mismatch")],
)
def test_nvml_init_errors(tmp_path, monkeypatch, code, nvml_status, state):
    fake = make_pynvml(tmp_path, init_error=code)
    snap = run_probe(nvml_ctx(tmp_path, monkeypatch, fake))
    assert snap.driver.nvml == nvml_status
    assert snap.driver.state == state
    assert snap.driver.nvidia_smi == "missing"  # NVML did not answer, so nvidia-smi was looked for


def test_nvml_driver_not_loaded_message_is_kept(tmp_path, monkeypatch):
    snap = run_probe(nvml_ctx(tmp_path, monkeypatch, make_pynvml(tmp_path, init_error=9)))
    assert "NVML nvmlInit: Driver Not Loaded" in snap.driver.messages


def test_nvml_zero_devices(tmp_path, monkeypatch):
    fake = make_pynvml(tmp_path, devices=[])
    snap = run_probe(nvml_ctx(tmp_path, monkeypatch, fake))
    assert snap.driver.nvml == "no_devices"
    assert snap.driver.state == "no_devices"
    assert snap.driver.version == "550.54.15"
    assert fake.calls["shutdown"] == 1


def test_nvml_and_proc_disagree(tmp_path, monkeypatch):
    root = proc_root(tmp_path, "proc_version_565.57.01_open.txt", infos=())
    fake = make_pynvml(tmp_path, devices=[H200])
    snap = run_probe(nvml_ctx(tmp_path, monkeypatch, fake, root=root))
    assert "NVML says 550.54.15 but /proc/driver/nvidia/version says 565.57.01" in snap.driver.disagreements
    assert snap.driver.version == "550.54.15"
    assert snap.driver.kernel_module_version == "565.57.01"


def test_pynvml_not_importable(tmp_path, monkeypatch):
    broken = tmp_path / "pybroken"
    broken.mkdir()
    (broken / "pynvml.py").write_text("raise ImportError('no NVML bindings (the test)')\n")
    ctx = nvml_ctx(tmp_path, monkeypatch, None)
    ctx.env["PYTHONPATH"] = str(broken)
    snap = run_probe(ctx)
    assert snap.driver.nvml == "missing"
    assert snap.driver.state == "not_installed"


def test_nvml_hang_costs_at_most_the_timeout(tmp_path, monkeypatch):
    release = tmp_path / "release"
    fake = make_pynvml(tmp_path, devices=[H200], hang=release)
    marker = tmp_path / "smi-ran"
    fake_smi(tmp_path / "bin", f'touch "{marker}"')
    try:
        start = time.monotonic()
        snap = run_probe(nvml_ctx(tmp_path, monkeypatch, fake, timeout=0.5))
        assert time.monotonic() - start < 0.5 + 2.0
    finally:
        release.write_text("")
    assert snap.driver.nvml == "timeout"
    assert snap.driver.nvidia_smi == "not_run"
    assert not marker.exists()
    assert snap.driver.state == "smi_failed"


def test_nvml_not_used_on_an_image_root(tmp_path, monkeypatch):
    fake = make_pynvml(tmp_path, devices=[H200])
    root = tmp_path / "root"
    root.mkdir()
    ctx = ctx_for(root, tmp_path / "bin", use_nvml=True)
    ctx.env["PYTHONPATH"] = str(fake.dir)
    snap = run_probe(ctx)
    assert fake.calls["init"] == 0
    assert snap.driver.nvml == "not_run"


def test_unknown_state_raises_probe_unknown_after_filling(tmp_path, monkeypatch):
    # pynvml present but failing for another reason, nothing else on the machine
    fake = make_pynvml(tmp_path, init_error=3)
    snap = Snapshot()
    with pytest.raises(ProbeUnknown):
        nvidia.probe(nvml_ctx(tmp_path, monkeypatch, fake), snap)
    assert snap.driver.state == "unknown"
    assert snap.driver.nvml == "failed"


def test_nvml_not_tried_without_a_kernel_interface(tmp_path, monkeypatch):
    """No /dev/nvidia*, /proc/driver/nvidia, /sys/module/nvidia or /dev/dxg: NVML is not asked at all."""
    fake = make_pynvml(tmp_path, devices=[H200])
    root = tmp_path / "root"
    root.mkdir()
    ctx = ctx_for(LiveLikeRoot(root), tmp_path / "bin", use_nvml=True)
    ctx.env["PYTHONPATH"] = str(fake.dir)
    snap = run_probe_allow_unknown(ctx)
    assert snap.driver.nvml == "not_run" and fake.calls["init"] == 0
    assert snap.driver.state == "not_installed"
    assert any(e.source == "nvml" and "not tried" in e.excerpt for e in snap.driver.evidence)


def test_a_segfault_inside_nvml_ends_only_the_query_process(tmp_path, monkeypatch):
    """A libnvidia-ml that crashes in nvmlInit: the probe says so and nvidia-smi still answers."""
    fake = make_pynvml(tmp_path, devices=[H200], crash=True)
    snap = run_probe_allow_unknown(nvml_ctx(tmp_path, monkeypatch, fake))
    assert snap.driver.nvml == "failed" and fake.calls["init"] == 1
    assert any("NVML crashed the query process (SIGSEGV)" in m for m in snap.driver.messages), snap.driver.messages
    assert snap.driver.nvidia_smi != "not_run"  # NVML gave no answer: nvidia-smi was looked for


def test_check_survives_a_segfault_inside_nvml(tmp_path):
    """The live path, through the CLI: a loaded driver (/proc/driver/nvidia in a private mount namespace) and a
    pynvml whose nvmlInit segfaults. envdoctor check still reports, saying NVML crashed; before, it died with 139."""
    import shutil
    import subprocess

    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1) on this machine")
    fake = make_pynvml(tmp_path, devices=[H200], crash=True)
    script = ("mount -t tmpfs none /proc/driver 2>/dev/null || mount -t tmpfs none /proc/driver || exit 99\n"
              "mkdir -p /proc/driver/nvidia\n"
              f"exec '{sys.executable}' -m envdoctor check --format json\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(fake.dir), os.environ.get("PYTHONPATH", "")]),
               ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script], env=env,
                          capture_output=True, text=True, timeout=120)
    if proc.returncode == 99:
        pytest.skip(f"a private mount namespace is refused here: {proc.stderr.strip()[:200]}")
    assert proc.returncode in (0, 1), (proc.returncode, proc.stderr[-2000:])
    data = json.loads(proc.stdout)
    drv = data["snapshot"]["driver"] if "snapshot" in data else data["driver"]
    assert drv["nvml"] == "failed" and fake.calls["init"] == 1, drv
    assert any("NVML crashed the query process (SIGSEGV)" in m for m in drv["messages"]), drv["messages"]
