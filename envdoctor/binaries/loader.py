"""Which file each DT_NEEDED soname of a shared object loads: glibc's search order, as data.

For an object O needing soname S (glibc elf/dl-load.c, _dl_map_object; ld.so(8)):
0. an object already loaded under that name (matched by the name it was loaded as or its DT_SONAME): what
   LD_PRELOAD names, and what the caller says the process has loaded before (`loaded`: an extension of torch is
   imported after torch, whose libraries -- libc10.so, libtorch.so, the nvidia-* libraries its RUNPATH reaches --
   are then in the process: a torch extension lists them in DT_NEEDED with no RUNPATH to them, by design);
1. S containing a slash is a path, opened as is;
2. DT_RPATH of O, then of the objects that loaded it up to the executable — only when O has no
   DT_RUNPATH (a RUNPATH turns every RPATH off for O's lookups);
3. LD_LIBRARY_PATH;
4. DT_RUNPATH of O itself (never inherited);
5. /etc/ld.so.cache (skipped when O is linked -z nodeflib), the entry whose flags fit O's class and machine;
6. the default dirs (the multiarch dir, then /lib and /usr/lib; /lib64 and /usr/lib64 where they exist).
A candidate whose ELF class or machine differs from O's is skipped, as the loader does.
$ORIGIN is O's directory; $LIB and $PLATFORM depend on the running machine and are left unexpanded.
"""
from __future__ import annotations

import os
import posixpath
from typing import Callable, Dict, List, Literal, Mapping, Optional, Sequence, Tuple

from envdoctor.binaries import Unreadable
from envdoctor.binaries.elf import expand_origin, open_elf
from envdoctor.binaries.ldcache import MACHINE_FLAGS, LdCache
from envdoctor.records import dataclass, field

DEFAULT_DIRS = {
    "EM_X86_64": ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"),
    "EM_AARCH64": ("/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"),
}
FALLBACK_DIRS = ("/lib64", "/usr/lib64", "/lib", "/usr/lib")
_EM = {62: "EM_X86_64", 183: "EM_AARCH64", 3: "EM_386", 21: "EM_PPC64", 22: "EM_S390"}
MAX_SEARCHED = 40


@dataclass
class Resolved:
    soname: str
    path: Optional[str]  # the machine path that loads, None: not found
    via: str  # LD_PRELOAD | already loaded | path | RPATH | LD_LIBRARY_PATH | RUNPATH | ld.so.cache | default dirs | not found
    searched: List[str] = field(default_factory=list)  # dirs tried before the answer, in order
    by: str = ""  # for "already loaded": what loaded it (the framework imported first)


@dataclass
class Needer:
    """The object whose DT_NEEDED is resolved: its machine path and its dynamic-section facts."""

    path: str
    machine: str
    elfclass: int
    needed: Sequence[str]
    rpath: Sequence[str] = ()
    runpath: Sequence[str] = ()
    nodeflib: bool = False


def elf_ident(local: str) -> Optional[Tuple[int, str]]:
    """(class 32/64, machine) from the first 20 bytes of a file; None if it is not ELF or unreadable."""
    try:
        with open(local, "rb") as fh:
            head = fh.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    order: Literal["little", "big"] = "little" if head[5] == 1 else "big"
    return (64 if head[4] == 2 else 32, _EM.get(int.from_bytes(head[18:20], order), f"EM_{int.from_bytes(head[18:20], order)}"))


class LoaderModel:
    """The search order of one process: its environment, its ld.so.cache, and the executable's RPATH.

    `local(path)` maps a machine path to the file to open (identity on the live root);
    `exe_rpath` are the executable's DT_RPATH dirs, expanded (conda's python carries $ORIGIN/../lib).
    """

    def __init__(self, env: Dict[str, str], cache: Optional[LdCache], local: Callable[[str], str] = lambda p: p,
                 exe_rpath: Sequence[str] = (), default_dirs: Optional[Sequence[str]] = None) -> None:
        self.ld_library_path = [d for d in str(env.get("LD_LIBRARY_PATH", "")).replace(";", ":").split(":") if d]
        self.preload = [p for p in str(env.get("LD_PRELOAD", "")).replace(":", " ").split() if p]
        self.cache = cache
        self.local = local
        self.exe_rpath = list(exe_rpath)
        self.default_dirs = list(default_dirs) if default_dirs is not None else None
        self._preload_names: Optional[Dict[str, str]] = None
        self._ident: Dict[str, Optional[Tuple[int, str]]] = {}

    def _fits(self, path: str, who: Needer) -> bool:
        local = self.local(path)
        if local not in self._ident:
            self._ident[local] = elf_ident(local) if os.path.isfile(local) else None
        ident = self._ident[local]
        return ident is not None and ident == (who.elfclass, who.machine)

    def _preloaded(self) -> Dict[str, str]:
        if self._preload_names is None:
            names: Dict[str, str] = {}
            for p in self.preload:
                if "/" not in p:
                    continue
                names.setdefault(posixpath.basename(p), p)
                try:
                    with open_elf(self.local(p)) as e:
                        if e.soname:
                            names.setdefault(e.soname, p)
                except Unreadable:
                    pass
            self._preload_names = names
        return self._preload_names

    def _defaults(self, who: Needer) -> List[str]:
        if self.default_dirs is not None:
            return self.default_dirs
        return list(DEFAULT_DIRS.get(who.machine, FALLBACK_DIRS))

    def resolve(self, who: Needer, loaders: Sequence[Needer] = (),
                loaded: Optional[Mapping[str, Tuple[str, str]]] = None) -> List[Resolved]:
        """Every DT_NEEDED of `who`; `loaders` are the objects that loaded it (nearest first), whose
        RPATH is inherited when `who` has no RUNPATH (the executable's RPATH comes after them); `loaded`: name
        (DT_SONAME, or the name it was loaded as) -> (machine path, what loaded it) of the objects already in the
        process."""
        origin = posixpath.dirname(who.path)
        runpath = _expand(who.runpath, origin)
        rpaths: List[Tuple[str, List[str]]] = []
        if not who.runpath:
            rpaths.append(("RPATH", _expand(who.rpath, origin)))
            for ld in loaders:  # each loader's own RPATH (a linker writes RPATH or RUNPATH, not both)
                rpaths.append(("RPATH", _expand(ld.rpath, posixpath.dirname(ld.path))))
            rpaths.append(("RPATH", list(self.exe_rpath)))
        steps: List[Tuple[str, List[str]]] = rpaths + [("LD_LIBRARY_PATH", self.ld_library_path), ("RUNPATH", runpath)]
        flags = MACHINE_FLAGS.get((who.machine, who.elfclass))
        return [self._one(name, who, steps, flags, loaded) for name in who.needed]

    def _one(self, name: str, who: Needer, steps, flags,
             loaded: Optional[Mapping[str, Tuple[str, str]]] = None) -> Resolved:
        pre = self._preloaded().get(name)
        if pre is not None:
            return Resolved(name, pre, "LD_PRELOAD")
        if loaded and name in loaded and self._fits(loaded[name][0], who):
            return Resolved(name, loaded[name][0], "already loaded", by=loaded[name][1])
        if "/" in name:
            found = name if self._fits(name, who) else None
            return Resolved(name, found, "path" if found else "not found")
        searched: List[str] = []
        for via, dirs in steps:
            for d in dirs:
                if not d.startswith("/"):
                    continue
                cand = posixpath.join(d, name)
                if len(searched) < MAX_SEARCHED:
                    searched.append(d)
                if self._fits(cand, who):
                    return Resolved(name, cand, via, searched)
        if self.cache is not None and not who.nodeflib:
            ent = self.cache.lookup(name, flags)
            if ent is not None and self._fits(ent.path, who):
                return Resolved(name, ent.path, "ld.so.cache", searched)
            searched.append("ld.so.cache")
        if not who.nodeflib:
            for d in self._defaults(who):
                cand = posixpath.join(d, name)
                searched.append(d)
                if self._fits(cand, who):
                    return Resolved(name, cand, "default dirs", searched)
        return Resolved(name, None, "not found", searched[:MAX_SEARCHED])


def _expand(entries: Sequence[str], origin: str) -> List[str]:
    out: List[str] = []
    for e in entries:
        x = expand_origin(e, origin)
        if x is not None and x not in out:
            out.append(x)
    return out


__all__ = ["LoaderModel", "Needer", "Resolved", "elf_ident", "DEFAULT_DIRS"]
