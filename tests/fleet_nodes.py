"""Fake fleet nodes for the fleet tests and the benchmark: the driver and GPU part of each snapshot comes from the
real NVIDIA probe run on a fake root with real nvidia-smi outputs and /proc files (tests/fixtures), the Python part
from tests/snapfactory.py."""
from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path
from typing import Dict, Optional

from envdoctor.fsroot import Root
from envdoctor.probes import nvidia
from envdoctor.probes.base import ProbeContext
from envdoctor.snapshot import Snapshot
from tests.fakes import make_exe, write
from tests.snapfactory import machine, torch

FIX = Path(__file__).parent / "fixtures"
NV, MACHINE = FIX / "nvidia", FIX / "machine"

A100_580 = {"banner": NV / "smi_580.126.09_2x_a100.txt"}
A10G_535 = {"banner": NV / "smi_535.247.01_a10g.txt"}
DRIVER_470 = {"banner": NV / "smi_470.63.01_processes.txt"}
# kernel module 580.173.02 still loaded after an upgrade to 580.178: nvidia-smi says "version mismatch"
REBOOT_580 = {"fail": MACHINE / "smi_mismatch_nvml_580.178_truenas_19.txt", "exit": 18,
              "proc": MACHINE / "proc_version_580.173.02_truenas_19.txt"}
# nvidia-smi lists the 2 A100s, /proc/driver/nvidia/gpus lists 3 bound GPUs
HIDDEN_580 = dict(A100_580, proc_gpus=[NV / "proc_gpu_information_l4.txt"] * 3)

_cache: Dict[str, Snapshot] = {}


def nvidia_part(spec: dict) -> Snapshot:
    """A snapshot whose driver and GPUs the real NVIDIA probe found on a fake machine described by spec."""
    key = json.dumps({k: str(v) for k, v in spec.items()}, sort_keys=True)
    if key not in _cache:
        tmp = Path(tempfile.mkdtemp(prefix="envdoctor-fleet-node-"))
        root, bindir = tmp / "root", tmp / "bin"
        root.mkdir()
        if "banner" in spec:
            make_exe(bindir / "nvidia-smi", f'case "$1" in --query-gpu=*) echo "unexpected"; exit 2;; esac\n'
                                            f'cat "{spec["banner"]}"')
        else:
            make_exe(bindir / "nvidia-smi", f'cat "{spec["fail"]}"\nexit {spec["exit"]}')
        if "proc" in spec:
            write(root / "proc/driver/nvidia/version", Path(spec["proc"]).read_text())
        for i, info in enumerate(spec.get("proc_gpus", ())):
            write(root / f"proc/driver/nvidia/gpus/0000:0{i}:00.0/information", Path(info).read_text())
        ctx = ProbeContext(root=Root(root), env={"PATH": f"{bindir}:/usr/bin:/bin", "LANG": "C"}, timeout=5.0,
                           use_nvml=False)
        snap = Snapshot()
        nvidia.probe(ctx, snap)
        _cache[key] = snap
    return copy.deepcopy(_cache[key])


def node(name: str, created: str, gpu: dict = A100_580, torch_version: str = "2.8.0+cu128",
         drop_gpus: int = 0) -> dict:
    """One node's snapshot dict, as `envdoctor probe --format json --fleet` writes it."""
    cuda = torch_version.split("+cu")[1] if "+cu" in torch_version else None
    snap = machine(frameworks=[torch(torch_version, cuda=f"{cuda[:-1]}.{cuda[-1]}" if cuda else None)])
    part = nvidia_part(gpu)
    snap.driver, snap.gpus = part.driver, part.gpus[: len(part.gpus) - drop_gpus]
    snap.platform.hostname = name
    snap.created = created
    return snap.to_dict()


def write_nodes(folder: Path, nodes, indent: Optional[int] = 2) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for data in nodes:
        (folder / f"{data['platform']['hostname']}.json").write_text(json.dumps(data, indent=indent))
    return folder
