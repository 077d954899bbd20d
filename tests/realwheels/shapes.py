#!/usr/bin/env python3
"""Keep the real stacks' shapes for the fast suite: for each stack built by stacks.py, the `python` and `binaries`
sections of envdoctor's snapshot (every CUDA binary's targets, DT_NEEDED and the file each loads, as envdoctor's
simulation found it and as the real loader confirmed: the script refuses a stack where they differ), what each
import of the stack did in the real process, its `pip freeze`, and each CUDA binary's sha256. Paths start at
"/venv" (the stack's folder). A few tens of kilobytes a stack, written to tests/fixtures/realwheels/NAME.json.

    python tests/realwheels/shapes.py [--dir DIR]
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.realwheels.ldtrace import compare, trace  # noqa: E402
from tests.realwheels.stacks import STACKS, default_dir, ready  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "fixtures" / "realwheels"


def _sha256(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _relative(value, prefix: str):
    if isinstance(value, str):
        return value.replace(prefix, "/venv")
    if isinstance(value, list):
        return [_relative(v, prefix) for v in value]
    if isinstance(value, dict):
        return {k: _relative(v, prefix) for k, v in value.items()}
    return value


def shape(root: Path, name: str) -> dict:
    stack = STACKS[name]
    python = str(root / name / "bin" / "python")
    with tempfile.TemporaryDirectory() as tmp:
        lib = Path(tmp) / "libcuda.so.1"
        subprocess.run(["gcc", "-shared", "-fPIC", "-Wl,-soname,libcuda.so.1", "-o", str(lib), "-x", "c", "-"],
                       input="int cuInit(unsigned f) { return 100; }\n", text=True, check=True)
        env = dict(os.environ, ENVDOCTOR_NO_CACHE="1", LD_LIBRARY_PATH=tmp)
        env.pop("VIRTUAL_ENV", None)
        snap = json.loads(subprocess.run([sys.executable, "-m", "envdoctor", "probe", "--python", python, "--format",
                                          "json", "--no-redact"], capture_output=True, text=True, env=env,
                                         check=True).stdout)
        tr = trace(python, stack.imports, env=env)
    compared, diffs = compare(snap, tr)
    if diffs:
        raise SystemExit(f"{name}: the simulation and the real loader differ: {diffs[:5]}")
    prefix = str(root / name)
    binaries = snap["binaries"]
    for b in binaries["binaries"]:
        b["sha256"] = _sha256(b["path"])
    binaries["evidence"] = []
    return _relative({
        "stack": name, "install": stack.install, "imports": tr.results, "fits": stack.fits, "misfits": stack.misfits,
        "sonames_compared": compared, "made": datetime.date.today().isoformat(),
        "freeze": (root / name / ".complete").read_text().split(),
        "python": {k: snap["python"][k] for k in ("version", "packages", "frameworks", "sys_path", "prefix", "kind")},
        "binaries": binaries}, prefix)


MAIN = ("torch", "xformers", "bitsandbytes", "jax", "jaxlib", "tensorflow", "jax-cuda12-plugin", "jax-cuda13-plugin",
        "onnxruntime-gpu", "cupy-cuda12x")


def sources() -> str:
    """tests/fixtures/realwheels/SOURCES.toml: where each shape came from."""
    out = ["# Shapes of real CUDA stacks installed from the package index (tests/realwheels/stacks.py) and kept by",
           "# tests/realwheels/shapes.py: envdoctor's snapshot sections python and binaries, each CUDA binary's sha256,",
           "# the stack's pip freeze and what each import did in the real process; every soname agreed with the real",
           "# loader (LD_DEBUG=libs,files).", ""]
    for p in sorted(OUT.glob("*.json")):
        d = json.loads(p.read_text())
        main = [x for x in d["freeze"] if x.split("==")[0].lower() in MAIN]
        did = "; ".join(f"{k} {v[:60]}" for k, v in d["imports"].items()).replace("\\", "/").replace('"', "'")
        out += [f'["{p.name}"]',
                f'source = "pip install {" ".join(d["install"])} on {d["made"]} into a venv of CPython '
                f'{d["python"]["version"]} ({", ".join(main)}), read by envdoctor probe and the real loader"',
                f'note = "{len(d["binaries"]["binaries"])} CUDA binaries, {d["sonames_compared"]} sonames compared with '
                f'LD_DEBUG, no difference; imports: {did}"', ""]
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=default_dir())
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    for name in ready(args.dir):
        data = shape(args.dir, name)
        (OUT / f"{name}.json").write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"{name}: {len(data['binaries']['binaries'])} CUDA binaries, {data['sonames_compared']} sonames agreed "
              f"with the real loader")
    (OUT / "SOURCES.toml").write_text(sources())
    return 0


if __name__ == "__main__":
    sys.exit(main())
