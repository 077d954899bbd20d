"""The process a framework's import makes: which file each DT_NEEDED of its libraries (and of its extensions')
really loads, by glibc's rules in the order the import opens them.

A shared object is judged in a process, not alone. `import torch` dlopens torch/lib/libtorch_global_deps.so,
then (torch 2.x on Linux, when the CUDA runtime loaded) the nvidia-* libraries by path from the wheel folders
(torch/__init__.py, `_preload_cuda_deps`), then torch/_C; `import xformers` comes after all that. glibc's
`_dl_map_object` first looks for an object already loaded under the name (the name it was loaded as, or its
DT_SONAME), and only then searches RPATH, LD_LIBRARY_PATH, RUNPATH, ld.so.cache and the default dirs, mapping a
dlopen's dependencies breadth first. So a torch extension's DT_NEEDED libc10.so needs no RUNPATH (it is loaded),
and a libcublas.so.13 first on LD_LIBRARY_PATH is not what torch's libraries get when torch preloaded its own.

`Process.of(dist)` simulates the import of one framework distribution: what each of its objects' NEEDED
resolves to, and which names are then loaded. An extension's distribution is judged after the frameworks it
requires (Requires-Dist, followed through the installed distributions) or, when its metadata omits them, after the
installed framework that provides a library it needs and finds nowhere else. The referee: the real loader's record
of the same imports (LD_DEBUG=libs,files, tests/realwheels).
"""
from __future__ import annotations

import fnmatch
import os
import posixpath
import re
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from envdoctor.binaries.loader import LoaderModel, Needer, Resolved

MAX_OBJECTS = 4000  # shared objects one simulated import maps, at most
MAX_METADATA = 4 * 1024 * 1024
MAX_INIT = 512 * 1024
_PRELOAD_ROW = re.compile(r"\(\s*\"([A-Za-z0-9_]+)\"\s*,\s*\"(lib[A-Za-z0-9_.*\[\]-]+)\"\s*\)")

Links = Callable[[str], Any]  # local path -> an object with needed/rpath/runpath/soname/machine/elfclass/nodeflib


def requires(info: str) -> List[str]:
    """The distributions a dist-info's METADATA requires unconditionally or by platform (Requires-Dist lines, not
    those of an extra), normalised; [] when it cannot be read. Read as the Python helper reads METADATA."""
    from envdoctor.probes import _pyenv_helper as helper

    out: List[str] = []
    for key, value in helper.parse_headers(_read(os.path.join(info, "METADATA"), MAX_METADATA)):
        if key != "requires-dist" or "extra" in value.partition(";")[2]:
            continue
        name = helper.requirement_name(value)
        if name and name not in out:
            out.append(name)
    return out


def _read(path: str, limit: int) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""


def torch_entries(files: Sequence[str], sys_path: Sequence[str]) -> List[Tuple[str, bool]]:
    """(local path, dlopened by its path) in the order `import torch` opens them, read from the wheel's own
    torch/__init__.py (never imported): libtorch_global_deps.so; then, where `_load_global_deps` calls
    `_preload_cuda_deps(required=False)` once the CUDA runtime is loaded, each `(folder, pattern)` row of
    `_preload_cuda_deps`, from the first sys.path entry with nvidia/<folder>/lib/<pattern> or nvidia/cuXX/lib (XX:
    torch/version.py's CUDA major) or <folder>/lib; then torch/_C."""
    lib = [f for f in files if posixpath.basename(f) == "libtorch_global_deps.so"]
    c_ext = [f for f in files if re.match(r"_C\..*\.so$", posixpath.basename(f))
             and posixpath.basename(posixpath.dirname(f)) == "torch"]
    if not lib or not c_ext:
        return []
    top = posixpath.dirname(c_ext[0])
    init = _read(posixpath.join(top, "__init__.py"), MAX_INIT)
    out: List[Tuple[str, bool]] = [(lib[0], True)]
    body = init.split("def _load_global_deps", 1)[-1].split("\ndef ", 1)[0] if "def _load_global_deps" in init else ""
    if "_preload_cuda_deps(required=False)" in body and "def _preload_cuda_deps" in init:
        rows = init.split("def _preload_cuda_deps", 1)[1].split("\ndef ", 1)[0]
        version = _read(posixpath.join(top, "version.py"), 64 * 1024)
        m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"](\d+)\.", version, re.M)
        for folder, pattern in _PRELOAD_ROW.findall(rows):
            hit = _first_match(sys_path, folder, pattern, m.group(1) if m else None)
            if hit is not None:
                out.append((hit, True))
    out.append((c_ext[0], True))
    return out


def _first_match(sys_path: Sequence[str], folder: str, pattern: str, cuda_major: Optional[str]) -> Optional[str]:
    for base in sys_path:
        dirs = [posixpath.join(base, "nvidia", folder, "lib")]
        if cuda_major:
            dirs.append(posixpath.join(base, "nvidia", f"cu{cuda_major}", "lib"))
        dirs.append(posixpath.join(base, folder, "lib"))
        for d in dirs:
            try:
                names = sorted(os.listdir(d))
            except OSError:
                continue
            hits = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
            if hits:
                return posixpath.join(d, hits[0])
    return None


# How a framework's import opens its libraries, by distribution: the order matters (what is loaded first wins every
# later lookup of its name). A distribution without an entry here is simulated by opening each shared object its
# RECORD lists, in RECORD order.
IMPORT_ORDER: Dict[str, Callable[[Sequence[str], Sequence[str]], List[Tuple[str, bool]]]] = {"torch": torch_entries}


class Simulation:
    """One simulated process: objects mapped in order, the names they answer to, and each NEEDED's answer."""

    def __init__(self) -> None:
        self.names: Dict[str, Tuple[str, str]] = {}  # name -> (machine path, what loaded it)
        self.mapped: Dict[str, str] = {}  # real local path -> machine path
        self.answers: Dict[Tuple[str, str], Resolved] = {}  # (real local path of the needer, soname) -> answer


class Process:
    """The simulations of one environment's framework imports (see the module's docstring)."""

    def __init__(self, loader: LoaderModel, links: Links, display: Callable[[str], str],
                 files_of: Dict[str, List[str]], infos: Dict[str, str], versions: Dict[str, str],
                 frameworks: Sequence[str], dirs: Sequence[str], sys_path: Sequence[str]) -> None:
        self.loader = loader
        self.links = links
        self.display = display
        self.files_of = files_of
        self.infos = infos
        self.versions = versions
        self.frameworks: List[str] = []
        self.dirs = [os.path.realpath(d) + os.sep for d in dirs]
        self.sys_path = list(sys_path)
        self._sims: Dict[str, Simulation] = {}
        self._closure: Dict[str, List[str]] = {}
        self.frameworks = [f for f in frameworks if f in files_of]

    def requires(self, dist: str) -> List[str]:
        """The installed distributions `dist` requires, nearest first (itself excluded)."""
        if dist not in self._closure:
            seen: List[str] = []
            todo = [dist]
            while todo and len(seen) < 500:
                here = todo.pop(0)
                info = self.infos.get(here)
                for name in requires(info) if info else []:
                    if name != dist and name not in seen and name in self.infos:
                        seen.append(name)
                        todo.append(name)
            self._closure[dist] = seen
        return self._closure[dist]

    def _inside(self, local: str) -> bool:
        real = os.path.realpath(local)
        return any(real.startswith(d) for d in self.dirs)

    def of(self, dist: str) -> Simulation:
        """The simulated import of framework distribution `dist`."""
        if dist in self._sims:
            return self._sims[dist]
        sim = Simulation()
        self._sims[dist] = sim  # before its requirements: a cycle of Requires-Dist ends here
        for req in self.requires(dist):  # imported first (torchvision's import runs torch's): their names are loaded
            if req in self.frameworks:
                for name, hit in self.of(req).names.items():
                    sim.names.setdefault(name, hit)
        by = f"{dist} {self.versions.get(dist, '')}".strip()
        files = self.files_of.get(dist, [])
        order = IMPORT_ORDER.get(dist)
        entries = (order(files, self.sys_path) if order is not None else []) or [(f, True) for f in files]
        preloaded = dict(sim.names)
        for local, _ in entries:
            self._dlopen(sim, local, by)
        missing = sorted({s for (_, s), r in sim.answers.items() if r.path is None})
        providers = [fw for fw in self.frameworks if fw != dist and fw not in self.requires(dist)
                     and dist not in self.requires(fw) and any(m in self.of(fw).names for m in missing)]
        if providers:  # metadata silent on the framework it is imported after (torchaudio 2.11 names no torch)
            sim = Simulation()
            sim.names.update(preloaded)
            for fw in providers:
                for name, hit in self.of(fw).names.items():
                    sim.names.setdefault(name, hit)
            self._sims[dist] = sim
            for local, _ in entries:
                self._dlopen(sim, local, by)
        return sim

    def _map(self, sim: Simulation, local: str, shown: str, by: str, name: Optional[str]) -> Any:
        real = os.path.realpath(local)
        if real in sim.mapped or len(sim.mapped) >= MAX_OBJECTS:
            return None
        sim.mapped[real] = shown
        facts = self.links(local)
        if name:
            sim.names.setdefault(name, (shown, by))
        if facts.soname:
            sim.names.setdefault(facts.soname, (shown, by))
        return facts

    def _dlopen(self, sim: Simulation, local: str, by: str) -> None:
        """dlopen(local): map it, then its dependencies breadth first, each name matched against what is loaded
        before any search (the RPATH of the object that needed it inherited, as glibc does)."""
        shown = self.display(local)
        facts = self._map(sim, local, shown, by, shown)
        if facts is None or facts.unreadable or not facts.machine:
            return
        queue: List[Tuple[str, Any, Tuple[Needer, ...]]] = [(local, facts, ())]
        while queue:
            here, f, chain = queue.pop(0)
            who = Needer(self.display(here), f.machine, f.elfclass, f.needed, f.rpath, f.runpath, f.nodeflib)
            for name in who.needed:
                hit = sim.names.get(name)
                if hit is not None:
                    sim.answers[(os.path.realpath(here), name)] = Resolved(name, hit[0], "already loaded", by=hit[1])
                    continue
                r = self.loader.resolve(Needer(who.path, who.machine, who.elfclass, [name], who.rpath, who.runpath,
                                               who.nodeflib), loaders=chain)[0]
                sim.answers[(os.path.realpath(here), name)] = r
                if r.path is None:
                    continue
                there = self.loader.local(r.path)
                sub = self._map(sim, there, r.path, by, name)
                if sub is not None and self._inside(there) and sub.machine:
                    queue.append((there, sub, (who,) + chain))

    def answers_for(self, dist: str, local: str, missing: List[str]) -> Optional[Dict[str, Resolved]]:
        """soname -> answer for the shared object `local` of `dist` as the process loads it: the framework's own
        simulation when `local` is one of the objects a framework's import maps; else None for a framework's own
        file it does not map (a lazily loaded one: judged alone)."""
        real = os.path.realpath(local)
        first = self._order(dist, missing)
        for fw in first + [f for f in self.frameworks if f not in first]:  # any import that maps this file
            sim = self.of(fw)
            if real in sim.mapped:
                return {s: r for (who, s), r in sim.answers.items() if who == real}
        return None

    def loaded_before(self, dist: str, missing: List[str]) -> Dict[str, Tuple[str, str]]:
        """name -> (machine path, what loaded it) of what is loaded before an extension of `dist` is imported."""
        out: Dict[str, Tuple[str, str]] = {}
        for fw in self._order(dist, missing):
            if fw == dist:
                continue  # not imported before itself
            for name, hit in self.of(fw).names.items():
                out.setdefault(name, hit)
        return out

    def _order(self, dist: str, missing: List[str]) -> List[str]:
        """The frameworks imported before `dist`'s extensions (and `dist` itself, when it is one)."""
        order = [dist] if dist in self.frameworks else []
        order += [d for d in self.requires(dist) if d in self.files_of and d in self.frameworks]
        for fw in self.frameworks:
            if fw not in order and missing and any(s in self.of(fw).names for s in missing):
                order.append(fw)
        return order


__all__ = ["Process", "Simulation", "requires", "torch_entries", "IMPORT_ORDER"]
