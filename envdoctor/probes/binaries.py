"""The CUDA device code and library links inside the target environment's shared objects.

Which files: every shared object (`*.so`, `*.so.N`) that a distribution's RECORD lists, in the
directories of the target's sys.path (snap.python.sys_path, from the python probe; on an image root,
the site-packages dirs globbed there), first distribution of a name wins as for imports; plus the
shared objects under top-level entries that no RECORD claims (eggs, distro packages), attributed to
no package. Each file costs its ELF header and section header table; only one with an `.nv_fatbin`
(or `.nvFatBinSegment`) section costs its fatbin entry headers and the resolution of its DT_NEEDED
(envdoctor.binaries.loader: LD_PRELOAD, RPATH, LD_LIBRARY_PATH, RUNPATH, /etc/ld.so.cache read as a
file, default dirs). Answers (and each RECORD's parse) are cached per (path, size, mtime, inode) in
`<cache root>/binaries.json`: a warm run opens no shared object and reads no RECORD.
"""
from __future__ import annotations

import os
import posixpath
import time
from pathlib import Path
from typing import Dict, List, Optional, Set, Tuple

from envdoctor.binaries import Unreadable
from envdoctor.binaries.elf import expand_origin, open_elf
from envdoctor.binaries.ldcache import LdCache, read_cache
from envdoctor.binaries.loader import LoaderModel, Needer
from envdoctor.binaries.process import Process
from envdoctor.binaries.scan import BinaryCache
from envdoctor.parsers.cuda_version import parse_dist_info_name
from envdoctor.probes import _pyenv_helper as helper
from envdoctor.probes.base import ProbeContext, ProbeSkipped, ProbeUnknown
from envdoctor.probes.toolkits import resolve_path, site_package_dirs
from envdoctor.snapshot import Binaries, CudaBinary, Evidence, LinkedLibrary, Snapshot, UnreadableBinary
from envdoctor.lazyre import lazy_re

SO_RE = lazy_re(r"\.so(\.\d+)*$")
MAX_RECORD = 32 * 1024 * 1024
MAX_FILES = 50_000
MAX_WALK = 20_000  # directory entries visited outside every RECORD
TIME_BOUND_FACTOR = 6.0  # the scan stops after this many probe timeouts
SKIP_DIRS = ("__pycache__",)


def cache_path(env) -> Optional[Path]:
    """`<cache root>/binaries.json`; None (nothing read or kept) under ENVDOCTOR_NO_CACHE=1."""
    from envdoctor import cache  # not envdoctor.knowledge: ~9 ms of imports `probe` never needs

    top = cache.root(env) if cache.enabled(env) else None
    return top / "binaries.json" if top is not None else None


class _Index:
    """Which distribution owns which file (from RECORD), and the shared objects to read."""

    def __init__(self) -> None:
        self.owner: Dict[str, Tuple[str, str]] = {}  # local normalised path -> (dist, version)
        self.files: List[str] = []  # local paths of shared objects, in order
        self.seen: Set[str] = set()
        self.infos: Dict[str, str] = {}  # dist -> its .dist-info folder (local), the first on sys.path
        self.files_of: Dict[str, List[str]] = {}  # dist -> local paths of the shared objects its RECORD lists

    def add_file(self, local: str, owner: Optional[Tuple[str, str]]) -> None:
        if owner is not None:
            self.owner.setdefault(local, owner)
            if SO_RE.search(local):
                self.files_of.setdefault(owner[0], []).append(local)
        if SO_RE.search(local) and local not in self.seen:
            self.seen.add(local)
            self.files.append(local)

    def package_of(self, local: str) -> Tuple[str, str]:
        return self.owner.get(local) or self.owner.get(os.path.realpath(local)) or ("", "")


def _read_record(path: str) -> Tuple[List[str], List[str]]:
    """(the shared objects a RECORD lists, the top-level names it claims). A RECORD of a big wheel has tens of
    thousands of rows: the shared objects are found with str.find (C speed), not a loop over every row."""
    try:
        with open(path, "rb") as fh:
            text = fh.read(MAX_RECORD).decode("utf-8", "replace")
    except OSError:
        return [], []
    shared: List[str] = []
    pos = text.find(".so")
    while pos >= 0:
        start = text.rfind("\n", 0, pos) + 1
        end = text.find("\n", pos)
        end = len(text) if end < 0 else end
        line = text[start:end]
        if line.startswith('"'):  # a quoted RECORD path, rare: csv imported only then
            import csv

            row = next(csv.reader([line]), [])
        else:
            row = [line.split(",", 1)[0]]
        if row and SO_RE.search(row[0]) and (not shared or shared[-1] != row[0]):
            shared.append(row[0])
        pos = text.find(".so", end)
    tops = {line.partition("/")[0].partition(",")[0].strip('"') for line in text.splitlines()}
    return shared, sorted(tops)


def _index_dir(base: str, index: _Index, dists: Set[str], claimed: Set[str], cache: BinaryCache) -> None:
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return
    for name in names:
        if not name.endswith(".dist-info"):
            continue
        parsed = parse_dist_info_name(name)
        if parsed is None or parsed[0] in dists:
            continue  # a shadowed copy: the import system takes the first on sys.path
        dists.add(parsed[0])
        index.infos.setdefault(parsed[0], os.path.join(base, name))
        shared, tops = cache.record(os.path.join(base, name, "RECORD"), _read_record)
        claimed.update(tops)
        for rel in shared:
            index.add_file(os.path.normpath(os.path.join(base, rel)), parsed)


def _walk_unclaimed(base: str, index: _Index, claimed: Set[str], budget: List[int]) -> None:
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return
    for name in names:
        if name in claimed or name.endswith((".dist-info", ".egg-info", ".pth")) or name in SKIP_DIRS:
            continue
        top = os.path.join(base, name)
        if SO_RE.search(name):
            index.add_file(top, None)
            continue
        if not os.path.isdir(top) or os.path.islink(top):
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
            budget[0] -= len(filenames) + len(dirnames)
            if budget[0] < 0:
                return
            for f in filenames:
                if SO_RE.search(f):
                    index.add_file(os.path.join(dirpath, f), None)


def _process(ctx: ProbeContext, snap: Snapshot, index: _Index, loader: LoaderModel, cache: BinaryCache,
             dirs: List[str]) -> Process:
    versions = {dist: ver for dist, ver in index.owner.values()}
    frameworks = [helper.normalize(f.distribution) for f in snap.python.frameworks if f.distribution]
    sys_path = [str(ctx.root.path(p)) if not ctx.root.is_live else p for p in snap.python.sys_path if p.startswith("/")]
    return Process(loader, cache.links, ctx.root.display, index.files_of, index.infos, versions, frameworks, dirs,
                   sys_path)


def _search_dirs(ctx: ProbeContext, snap: Snapshot) -> Tuple[List[str], str]:
    """Local paths of the directories whose distributions are the target's, and how they were chosen."""
    out: List[str] = []
    if snap.python.sys_path:
        how = "the target's sys.path"
        for p in snap.python.sys_path:
            if p.startswith("/") and not p.endswith(".zip"):
                out.append(str(ctx.root.path(p)) if not ctx.root.is_live else p)
    else:
        how = "site-packages dirs under the root"
        out = [str(ctx.root.path(d)) for d in site_package_dirs(ctx, snap.python.prefix or None)]
    seen: Set[str] = set()
    dirs = []
    for d in out:
        real = os.path.realpath(d)
        if real not in seen and os.path.isdir(d):
            seen.add(real)
            dirs.append(d)
    return dirs, how


def _exe_rpath(ctx: ProbeContext, snap: Snapshot) -> List[str]:
    """The target interpreter's DT_RPATH (conda's python: $ORIGIN/../lib), which its extensions inherit."""
    exe = snap.python.executable
    if not exe or not exe.startswith("/"):
        return []
    local = str(ctx.root.path(resolve_path(ctx.root, exe)))
    try:
        with open_elf(local) as e:
            if e.runpath:
                return []
            origin = posixpath.dirname(ctx.root.display(local))
            return [p for p in (expand_origin(x, origin) for x in e.rpath) if p]
    except Unreadable:
        return []


def _loader(ctx: ProbeContext, snap: Snapshot, evidence: List[Evidence]) -> LoaderModel:
    cache: Optional[LdCache] = None
    where = "/etc/ld.so.cache"
    try:
        entries = read_cache(str(ctx.root.path(where)))
        cache = LdCache(entries)
        evidence.append(Evidence(f"file:{where}", f"{len(entries)} entries"))
    except Unreadable as exc:
        evidence.append(Evidence(f"file:{where}", f"not used: {exc}"))

    def local(p: str) -> str:
        return p if ctx.root.is_live else str(ctx.root.path(resolve_path(ctx.root, p)))

    return LoaderModel(dict(ctx.env), cache, local=local, exe_rpath=_exe_rpath(ctx, snap))


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    dirs, how = _search_dirs(ctx, snap)
    if not dirs:
        if any(p.name == "python" and p.status == "skipped" for p in snap.probes):
            raise ProbeSkipped("no target Python environment to read (the python probe did not look)")
        raise ProbeUnknown("no target Python environment to read (the python probe found none)")
    start = time.monotonic()
    deadline = start + max(30.0, ctx.timeout * TIME_BOUND_FACTOR)
    out = Binaries()
    index = _Index()
    dists: Set[str] = set()
    claimed_by_dir: Dict[str, Set[str]] = {}
    cache = BinaryCache(cache_path(ctx.env))
    for d in dirs:
        claimed_by_dir[d] = set()
        _index_dir(d, index, dists, claimed_by_dir[d], cache)
    budget = [MAX_WALK]
    for d in dirs:
        if os.path.basename(d.rstrip("/")) in ("site-packages", "dist-packages"):  # not the stdlib's dirs
            _walk_unclaimed(d, index, claimed_by_dir[d], budget)
    if budget[0] < 0:
        out.incomplete = f"stopped walking files no RECORD lists after {MAX_WALK} entries"
    loader: Optional[LoaderModel] = None
    process: Optional[Process] = None
    seen_real: Set[tuple] = set()
    for n, local in enumerate(index.files):
        if n >= MAX_FILES:
            out.incomplete = f"stopped after {MAX_FILES} shared objects"
            break
        if time.monotonic() > deadline:
            out.incomplete = f"stopped after {time.monotonic() - start:.0f} s ({n} of {len(index.files)} shared objects read)"
            break
        try:
            st: Optional[os.stat_result] = os.stat(local)
        except OSError:
            st = None  # scanned below, which says why
        ident: tuple = (st.st_dev, st.st_ino) if st is not None else ("unstatable", local)
        if ident in seen_real:
            continue  # another name (a symlink, a hard link) of a file already read
        seen_real.add(ident)
        res = cache.scan(local, st)
        out.scanned += 1
        shown = ctx.root.display(local)
        dist, version = index.package_of(local)
        if res.unreadable and not res.cuda:
            if os.path.exists(local) or os.path.islink(local):
                out.unreadable.append(UnreadableBinary(shown, dist, res.unreadable))
            continue
        if not res.cuda:
            continue
        if loader is None:
            loader = _loader(ctx, snap, out.evidence)
            process = _process(ctx, snap, index, loader, cache, dirs)
        who = Needer(shown, res.machine, res.elfclass, res.needed, res.rpath, res.runpath, res.nodeflib)
        resolved = loader.resolve(who)
        missing = [r.soname for r in resolved if r.path is None]
        if dist and process is not None:
            # in the process: a framework's own library as its import maps it; an extension after its framework
            inside = process.answers_for(dist, local, missing)
            if inside is not None:
                resolved = [inside.get(r.soname, r) for r in resolved]
            elif missing:
                loaded = process.loaded_before(dist, missing)
                if loaded:
                    resolved = loader.resolve(who, loaded=loaded)
        libs = []
        for r in resolved:
            owner = index.package_of(loader.local(r.path)) if r.path else ("", "")
            libs.append(LinkedLibrary(r.soname, r.path, r.via, " ".join(x for x in owner if x),
                                      r.searched if r.path is None else [], loaded_by=r.by))
        size = st.st_size if st is not None else 0
        out.binaries.append(CudaBinary(
            path=shown, package=dist, package_version=version, size=size, sass=res.sass, ptx=res.ptx,
            ptx_isa=res.ptx_isa, entries=res.entries, compressed=res.compressed, rpath=res.rpath,
            runpath=res.runpath, libraries=libs, unreadable=res.unreadable))
    out.from_cache = cache.hits
    cache.save()
    out.evidence.insert(0, Evidence(
        "scan", f"{out.scanned} shared objects of {len(dists)} distributions in {len(dirs)} dirs ({how}); "
                f"{len(out.binaries)} carry CUDA device code; {cache.hits} answers from the cache"))
    snap.binaries = out


__all__ = ["probe"]
