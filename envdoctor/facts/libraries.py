"""Which CUDA libraries a framework really loads: one resolver per library family.

`loaded(ctx_or_snap, framework, family)` answers, for one installed framework build and one family (cudart, cublas,
cudnn, nccl, nvrtc, nvjitlink, libcuda, and the cufft/cusparse/cusolver/curand wheels), which copy the dynamic
loader will give it, from where, at which version, the pin that copy must satisfy and whether it does.

The order is glibc's search order for a bare soname, as envdoctor.binaries.loader models it for real binaries
(LD_PRELOAD, DT_RPATH, LD_LIBRARY_PATH, DT_RUNPATH, /etc/ld.so.cache, the default dirs). Read from a snapshot:
1. LD_PRELOAD: a preloaded library of the same soname (major) is the one every lookup gets;
2. the binaries scan (snapshot.binaries), when it resolved that soname for one of the framework's own shared
   objects: the loader's answer, RPATH included, taken as it is;
3. LD_LIBRARY_PATH, in its order (pip builds carry RUNPATH, which ld.so reads only after LD_LIBRARY_PATH:
   pytorch/pytorch#80637);
4. RUNPATH: the copy the framework brings itself: its wheel's bundle (torch/lib/libcudnn.so.8 of older torch
   wheels, Framework.bundled), else an installed nvidia-* wheel of that family ($ORIGIN/../../nvidia/<lib>/lib),
   whoever installed it, for builds linked with that RUNPATH (those whose Requires-Dist names nvidia-* wheels,
   under any extra, and jaxlib's +cudaNN builds: finds_wheels);
5. the conda environment's lib directory (a conda interpreter);
6. the system: the ldconfig cache and the trusted dirs (a CUDA toolkit folder counts only on the path or in the
   cache).
A copy serves the lookup only when its soname matches: the same major (libcudnn.so.8 vs libcudnn.so.9).

The major a build asks for comes from its own copy (bundle or wheel pin), else what the build states (TensorFlow's
build_info cudnn "8", jaxlib's `+cuda12.cudnn89`, the CUDA major of torch/version.py for cudart/cublas/nvrtc/
nvJitLink), else the one installed wheel of the family.

The pin: a Requires-Dist line naming the family's nvidia-* wheel that is *in effect*: unconditional, or behind an
extra that was installed. A pin under `extra == 'and-cuda'` (TensorFlow), `extra == 'with-cuda'` (jax plugins)
names a wheel the framework loads only when that extra was installed. A package of the same name being present
proves nothing on its own: another framework's own pins may have put it there (torch pins nvidia-cudnn-cu12, so a
TensorFlow 2.15 on the system CUDA 12.2 + cuDNN 8.9.7 next to torch is not "TensorFlow using cuDNN 9.1"). An extra
counts as installed when a package that only that extra names (no other installed framework requires it) is
installed, and as not installed when none of those is; when every package of the extra is also required
elsewhere, nothing tells (None: each pin is then judged by its package being present).
"""
from __future__ import annotations

import posixpath
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Sequence, Tuple

from envdoctor.facts.versions import parse_version
from envdoctor.records import dataclass, field
from envdoctor.snapshot import Framework, Library, Snapshot

if TYPE_CHECKING:  # pragma: no cover
    from envdoctor.facts.pins import Pin


@dataclass(frozen=True)
class Family:
    key: str  # cudnn
    lib: str  # the library's name without .so: libcudnn
    wheel: Optional[str]  # the nvidia-* wheel without its -cuNN suffix: nvidia-cudnn
    subdir: Optional[str]  # its folder under site-packages/nvidia: cudnn
    label: str  # how messages name it: cuDNN
    cuda_major: bool = False  # its soname major is the CUDA major (libcudart.so.12, libcublas.so.12)
    fixed_major: Optional[int] = None  # every build asks for this major (libnccl.so.2, libcuda.so.1)


FAMILIES: Dict[str, Family] = {f.key: f for f in (
    Family("cudart", "libcudart", "nvidia-cuda-runtime", "cuda_runtime", "CUDA runtime", cuda_major=True),
    Family("cublas", "libcublas", "nvidia-cublas", "cublas", "cuBLAS", cuda_major=True),
    Family("cudnn", "libcudnn", "nvidia-cudnn", "cudnn", "cuDNN"),
    Family("nccl", "libnccl", "nvidia-nccl", "nccl", "NCCL", fixed_major=2),
    Family("nvrtc", "libnvrtc", "nvidia-cuda-nvrtc", "cuda_nvrtc", "NVRTC", cuda_major=True),
    Family("nvjitlink", "libnvJitLink", "nvidia-nvjitlink", "nvjitlink", "nvJitLink", cuda_major=True),
    Family("libcuda", "libcuda", None, None, "libcuda", fixed_major=1),
    Family("cufft", "libcufft", "nvidia-cufft", "cufft", "cuFFT"),
    Family("cusparse", "libcusparse", "nvidia-cusparse", "cusparse", "cuSPARSE"),
    Family("cusolver", "libcusolver", "nvidia-cusolver", "cusolver", "cuSOLVER"),
    Family("curand", "libcurand", "nvidia-curand", "curand", "cuRAND"),
)}

# the order of envdoctor.binaries.loader for a bare soname, with where a snapshot keeps each step's libraries
ORDER = ("LD_PRELOAD", "binaries", "LD_LIBRARY_PATH", "RUNPATH", "conda", "system")
TRUSTED_DIRS = ("/lib", "/usr/lib", "/lib64", "/usr/lib64", "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu",
                "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib/sbsa-linux",
                "/usr/lib/powerpc64le-linux-gnu")


@dataclass
class LoadedLibrary:
    """The copy of one library family a framework build loads.

    where: LD_PRELOAD | binaries | LD_LIBRARY_PATH | bundle | wheel | conda | system | not found
    version: what it is ("8.7.0.84"), None when nothing states it; version_source says where that came from
    own: the copy the framework brings itself (its bundle or wheel) when another one wins the lookup
    other_majors: copies of the family on LD_PRELOAD / LD_LIBRARY_PATH with another soname (not loaded by it)
    """

    framework: Framework
    family: Family
    major: Optional[int]
    where: str
    path: Optional[str] = None
    version: Optional[str] = None
    version_source: str = ""
    package: Optional[str] = None  # "nvidia-cudnn-cu12 9.1.0.70" for a wheel
    pin: Optional["Pin"] = None
    satisfied: Optional[bool] = None  # does `version` satisfy `pin` (None: no pin, or the version is unknown)
    own: Optional["LoadedLibrary"] = None
    other_majors: List[Library] = field(default_factory=list)
    searched: List[str] = field(default_factory=list)

    @property
    def soname(self) -> Optional[str]:
        return f"{self.family.lib}.so.{self.major}" if self.major is not None else None

    @property
    def found(self) -> bool:
        return self.where != "not found"

    def describe(self) -> str:
        v = self.version or "unknown version"
        return f"{self.family.label} {v} ({self.where}: {self.path or self.package or '?'})"


# -- pins and extras ------------------------------------------------------------------------------------------------
def extra_in_effect(pins: Iterable, extra: str, pkgs: Dict[str, str], others: Iterable) -> Optional[bool]:
    """Is `extra` of the framework whose parsed pins are `pins` installed? `others`: the pins (Pin objects) of
    every other installed framework distribution (their own requirements may explain a package)."""
    mine = [p for p in pins if p.extra == extra]
    if not mine:
        return False
    elsewhere = {p.name for p in others if p.extra is None or p.name in pkgs}
    exclusive = [p for p in mine if p.name not in elsewhere]
    if any(p.name in pkgs for p in exclusive):
        return True
    if exclusive:
        return False  # what only this extra would have installed is absent
    return None


def extras_in_effect(fw: Framework, snap: Snapshot, frameworks: Sequence[Framework]) -> Dict[str, Optional[bool]]:
    """{extra: installed?} for every extra the framework's Requires-Dist names here."""
    from envdoctor.facts.pins import packages, parse_pins

    pkgs = packages(snap)
    pins = parse_pins(fw, snap)
    others = [p for o in frameworks if o is not fw and o.distribution != fw.distribution for p in parse_pins(o, snap)]
    return {e: extra_in_effect(pins, e, pkgs, others) for e in sorted({p.extra for p in pins if p.extra})}


def pins_in_effect(fw: Framework, snap: Snapshot, frameworks: Sequence[Framework]) -> List["Pin"]:
    """The framework's Requires-Dist pins that hold here: unconditional ones, and those behind an extra that was
    installed (or, when nothing tells, whose package is installed)."""
    from envdoctor.facts.pins import in_effect, packages, parse_pins

    pkgs = packages(snap)
    extras = extras_in_effect(fw, snap, frameworks)
    return [p for p in parse_pins(fw, snap) if in_effect(p, pkgs, extras)]


def wheel_family(name: str) -> Optional[Family]:
    """The family of an nvidia-* wheel name (nvidia-cudnn-cu12 -> cudnn), None for other names."""
    from envdoctor.facts.pins import norm

    n = norm(name)
    base = n.rsplit("-cu", 1)[0] if "-cu" in n and n.rsplit("-cu", 1)[1].isdigit() else n
    return next((f for f in FAMILIES.values() if f.wheel == base), None)


def lib_family(name: str) -> Optional[Family]:
    """The family of a library name as the probes record it ("libcudnn"; not "libcudnn_ops_infer")."""
    return next((f for f in FAMILIES.values() if f.lib == name), None)


# -- the resolver -----------------------------------------------------------------------------------------------------
def _major(version: Optional[str]) -> Optional[int]:
    v = parse_version(version)
    return v.release[0] if v is not None else None


def _serves(fam: Family, version: Optional[str], major: Optional[int]) -> bool:
    """Does a copy of this version carry the soname asked for? libcuda.so.1 is the soname of every driver's
    libcuda.so.<driver version>; the other families' sonames carry their version's major."""
    if fam.key == "libcuda":
        return True
    return major is not None and _major(version) == major


def _precision(version: Optional[str]) -> int:
    v = parse_version(version)
    return len(v.release) if v is not None else 0


def _ctx_parts(ctx_or_snap: Any) -> Tuple[Snapshot, Any, List[Framework]]:
    if isinstance(ctx_or_snap, Snapshot):
        return ctx_or_snap, None, list(ctx_or_snap.python.frameworks)
    return ctx_or_snap.snap, getattr(ctx_or_snap, "matrices", None), list(ctx_or_snap.frameworks)


def site_packages(fw: Framework) -> Optional[str]:
    """The site-packages folder a framework distribution is installed in, from its recorded location."""
    loc = (fw.location or "").rstrip("/")
    if loc.endswith("-packages"):
        return loc
    head, _, tail = loc.rpartition("/")
    if tail in (fw.name, fw.name.replace("-", "_")) and head.endswith("-packages"):
        return head
    return None


def _requires_wheels(fw: Framework) -> bool:
    from envdoctor.facts.pins import requirement

    reqs = [requirement(str(line)) for line in fw.requires]
    return any(r is not None and wheel_family(r.name) is not None for r in reqs)


def _bundle(fw: Framework, fam: Family, matrices: Any, snap: Snapshot) -> Optional[LoadedLibrary]:
    """The copy inside the framework's own package (torch/lib), with its version from the name, the build or data."""
    copies = [b for b in fw.bundled if b.name == fam.lib and _major(b.version) is not None]
    # a snapshot without Framework.bundled: a torch pip wheel that requires no nvidia-* wheel bundles its cuDNN
    # (conda builds take it from the environment's lib directory instead)
    legacy = (not copies and not fw.bundled and fam.key == "cudnn" and fw.name == "torch" and bool(fw.cudnn_version)
              and snap.python.kind != "conda" and not _requires_wheels(fw))
    if not copies and not legacy:
        return None
    major = _major(copies[0].version) if copies else _major(fw.cudnn_version)
    path = copies[0].path if copies else None
    version, source = (copies[0].version, "file name") if copies else (None, "")
    if _precision(version) < 3:  # libcudnn.so.8 / libcudart.so.11.0: the soname, not the release
        version, source = None, ""
        if fam.key == "cudnn" and _major(fw.cudnn_version) == major:
            version, source = fw.cudnn_version, f"{fw.distribution} build"
        elif fam.key == "cudnn" and matrices is not None and fw.name == "torch":
            var = matrices.torch_installed_variant(fw.version)
            if var is not None and _major(var.cudnn) == major:
                version, source = var.cudnn, f"envdoctor data: torch {fw.version} bundles cuDNN {var.cudnn}"
        elif fam.key == "cudart" and _major(fw.cuda_version) == major:
            version, source = fw.cuda_version, f"{fw.distribution} build (CUDA {fw.cuda_version})"
    where = path or f"{fw.distribution}'s bundled {fam.label}"
    return LoadedLibrary(fw, fam, major, "bundle", where, version, source, package=None)


def finds_wheels(fw: Framework, snap: Snapshot) -> bool:
    """Do the build's binaries carry the RUNPATH into site-packages/nvidia/*/lib? Builds whose Requires-Dist names
    nvidia-* wheels (under any extra: tensorflow's and-cuda pins exist whether the extra was installed or not) are
    linked with the whole set of those dirs (pytorch/builder's CUDA_RPATHS); so are jaxlib's +cudaNN builds (the
    same wheel serves jax[cudaNN_pip]). A torch wheel that bundles its libraries carries $ORIGIN only."""
    from envdoctor.facts.pins import parse_pins

    if fw.name == "jaxlib" and fw.build == "cuda":
        return True
    return any(wheel_family(p.name) is not None for p in parse_pins(fw, snap))


def _wheel(fam: Family, major: Optional[int], pkgs: Dict[str, str], pin: Optional["Pin"], fw: Framework,
           ) -> Optional[LoadedLibrary]:
    """An installed nvidia-* wheel of the family with the major asked for (the pinned name first), whoever installed
    it: the build's RUNPATH finds it (only for builds that have that RUNPATH, see finds_wheels)."""
    if fam.wheel is None:
        return None
    names = sorted(n for n in pkgs if wheel_family(n) is fam)
    if pin is not None and pin.name in names:
        names.remove(pin.name)
        names.insert(0, pin.name)
    for n in names:
        v = pkgs[n]
        if major is None or _major(v) == major:
            site = site_packages(fw)
            path = f"{site}/nvidia/{fam.subdir}/lib" if site else None
            return LoadedLibrary(fw, fam, _major(v), "wheel", path, v, "python.packages", package=f"{n} {v}")
    return None


def _wanted_major(fw: Framework, fam: Family, bundle: Optional[LoadedLibrary], pin: Optional["Pin"],
                  pkgs: Dict[str, str]) -> Optional[int]:
    if bundle is not None and bundle.major is not None:
        return bundle.major
    if pin is not None:
        from envdoctor.facts.versions import lower_bound

        lb = lower_bound(pin.specifier)
        if lb is not None:
            return lb.major
    if fam.fixed_major is not None:
        return fam.fixed_major
    if fam.key == "cudnn" and _major(fw.cudnn_version) is not None:
        return _major(fw.cudnn_version)
    if fam.cuda_major and _major(fw.cuda_version) is not None:
        return _major(fw.cuda_version)
    majors = {_major(v) for n, v in pkgs.items() if wheel_family(n) is fam} - {None}
    return majors.pop() if len(majors) == 1 else None


def _on_path(snap: Snapshot, fam: Family, via: str) -> List[Library]:
    """The family's libraries on LD_PRELOAD / LD_LIBRARY_PATH, in the order ld.so tries them."""
    libs = [lib for lib in snap.loader.libraries if lib.via == via and lib.name == fam.lib]
    if via == "LD_PRELOAD":
        pre = list(snap.loader.ld_preload)
        return sorted(libs, key=lambda lib: pre.index(lib.path) if lib.path in pre else len(pre))
    dirs = [d.rstrip("/") for d in snap.loader.ld_library_path]
    return sorted(libs, key=lambda lib: dirs.index(posixpath.dirname(lib.path)) if posixpath.dirname(lib.path) in dirs
                  else len(dirs))


def _most_precise(first: Library, pool: Sequence[Library]) -> Library:
    """Of the copies in the winner's directory (several names of one file), the one stating the most precise version."""
    d = posixpath.dirname(first.path)
    same = [x for x in pool if posixpath.dirname(x.path) == d and _precision(x.version) > 0
            and _major(x.version) == _major(first.version)]
    return max(same, key=lambda x: _precision(x.version)) if same else first


def _from_binaries(snap: Snapshot, fw: Framework, fam: Family, major: int) -> Optional[Tuple[str, str, str]]:
    """(path, via, package) the binaries scan resolved for this soname in one of the framework's own objects."""
    soname = f"{fam.lib}.so.{major}"
    for b in snap.binaries.binaries:
        if not b.package or b.package.split()[0] not in (fw.distribution, fw.name):
            continue
        for ll in b.libraries:
            if ll.soname == soname and ll.path:
                return ll.path, ll.via, ll.package
    return None


def _system(snap: Snapshot, fam: Family, major: int) -> Optional[Tuple[str, Optional[str], str]]:
    """(path, version, source) of the family in the ldconfig cache / trusted dirs, the most precise version first."""
    found: List[Tuple[str, Optional[str], str]] = []
    for lib in snap.loader.libraries:
        if lib.name == fam.lib and lib.via == "ldconfig" and _serves(fam, lib.version, major):
            found.append((lib.path, lib.version, "loader:ldconfig"))
    if fam.key == "cudnn":
        from envdoctor.facts.loader import reachable

        for c in snap.cudnn:
            if c.kind == "library" and _major(c.version) == major and reachable(snap, c) \
                    and not any(e.source.startswith("env:LD_LIBRARY_PATH") for e in c.evidence):
                found.append((c.path, c.version, c.evidence[0].source if c.evidence else "cudnn:library"))
    if not found:
        return None
    return max(found, key=lambda x: (_precision(x[1]), parse_version(x[1]) or parse_version("0")))


def _conda(snap: Snapshot, fam: Family, major: int) -> Optional[Tuple[str, Optional[str]]]:
    prefix = (snap.python.prefix or "").rstrip("/")
    if snap.python.kind != "conda" or not prefix:
        return None
    d = prefix + "/lib"
    cands = [(lib.path, lib.version) for lib in snap.loader.libraries if lib.name == fam.lib
             and posixpath.dirname(lib.path) == d and _serves(fam, lib.version, major)]
    if fam.key == "cudnn":
        cands += [(c.path, c.version) for c in snap.cudnn if c.kind == "library" and posixpath.dirname(c.path) == d
                  and _major(c.version) == major]
    return max(cands, key=lambda x: _precision(x[1])) if cands else None


def _judge_pin(lib: LoadedLibrary) -> None:
    if lib.pin is None or parse_version(lib.version) is None:
        return
    v = parse_version(lib.version)
    lib.satisfied = lib.pin.specifier.contains(v, prereleases=True) if v is not None else None


def loaded(ctx_or_snap: Any, fw: Framework, family: str) -> Optional[LoadedLibrary]:
    """The copy of `family` (a key of FAMILIES) that `fw` loads on this Linux machine; None when nothing tells which
    major it asks for, or the machine is not Linux (Windows loads DLLs by its own search order)."""
    from envdoctor.facts.pins import packages

    fam = FAMILIES[family]
    snap, matrices, frameworks = _ctx_parts(ctx_or_snap)
    system = (snap.platform.system or "").lower()
    if system.startswith("win") or system == "darwin":
        return None
    pkgs = packages(snap)
    pins = [p for p in pins_in_effect(fw, snap, frameworks) if wheel_family(p.name) is fam]
    pin = pins[0] if pins else None
    bundle = _bundle(fw, fam, matrices, snap)
    major = _wanted_major(fw, fam, bundle, pin, pkgs)
    if major is None:
        return None
    own = bundle or (_wheel(fam, major, pkgs, pin, fw) if finds_wheels(fw, snap) else None)
    other: List[Library] = []
    searched: List[str] = []
    result: Optional[LoadedLibrary] = None
    for via in ("LD_PRELOAD", "LD_LIBRARY_PATH"):
        on = _on_path(snap, fam, via)
        other += [lib for lib in on if _major(lib.version) is not None and not _serves(fam, lib.version, major)]
        if result is None and via == "LD_LIBRARY_PATH" and snap.binaries.binaries:
            searched.append("binaries")
            hit = _from_binaries(snap, fw, fam, major)
            if hit is not None:
                path, how, package = hit
                match = next((lib for lib in snap.loader.libraries if lib.path == path), None)
                result = LoadedLibrary(fw, fam, major, "binaries", path, match.version if match else None,
                                       f"binaries scan ({how})", package=package or None)
        searched.append(via)
        same = [lib for lib in on if _serves(fam, lib.version, major)]
        if result is None and same:
            best = _most_precise(same[0], same)
            result = LoadedLibrary(fw, fam, major, via, same[0].path, best.version, f"loader:{via}")
    if result is None:
        searched.append("RUNPATH")
        if own is not None:
            result = LoadedLibrary(fw, fam, major, own.where, own.path, own.version, own.version_source,
                                   package=own.package)
    if result is None:
        searched.append("conda")
        hit_c = _conda(snap, fam, major)
        if hit_c is not None:
            result = LoadedLibrary(fw, fam, major, "conda", hit_c[0], hit_c[1], "conda env lib")
    if result is None:
        searched.append("system")
        hit_s = _system(snap, fam, major)
        if hit_s is not None:
            result = LoadedLibrary(fw, fam, major, "system", hit_s[0], hit_s[1], hit_s[2])
    if result is None:
        result = LoadedLibrary(fw, fam, major, "not found")
    result.pin = pin
    result.other_majors = other
    result.searched = searched
    if own is not None and result.where not in ("bundle", "wheel"):
        result.own = own
    _judge_pin(result)
    return result


def loaded_all(ctx_or_snap: Any, fw: Framework, families: Iterable[str] = tuple(FAMILIES)) -> Dict[str, LoadedLibrary]:
    """{family: what fw loads} for every family the resolver can answer for."""
    out: Dict[str, LoadedLibrary] = {}
    for fam in families:
        lib = loaded(ctx_or_snap, fw, fam)
        if lib is not None:
            out[fam] = lib
    return out


__all__ = ["FAMILIES", "Family", "LoadedLibrary", "ORDER", "extra_in_effect", "extras_in_effect", "lib_family",
           "finds_wheels", "loaded", "loaded_all", "pins_in_effect", "site_packages", "wheel_family"]
