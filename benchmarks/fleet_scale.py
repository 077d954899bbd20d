"""Fleet scale: ingest + report of N synthetic snapshots, N = 1,000 / 10,000 / 100,000 (or as given).

The snapshots are a real probe of this machine (`envdoctor probe --fleet`, with the framework venv of .ci/run when
ENVDOCTOR_TEST_FW_PYTHON is set) with the driver and GPU part of real nvidia-smi outputs (tests/fixtures, through
the real NVIDIA probe on fake roots): 5 driver states x 4 torch builds x 5 Pythons = 100 distinct configurations (plus hidden-GPU nodes),
spread over N nodes, with faults (0.1% cut short, 0.1% future-dated, 0.1% duplicated). Each N runs `envdoctor
fleet ingest FILE.jsonl` then `envdoctor fleet report --format json` in child processes and prints wall time,
throughput and the peak memory of each (the ru_maxrss of the child).

    python benchmarks/fleet_scale.py [N ...]
"""
from __future__ import annotations

import datetime
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.fleet_nodes import A10G_535, A100_580, DRIVER_470, HIDDEN_580, NV, REBOOT_580, nvidia_part  # noqa: E402

# HIDDEN_580 shares A100_580's fingerprint (a hidden GPU is a fault, not a configuration): 100 distinct ones
GPUS = [A100_580, A10G_535, DRIVER_470, REBOOT_580, {"banner": NV / "smi_550.127.05_a10_no_processes.txt"}, HIDDEN_580]
TORCH = [("2.8.0+cu128", "12.8"), ("2.7.1+cu126", "12.6"), ("2.5.1+cu121", "12.1"), ("2.4.0+cu118", "11.8")]
PYTHONS = ["3.10.14", "3.11.9", "3.12.4", "3.12.7", "3.13.1"]


def base_snapshot() -> dict:
    cmd = [sys.executable, "-m", "envdoctor", "probe", "--format", "json", "--fleet"]
    fw = os.environ.get("ENVDOCTOR_TEST_FW_PYTHON")
    if fw and os.path.exists(fw):
        cmd += ["--python", fw]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=ROOT).stdout)


def configurations(base: dict) -> list:
    out = []
    for g in GPUS:
        part = nvidia_part(g).to_dict()
        for tv, cuda in TORCH:
            for py in PYTHONS:
                snap = json.loads(json.dumps(base))
                snap["driver"], snap["gpus"] = part["driver"], part["gpus"]
                snap["python"]["version"] = py
                fws = [f for f in snap["python"]["frameworks"] if f["name"] != "torch"]
                fws.append({"name": "torch", "distribution": "torch", "version": tv, "build": "cuda",
                            "cuda_version": cuda, "cudnn_version": None, "rocm_version": None, "arch_list": None,
                            "requires": [], "requires_python": None, "location": "", "evidence": []})
                snap["python"]["frameworks"] = fws
                out.append(snap)
    return out


def write_fleet(path: Path, n: int, configs: list) -> None:
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(n):
            snap = configs[(i * 7919) % len(configs)]
            snap["platform"]["hostname"] = f"node{i:06d}"
            created = now - datetime.timedelta(hours=1, seconds=i % 3600)
            if i % 1000 == 1:
                created = now + datetime.timedelta(days=30)  # future-dated: a node with a wrong clock
            snap["created"] = created.isoformat()
            line = json.dumps(snap)
            if i % 1000 == 2:
                line = line[: len(line) // 2]  # cut short
            fh.write(line + "\n")
            if i % 1000 == 3:
                fh.write(line + "\n")  # duplicated


def timed(args: list, env: dict) -> tuple:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "envdoctor", *args], capture_output=True, text=True, env=env, cwd=ROOT)
    wall = time.perf_counter() - start
    if p.returncode != 0:
        raise SystemExit(f"envdoctor {' '.join(args)} failed: {p.stderr[-500:]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, (peak if peak > before else before) / 1024, p  # MiB (ru_maxrss is KiB on Linux)


def main(sizes: list) -> None:
    base = base_snapshot()
    configs = configurations(base)
    print(f"{len(configs)} configurations; base snapshot {len(json.dumps(base))} bytes; "
          f"{os.cpu_count()} CPUs (shared: figures vary with the load)")
    print(f"{'N':>8} {'ingest s':>9} {'snap/s':>8} {'MiB':>6} {'report s':>9} {'MiB':>6} {'total s':>8} {'store MiB':>9}")
    prev = None
    for n in sizes:
        with tempfile.TemporaryDirectory(prefix="envdoctor-fleet-bench-") as tmp:
            src = Path(tmp) / "fleet.jsonl"
            write_fleet(src, n, configs)
            env = dict(os.environ, ENVDOCTOR_FLEET_STORE=str(Path(tmp) / "fleet.db"))
            t_in, m_in, p = timed(["fleet", "ingest", str(src)], env)
            t_rep, m_rep, r = timed(["fleet", "report", "--format", "json"], env)
            rep = json.loads(r.stdout)
            size = sum(f.stat().st_size for f in Path(tmp).glob("fleet.db*")) / 2**20
            total = t_in + t_rep
            growth = f"  x{total / prev[1]:.1f} time for x{n / prev[0]:.0f} nodes" if prev else ""
            print(f"{n:>8} {t_in:>9.2f} {n / t_in:>8.0f} {m_in:>6.0f} {t_rep:>9.2f} {m_rep:>6.0f} {total:>8.2f} "
                  f"{size:>9.1f}{growth}   [{p.stdout.strip()}; {rep['configurations']} configurations reported]")
            prev = (n, total)


if __name__ == "__main__":
    main([int(x) for x in sys.argv[1:]] or [1000, 10000, 100000])
