"""A seeded random walk over real venvs and real files, the referee of envdoctor.cache: after every step, the
snapshot (and the check on a fake GPU) made with the cache must equal the one made with ENVDOCTOR_NO_CACHE=1.

The world: venvs made as venv makes them (bin/python a link to a base interpreter, pyvenv.cfg) from two real base
interpreters where this machine has two (pyenv's and Debian's /usr/bin/python3.11), distributions written as
installers write them (dist-info with METADATA and RECORD, the frameworks' version files), real shared objects
built by nvcc (tests/fixtures/binaries: several of them of one size), a .pth file, kernelspecs, a toolkit folder and
the environment variables the probes read. The steps are what people do to such a machine, including what defeats
a cache keyed on stat facts: a file rewritten in place with the same size and its mtime put back, a .so swapped for
another build of the same size (touch -r), a venv copied, a venv's python link repointed.

A probe run is a new process most of the time (envdoctor.cache.reset), the same process sometimes (check
--kernels judges several interpreters in one run). The fields that may differ are documented in docs/snapshot.md
("Kept answers") and removed by `comparable`: times, `from_cache` counts and the evidence lines saying an answer
is an earlier run's.

The racy window is shortened to RACY_S here (the steps of a walk follow each other within a second; the window
exists for changes within a timestamp's granularity, a few milliseconds on the filesystems this runs on, and every
step takes longer than that): with the 2 s of a real run nothing a walk writes would be kept, and the walk would
test nothing.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

FIX = Path(__file__).parent / "fixtures"
BINFIX = FIX / "binaries"
BANNER = FIX / "nvidia" / "smi_595.71.05_rtx5090.txt"  # real: driver 595.71.05, CUDA 13.2, one GPU
QUERY = "0, NVIDIA A100-SXM4-80GB, 8.0, 81920, 00000000:00:1E.0, GPU-0b0e2a9c-0000-0000-0000-000000000000, 595.71.05\n"
SAME_SIZE = sorted(p for p in BINFIX.glob("*.so") if p.stat().st_size == (BINFIX / "sm80.so").stat().st_size)
RACY_S = 0.05
PY = f"python{sys.version_info[0]}.{sys.version_info[1]}"

# version strings of equal length, so that a rewrite in place keeps the size
TORCH = ["2.5.1+cu124", "2.5.1+cu121", "2.4.1+cu121", "2.6.0+cu126", "2.5.1+cpu00"]
JAX = ["0.4.30", "0.4.31", "0.4.35"]
TF = ["2.17.0", "2.16.1", "2.18.0"]


def bases() -> List[str]:
    """Real base interpreters of this Python version: ours, and Debian's where it is another file."""
    own = os.path.realpath(getattr(sys, "_base_executable", sys.executable))
    out = [own]
    debian = f"/usr/bin/{PY}"
    if os.path.isfile(debian) and os.path.realpath(debian) != own:
        out.append(debian)
    return out


def comparable(snap: Dict[str, Any]) -> Dict[str, Any]:
    """The snapshot without what a kept answer may change (docs/snapshot.md, "Kept answers")."""
    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            out = {}
            for k, v in x.items():
                if k in ("created", "duration_ms", "from_cache"):
                    continue
                if k == "evidence" and isinstance(v, list):
                    v = [e for e in v if not (isinstance(e, dict)
                                              and str(e.get("excerpt", "")).startswith("the answer of an earlier run"))]
                    v = [dict(e, excerpt=_no_hits(e["excerpt"])) if isinstance(e, dict) and isinstance(
                        e.get("excerpt"), str) else e for e in v]
                out[k] = walk(v)
            return out
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x
    return walk(snap)


def _no_hits(text: str) -> str:
    import re

    return re.sub(r"; \d+ answers from the cache$", "", text)


class World:
    def __init__(self, root: Path, rng: random.Random) -> None:
        self.root = root
        self.rng = rng
        self.bases = bases()
        self.venvs: List[Path] = []
        self.aliases: List[Path] = []
        self.extras: List[Path] = []
        self.log: List[str] = []
        bindir = root / "bin"
        bindir.mkdir(parents=True)
        q = root / "query.csv"
        q.write_text(QUERY)
        smi = bindir / "nvidia-smi"
        smi.write_text(f'#!/bin/sh\ncase "$1" in --query-gpu=*) cat "{q}"; exit 0;; esac\ncat "{BANNER}"\n')
        smi.chmod(0o755)
        (root / "home").mkdir()
        (root / "jupyter" / "kernels").mkdir(parents=True)
        self.env: Dict[str, str] = {
            "PATH": f"{bindir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(root / "home"),
            "JUPYTER_PATH": str(root / "jupyter"),
            "ENVDOCTOR_CACHE_DIR": str(root / "cache"),
            "LANG": "C.UTF-8",
        }
        self.target: Optional[str] = None
        self.kernels = False
        self.new_venv()

    # -- the steps ------------------------------------------------------------------------------------------
    def sp(self, venv: Path) -> Path:
        return venv / "lib" / PY / "site-packages"

    def new_venv(self) -> str:
        venv = self.root / f"venv{len(self.venvs)}"
        base = self.rng.choice(self.bases)
        (venv / "bin").mkdir(parents=True)
        self.sp(venv).mkdir(parents=True)
        os.symlink(base, venv / "bin" / "python")
        (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(base)}\ninclude-system-site-packages = false\n"
                                         f"version = {sys.version_info[0]}.{sys.version_info[1]}\n")
        self.venvs.append(venv)
        return f"new {venv.name} from {base}"

    def copy_venv(self) -> str:
        src = self.rng.choice(self.venvs)
        dst = self.root / f"venv{len(self.venvs)}"
        shutil.copytree(src, dst, symlinks=True)  # copy2: mtimes kept, as cp -a
        self.venvs.append(dst)
        return f"copy {src.name} -> {dst.name}"

    def _dist(self, sp: Path, name: str, version: str, files: Dict[str, Any]) -> None:
        info = sp / f"{name.replace('-', '_')}-{version.split('+')[0]}.dist-info"
        info.mkdir(parents=True, exist_ok=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        rows = []
        for rel, body in files.items():
            dest = sp / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(body, Path):
                shutil.copyfile(body, dest)
            else:
                dest.write_text(body)
            rows.append(f"{rel},,")
        rows += [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
        (info / "RECORD").write_text("\n".join(rows) + "\n")

    def _remove(self, sp: Path, name: str) -> bool:
        gone = False
        for info in sp.glob(f"{name.replace('-', '_')}-*.dist-info"):
            shutil.rmtree(info)
            gone = True
        top = sp / {"myext": "myext", "torch": "torch", "jaxlib": "jaxlib", "tensorflow": "tensorflow"}[name]
        if top.exists():
            shutil.rmtree(top)
        return gone

    def install(self) -> str:
        venv = self.rng.choice(self.venvs)
        sp = self.sp(venv)
        kind = self.rng.choice(["torch", "jaxlib", "tensorflow", "myext"])
        self._remove(sp, kind)  # an upgrade or downgrade: the old dist-info goes, as pip does
        if kind == "torch":
            v = self.rng.choice(TORCH)
            cuda = "None" if v.endswith("cpu00") else repr(f"{v[-3:-1]}.{v[-1]}")
            self._dist(sp, "torch", v, {"torch/__init__.py": "",
                                        "torch/version.py": f"__version__ = '{v}'\ncuda = {cuda}\ngit_version = 'x'\n"})
        elif kind == "jaxlib":
            v = self.rng.choice(JAX)
            self._dist(sp, "jaxlib", v, {"jaxlib/__init__.py": "", "jaxlib/version.py": f"__version__ = '{v}'\n"})
        elif kind == "tensorflow":
            v = self.rng.choice(TF)
            self._dist(sp, "tensorflow", v, {
                "tensorflow/__init__.py": "",
                "tensorflow/python/platform/build_info.py":
                    "build_info = {'cuda_version': '12.3', 'cudnn_version': '8', 'is_cuda_build': True}\n"})
        else:
            self._dist(sp, "myext", "1.0", {"myext/__init__.py": "", "myext/_C.so": self.rng.choice(SAME_SIZE)})
        return f"install {kind} in {venv.name}"

    def uninstall(self) -> str:
        venv = self.rng.choice(self.venvs)
        kind = self.rng.choice(["torch", "jaxlib", "tensorflow", "myext"])
        return f"uninstall {kind} from {venv.name}: {self._remove(self.sp(venv), kind)}"

    def _same_size(self, path: Path, data: bytes) -> None:
        """Rewrite `path` in place (same inode) with `data` of the same size, and put its mtime back."""
        st = path.stat()
        assert len(data) == st.st_size
        with open(path, "r+b") as fh:
            fh.write(data)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))

    def rewrite_version(self) -> str:
        files = [p for v in self.venvs for p in [self.sp(v) / "torch" / "version.py"] if p.exists()]
        if not files:
            return "rewrite: no torch"
        path = self.rng.choice(files)
        text = path.read_text()
        old = text.split("'")[1]
        new = self.rng.choice([v for v in TORCH if v != old])
        cuda = "None" if new.endswith("cpu00") else repr(f"{new[-3:-1]}.{new[-1]}")
        body = f"__version__ = '{new}'\ncuda = {cuda}\ngit_version = 'x'\n".encode()
        if len(body) != path.stat().st_size:
            return "rewrite: other size"
        self._same_size(path, body)
        return f"rewrite {path} {old} -> {new}, same size and mtime"

    def swap_so(self) -> str:
        files = [self.sp(v) / "myext" / "_C.so" for v in self.venvs if (self.sp(v) / "myext" / "_C.so").exists()]
        if not files:
            return "swap: no extension"
        path = self.rng.choice(files)
        self._same_size(path, self.rng.choice(SAME_SIZE).read_bytes())
        return f"swap {path} for another build of its size, mtime put back"

    def edit_pth(self) -> str:
        venv = self.rng.choice(self.venvs)
        pth = self.sp(venv) / "extra.pth"
        if pth.exists() and self.rng.random() < 0.4:
            pth.unlink()
            return f"remove {pth}"
        extra = self.root / f"extra{len(self.extras)}"
        if self.rng.random() < 0.5 or not self.extras:
            self._dist(extra, "jaxlib", self.rng.choice(JAX), {"jaxlib/__init__.py": "", "jaxlib/version.py":
                                                                f"__version__ = '{self.rng.choice(JAX)}'\n"})
            self.extras.append(extra)
        else:
            extra = self.rng.choice(self.extras)
        pth.write_text(f"{extra}\n")
        return f"{pth} -> {extra}"

    def repoint(self) -> str:
        venv = self.rng.choice(self.venvs)
        link = venv / "bin" / "python"
        base = self.rng.choice(self.bases)
        link.unlink()
        os.symlink(base, link)
        return f"repoint {link} -> {base}"

    def alias(self) -> str:
        """Another path to a venv's interpreter: a link in another folder (no pyvenv.cfg beside it)."""
        venv = self.rng.choice(self.venvs)
        alias = self.root / "aliases" / f"py{len(self.aliases)}"
        alias.parent.mkdir(exist_ok=True)
        os.symlink(venv / "bin" / "python", alias)
        self.aliases.append(alias)
        return f"alias {alias} -> {venv.name}"

    def toolkit(self) -> str:
        major, minor = self.rng.choice([(12, 4), (12, 6), (11, 8)])
        folder = self.root / f"cuda-{major}.{minor}-{self.rng.randrange(1000)}"
        (folder / "bin").mkdir(parents=True, exist_ok=True)
        (folder / "version.json").write_text(json.dumps({"cuda": {"name": "CUDA SDK", "version": f"{major}.{minor}.0"}}))
        self.env["CUDA_HOME"] = str(folder)
        return f"toolkit {folder}"

    def kernelspec(self) -> str:
        py = self.rng.choice(self.venvs + self.aliases)
        spec = self.root / "jupyter" / "kernels" / f"k{self.rng.randrange(4)}"
        spec.mkdir(parents=True, exist_ok=True)
        (spec / "kernel.json").write_text(json.dumps({"argv": [str(py / "bin" / "python") if py.is_dir() else str(py),
                                                               "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                                                      "display_name": spec.name, "language": "python"}))
        return f"kernelspec {spec.name} -> {py}"

    def set_env(self) -> str:
        var = self.rng.choice(["VIRTUAL_ENV", "PYTHONPATH", "LD_LIBRARY_PATH", "CUDA_HOME", "UNRELATED"])
        if self.rng.random() < 0.35:
            self.env.pop(var, None)
            return f"unset {var}"
        if var == "VIRTUAL_ENV":
            value = str(self.rng.choice(self.venvs))
        elif var == "PYTHONPATH":
            value = str(self.rng.choice(self.extras)) if self.extras else str(self.root / "nowhere")
        elif var == "LD_LIBRARY_PATH":
            value = str(self.sp(self.rng.choice(self.venvs)) / "myext")
        elif var == "CUDA_HOME":
            value = str(self.root / "no-cuda")
        else:
            value = str(self.rng.randrange(10))
        self.env[var] = value
        return f"{var}={value}"

    def choose_target(self) -> str:
        r = self.rng.random()
        if r < 0.15:
            self.target = None
        elif r < 0.3 and self.aliases:
            self.target = str(self.rng.choice(self.aliases))
        else:
            venv = self.rng.choice(self.venvs)
            self.target = str(venv / "bin" / "python") if self.rng.random() < 0.8 else str(venv)
        self.kernels = self.rng.random() < 0.25
        return f"target {self.target} kernels={self.kernels}"

    STEPS: List[Tuple[str, float]] = [
        ("new_venv", 0.5), ("copy_venv", 0.5), ("install", 3), ("uninstall", 1), ("rewrite_version", 1.5),
        ("swap_so", 1.5), ("edit_pth", 1), ("repoint", 1), ("alias", 0.5), ("toolkit", 0.5), ("kernelspec", 0.7),
        ("set_env", 1.5), ("choose_target", 3), ("nothing", 1),
    ]

    def step(self) -> str:
        names = [n for n, _ in self.STEPS]
        name = self.rng.choices(names, weights=[w for _, w in self.STEPS])[0]
        if name in ("new_venv", "copy_venv") and len(self.venvs) >= 6:
            name = "install"
        if name == "nothing":
            return "nothing"
        return getattr(self, name)()


def probe(world: World, cached: bool, new_process: bool) -> Tuple[Dict[str, Any], List[Dict[str, Any]], int]:
    """(the comparable snapshot, the findings on the fake GPU, answers given from the cache) of one probe run."""
    from envdoctor import cache, doctor
    from envdoctor.probes import ProbeContext, run_probes

    env = dict(world.env)
    if not cached:
        env["ENVDOCTOR_NO_CACHE"] = "1"
    if new_process:
        cache.reset()
    snap = run_probes(ProbeContext(env=env, target_python=world.target, kernels=world.kernels, use_nvml=False))
    report = doctor.build_report(snap)
    raw = snap.to_dict()
    kept = json.dumps(raw).count("the answer of an earlier run") + int((raw.get("binaries") or {}).get("from_cache") or 0)
    return comparable(raw), [f.to_dict() for f in report.findings], kept


def walk(root: Path, seed: int, steps: int) -> Dict[str, int]:
    """Run the walk; AssertionError naming the seed, the step and the steps so far at the first difference.
    Returns counts: steps, answers given from the cache, snapshots compared."""
    from envdoctor import cache

    rng = random.Random(seed)
    world = World(root, rng)
    hits = {"steps": 0, "kept_answers": 0, "compared": 0}
    saved = cache.RACY_S
    cache.RACY_S = RACY_S
    try:
        for n in range(steps):
            world.log.append(world.step())
            warm, warm_findings, kept = probe(world, True, new_process=rng.random() < 0.8)
            cold, cold_findings, _ = probe(world, False, new_process=True)
            hits["kept_answers"] += kept
            hits["steps"] += 1
            hits["compared"] += 2
            if warm != cold or warm_findings != cold_findings:
                import difflib

                a = json.dumps(cold, indent=1, sort_keys=True).splitlines()
                b = json.dumps(warm, indent=1, sort_keys=True).splitlines()
                diff = "\n".join(list(difflib.unified_diff(a, b, "no cache", "cache", lineterm=""))[:80])
                raise AssertionError(f"seed {seed}, step {n}: the cache answered otherwise than a cold run\n"
                                     f"steps: {world.log[-25:]}\nenv: {world.env}\n{diff}\n"
                                     f"findings equal: {warm_findings == cold_findings}")
    finally:
        cache.RACY_S = saved
    return hits
