"""What the binaries probe costs: `envdoctor check` on a synthetic environment of >= 2 GB of CUDA shared
objects (>= 10,000 fatbin entries), cold (empty envdoctor cache) and warm, as a ratio to a plain `check` on an
environment of the same shape without CUDA code.

    python benchmarks/binaries_scan.py [--files 25] [--entries 500] [--payload-kib 168] [--repeat 3] [--drop-caches]

Rows: the plain environment checked by an envdoctor whose probe stages leave the binaries probe out (the check
as it was), with an empty cache, and again (the baseline: a repeated plain check); then the CUDA environment cold
and warm. Wall times are the median and the fastest of --repeat runs, each as a ratio to the baseline's; the probe's own time is the duration in the snapshot.

The CUDA files are `--files` sparse copies (`cp --sparse=always`: the zero payloads take no disk) of one real ELF
shared object built here with gcc that carries an `.nv_fatbin` section of `--entries` entries with `--payload-kib`
KiB payloads each (added with objcopy): distinct files (inodes) that the probe opens and maps one by one. The plain
environment holds as many shared objects without device code. Both venvs also see the interpreter's own
site-packages (no `include-system-site-packages = false`), as a real venv made with --system-site-packages would. `--drop-caches` (root) empties the page cache before each cold run; without
it "cold" means an empty envdoctor cache on a warm page cache.

Measured 2026-12-01 on the project's 2-core machine shared with other jobs (wall times are noisy there; the
probe's own time is steadier), --repeat 9, 25 files x 86.1 MB = 2.15 GB, 12,500 entries, 175 shared objects in all
(the interpreter's own site-packages included):

    plain check, no binaries probe     median 0.56 s x1.13, min 0.38 s x0.93
    plain check, empty cache           median 0.76 s x1.51, min 0.37 s x0.91  (probe 67.5 ms)
    plain check (the baseline)         median 0.50 s x1.00, min 0.40 s x1.00  (probe 13.8 ms)
    cold check (CUDA env, empty cache) median 1.18 s x2.35, min 0.69 s x1.71  (probe 442.9 ms)
    warm check (CUDA env, cached)      median 0.65 s x1.30, min 0.38 s x0.94  (probe 68.8 ms)
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def _fatbin_blob(entries: int, payload: int) -> bytes:
    """One fatbin container in the layout envdoctor/binaries/fatbin.py documents: cubins for sm_80 / sm_90."""
    body = bytearray()
    for i in range(entries):
        arch = (80, 86, 90)[i % 3]
        head = struct.pack("<HHIQIIHHIIIQQQ", 2, 0x0101, 64, payload, 0, 0, 8, 1, arch, 0, 0, 0x11, 0, 0)
        body += head
        body += bytes(payload)
    return struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(body)) + bytes(body)


def _build(work: Path, files: int, entries: int, payload: int):
    gcc = shutil.which("gcc") or shutil.which("cc")
    objcopy = shutil.which("objcopy")
    if not gcc or not objcopy:
        sys.exit("needs gcc and objcopy")
    src = work / "plain.c"
    src.write_text("int plain(void) { return 1; }\n")
    plain = work / "plain.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(plain), str(src)], check=True)
    blob = work / "fatbin.bin"
    blob.write_bytes(_fatbin_blob(entries, payload))
    cuda = work / "cuda.so"
    subprocess.run([objcopy, "--add-section", f".nv_fatbin={blob}", str(plain), str(cuda)], check=True)
    blob.unlink()
    envs = {}
    for kind, source in (("cuda", cuda), ("plain", plain)):
        venv = work / f"venv-{kind}"
        py = f"python{sys.version_info[0]}.{sys.version_info[1]}"
        sp = venv / "lib" / py / "site-packages"
        pkg = sp / f"synthetic_{kind}"
        pkg.mkdir(parents=True)
        (venv / "bin").mkdir()
        os.symlink(sys.executable, venv / "bin" / "python")
        (venv / "pyvenv.cfg").write_text(f"home = {Path(sys.executable).parent}\n")
        rows = []
        for i in range(files):
            dest = pkg / f"_ops{i}.so"
            subprocess.run(["cp", "--sparse=always", str(source), str(dest)], check=True)
            rows.append(f"synthetic_{kind}/_ops{i}.so,,")
        info = sp / f"synthetic_{kind}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: synthetic-{kind}\nVersion: 1.0\n")
        (info / "RECORD").write_text("\n".join(rows + [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]) + "\n")
        envs[kind] = venv
    return envs, cuda.stat().st_size


# `envdoctor check` with the binaries probe left out of the probe stages: the check as it was before it
WITHOUT_PROBE = (
    "import sys, envdoctor.probes as p; _s = p._stages; "
    "p._stages = lambda: [[x for x in st if x[0] != 'binaries'] for st in _s()]; "
    "import envdoctor.cli as c; sys.argv = ['envdoctor'] + sys.argv[1:]; c.main()"
)


def _check(venv: Path, cache: Path, with_probe: bool = True) -> tuple:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    env["ENVDOCTOR_CACHE_DIR"] = str(cache)
    start = [sys.executable, "-m", "envdoctor"] if with_probe else [sys.executable, "-c", WITHOUT_PROBE]
    t = time.perf_counter()
    proc = subprocess.run(start + ["check", "--python", str(venv / "bin" / "python"), "--format", "json"],
                          capture_output=True, text=True, env=env, cwd=str(REPO))
    wall = time.perf_counter() - t
    if proc.returncode not in (0, 1):
        sys.exit(f"check failed: {proc.stderr.strip()[:400]}")
    snap = json.loads(proc.stdout).get("snapshot", {})
    probe = next((p for p in snap.get("probes", []) if p.get("name") == "binaries"), {"duration_ms": 0.0})
    bn = snap.get("binaries", {})
    entries = sum(b.get("entries", 0) for b in bn.get("binaries", []))
    return wall, probe.get("duration_ms"), bn.get("scanned"), entries, bn.get("from_cache")


def _drop_caches(enabled: bool) -> None:
    if enabled:
        subprocess.run(["sync"], check=False)
        Path("/proc/sys/vm/drop_caches").write_text("3\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--files", type=int, default=25)
    ap.add_argument("--entries", type=int, default=500)
    ap.add_argument("--payload-kib", type=int, default=168)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--drop-caches", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="envdoctor-bench-") as tmp:
        work = Path(tmp)
        envs, size = _build(work, args.files, args.entries, args.payload_kib * 1024)
        total = size * args.files
        print(f"synthetic env: {args.files} CUDA shared objects x {size / 1e6:.1f} MB = {total / 1e9:.2f} GB, "
              f"{args.files * args.entries} fatbin entries; plain env: {args.files} shared objects without device code")
        before, plain, plain_warm, cold, warm = [], [], [], [], []
        for i in range(args.repeat):
            before.append(_check(envs["plain"], work / f"cache-before-{i}", with_probe=False))
            plain.append(_check(envs["plain"], work / f"cache-plain-{i}"))
            plain_warm.append(_check(envs["plain"], work / f"cache-plain-{i}"))
            cache = work / f"cache-cuda-{i}"
            _drop_caches(args.drop_caches)
            cold.append(_check(envs["cuda"], cache))
            warm.append(_check(envs["cuda"], cache))
        assert cold[0][3] == args.files * args.entries, f"read {cold[0][3]} entries"
        assert warm[0][4] == warm[0][2], f"the warm run did not answer from the cache: {warm[0]}"
        base = statistics.median(w for w, *_ in plain_warm)
        base_min = min(w for w, *_ in plain_warm)
        for label, runs in (("plain check, no binaries probe", before), ("plain check, empty cache", plain),
                            ("plain check (the baseline)", plain_warm), ("cold check (CUDA env, empty cache)", cold),
                            ("warm check (CUDA env, cached)", warm)):
            wall = statistics.median(w for w, *_ in runs)
            fastest = min(w for w, *_ in runs)
            probe = statistics.median(p for _, p, *_ in runs)
            print(f"{label:38s} median {wall:5.2f} s x{wall / base:4.2f}, min {fastest:5.2f} s x{fastest / base_min:4.2f}"
                  f"  (binaries probe {probe:.1f} ms, "
                  f"{runs[0][2] or 0} files, {runs[0][3]} entries, {runs[0][4] or 0} from cache)")


if __name__ == "__main__":
    main()
