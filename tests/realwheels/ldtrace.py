"""What the real dynamic loader opened: glibc's LD_DEBUG=libs,files record of a Python process importing a stack,
as data to compare with envdoctor's loader simulation (snapshot.binaries).

glibc prints, for every DT_NEEDED it has to map (one not matched by a loaded object's name or DT_SONAME):

    file=libtorch_python.so [0];  needed by /…/torch/_C.cpython-311-x86_64-linux-gnu.so [0]
    find library=libtorch_python.so [0]; searching
     search path=/…/torch/lib		(RUNPATH from file /…/torch/_C.cpython-311-x86_64-linux-gnu.so)
      trying file=/…/torch/lib/libtorch_python.so
    file=libtorch_python.so [0];  generating link map

and for a dlopen by path `file=/…/x.so [0];  dynamically loaded by …` then `generating link map`. A NEEDED entry
that gets no `needed by` line was satisfied by an object already loaded; one whose search ends without a link map
was not found (the dlopen fails: "cannot open shared object file").
"""
from __future__ import annotations

import os
import re
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional, Tuple

_LINE = re.compile(r"^\s*\d+:\s?(.*)$")
_NEEDED = re.compile(r"^file=(\S+) \[\d+\];\s+needed by (\S+) \[\d+\]")
_DYN = re.compile(r"^file=(\S+) \[\d+\];\s+dynamically loaded by (\S+) \[\d+\]")
_MAP = re.compile(r"^file=(\S+) \[\d+\];\s+generating link map")
_TRY = re.compile(r"^\s*trying file=(\S+)")


class Trace(NamedTuple):
    needed: Dict[Tuple[str, str], Optional[str]]  # (needer's real path, soname) -> real path opened, None: not found
    loaded: List[str]  # real paths of every object mapped, in order
    by_name: Dict[str, str]  # a name an object was mapped under (soname, or basename of a path) -> its real path
    results: Dict[str, str]  # module -> "ok" or the exception's text
    log: str


def _real(p: str) -> str:
    return os.path.realpath(p)


def parse(text: str) -> Tuple[Dict[Tuple[str, str], Optional[str]], List[str], Dict[str, str]]:
    needed: Dict[Tuple[str, str], Optional[str]] = {}
    loaded: List[str] = []
    by_name: Dict[str, str] = {}
    pending: Optional[Tuple[str, str]] = None  # (needer, name) being searched
    tried: Optional[str] = None
    for raw in text.splitlines():
        m = _LINE.match(raw)
        if not m:
            continue
        line = m.group(1)
        n = _NEEDED.match(line)
        if n:
            if pending is not None and pending not in needed:
                needed[pending] = None  # the previous search ended without a map: not found
            pending, tried = (_real(n.group(2)), n.group(1)), None
            continue
        d = _DYN.match(line)
        if d:
            if pending is not None and pending not in needed:
                needed[pending] = None
            pending, tried = None, None
            continue
        t = _TRY.match(line)
        if t:
            tried = t.group(1)
            continue
        g = _MAP.match(line)
        if g:
            name = g.group(1)
            path = name if "/" in name else tried
            if path is None:
                continue
            real = _real(path)
            loaded.append(real)
            by_name.setdefault(os.path.basename(name), real)
            if pending is not None and pending[1] == name:
                needed[pending] = real
                pending = None
    if pending is not None and pending not in needed:
        needed[pending] = None
    return needed, loaded, by_name


PROGRAM = """
import ctypes, importlib, json, os, sys, sysconfig
out = {}
for name in sys.argv[2:]:
    try:
        if name.startswith("dlopen:"):  # what a framework dlopens later by its path (a provider, a plugin)
            ctypes.CDLL(os.path.join(sysconfig.get_paths()["purelib"], name[len("dlopen:"):]))
        else:
            importlib.import_module(name)
        out[name] = "ok"
    except BaseException as exc:
        out[name] = f"{type(exc).__name__}: {exc}"
open(sys.argv[1], "w").write(json.dumps(out))
"""


def trace(python: str, imports: List[str], env: Optional[Dict[str, str]] = None, timeout: float = 600) -> Trace:
    """Import `imports` in `python` under LD_DEBUG=libs,files (an entry "dlopen:REL" dlopens site-packages/REL, as
    a framework opens a provider library by its path later); the loader's record and each one's result."""
    import json

    with tempfile.TemporaryDirectory(prefix="envdoctor-ldtrace-") as tmp:
        base = dict(env if env is not None else os.environ)
        base.update(LD_DEBUG="libs,files", LD_DEBUG_OUTPUT=str(Path(tmp) / "ld"))
        result = Path(tmp) / "result.json"
        subprocess.run([python, "-c", PROGRAM, str(result), *imports], env=base, timeout=timeout,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp)
        logs = sorted(Path(tmp).glob("ld.*"))
        # the interpreter's own process: the largest record (a child it starts has its own file)
        text = max((p.read_text(errors="replace") for p in logs), key=len, default="")
        results = json.loads(result.read_text()) if result.exists() else {}
    needed, loaded, by_name = parse(text)
    return Trace(needed, loaded, by_name, results, text)


class Difference(NamedTuple):
    binary: str
    soname: str
    real: Optional[str]
    simulated: Optional[str]
    via: str


def compare(snapshot: dict, tr: Trace) -> Tuple[int, List[Difference]]:
    """(sonames compared, differences) between the loader's record and snapshot.binaries for every CUDA binary the
    process mapped. A NEEDED the loader did not search was matched by an object already loaded under that name."""
    mapped = set(tr.loaded)
    compared = 0
    diffs: List[Difference] = []
    for b in (snapshot.get("binaries") or {}).get("binaries", []):
        real_b = _real(b["path"])
        if real_b not in mapped:
            continue
        for lib in b["libraries"]:
            key = (real_b, lib["soname"])
            if key in tr.needed:
                real = tr.needed[key]
            else:
                real = tr.by_name.get(lib["soname"])
                if real is None:
                    continue  # matched by a DT_SONAME the record does not print (a dlopen by path): not comparable
            compared += 1
            sim = _real(lib["path"]) if lib["path"] else None
            if sim != real:
                diffs.append(Difference(b["path"], lib["soname"], real, sim, lib["via"]))
    return compared, diffs
