"""Pins of two frameworks on the same nvidia-* wheel that no installed version satisfies both: the clashes (ED320 in
check, and gate's fix lines), and the concrete ways out -- a release of one framework whose pins agree with the
other's, chosen from the frameworks' own specs (the judgement lock and gate make).

Moved out of rules/cudnn_pins.py so that check's ED320 and gate's rules share it without a rule->rule import.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Sequence, Tuple

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.facts.labels import fw_label
from envdoctor.facts.pins import Pin, jax_plugin, norm, packages, parse_pins, spec
from envdoctor.facts.platform import platform_key
from envdoctor.facts.versions import lower_bound, parse_version, public
from envdoctor.frameworks import registry
from envdoctor.frameworks.base import Target
from envdoctor.records import dataclass
from envdoctor.snapshot import Framework


def mm(v: Version) -> Tuple[int, int]:
    rel = v.release + (0,)
    return (rel[0], rel[1])


def candidates(*specs: Optional[SpecifierSet]) -> List[Version]:
    out: List[Version] = []
    for sp in specs:
        if sp is None:
            continue
        for s in sp:
            if "*" in s.version:
                continue
            v = parse_version(s.version)
            if v is not None and v not in out:
                out.append(v)
    return out


def overlap(a: Optional[SpecifierSet], b: Optional[SpecifierSet]) -> Optional[bool]:
    """Do two specifiers admit a common version? Tested on the versions they name (bounds and pins)."""
    if a is None or b is None:
        return None
    for v in candidates(a, b):
        if a.contains(v, prereleases=True) and b.contains(v, prereleases=True):
            return True
    return False


_FAMILY_ORDER = registry.names(lockable=True)  # ("torch", "tensorflow", "jax")


def _family(fw: Framework) -> Optional[str]:
    if fw.name in ("torch", "tensorflow"):
        return fw.name
    plugin = jax_plugin(fw)
    if plugin is not None and plugin[1] == "plugin":
        return "jax"
    if fw.name == "jax":
        return None  # its pins on nvidia-* are extras of the plugin; the plugin speaks for it
    return None


@dataclass
class Clash:
    package: str
    installed: Version
    broken: Pin  # the pin the installed version violates
    kept: Pin  # the other framework's pin it satisfies
    severity: str


def _violation_severity(installed: Version, pin: Pin) -> str:
    """error: another major, or an older major.minor than the pin's floor; warning: newer, or an older patch."""
    floor = lower_bound(pin.specifier)
    if floor is None:
        return "warning"
    if installed.major != floor.major or mm(installed) < mm(floor):
        return "error"
    return "warning"


def pin_clashes(ctx) -> List[Clash]:
    from envdoctor.facts.libraries import pins_in_effect

    snap = ctx.snap
    pkgs = packages(snap)
    by_family: Dict[str, List[Pin]] = {}
    for fw in ctx.frameworks:
        fam = _family(fw)
        if fam is None:
            continue
        # the pins the library resolver holds in effect (an extra that was not installed pins nothing)
        pins = [p for p in pins_in_effect(fw, snap, ctx.frameworks)
                if (p.name.startswith("nvidia-") or p.name.startswith("cuda-")) and str(p.specifier)]
        by_family.setdefault(fam, []).extend(pins)
    out: List[Clash] = []
    fams = [f for f in _FAMILY_ORDER if f in by_family]
    for i, fa in enumerate(fams):
        for fb in fams[i + 1:]:
            for pa in by_family[fa]:
                for pb in by_family[fb]:
                    if pa.name != pb.name or pa.name not in pkgs:
                        continue
                    iv = parse_version(pkgs[pa.name])
                    if iv is None:
                        continue
                    ok_a = pa.specifier.contains(iv, prereleases=True)
                    ok_b = pb.specifier.contains(iv, prereleases=True)
                    if ok_a and not ok_b:
                        out.append(Clash(pa.name, iv, pb, pa, _violation_severity(iv, pb)))
                    elif ok_b and not ok_a:
                        out.append(Clash(pa.name, iv, pa, pb, _violation_severity(iv, pa)))
    return out


def _candidates_for(ctx, fam: str, pin: Pin) -> List[Tuple[str, str, Dict[str, SpecifierSet], object]]:
    """(label, pip command, pins, row) of the builds a fix may name, oldest first: the builds the framework's spec
    lists that fit this platform and Python (frameworks/: the judgement lock and gate make) -- torch's PyPI default
    build of each release's newest patch, each TensorFlow series' tested release with [and-cuda], the jax releases
    with the CUDA plugin the installed one uses."""
    m = ctx.matrices
    fspec = registry.find(fam)
    if m is None or fspec is None:
        return []
    plugin = jax_plugin(pin.owner) if fam == "jax" else None
    if fam == "jax" and plugin is None:
        return []
    py = parse_version(ctx.snap.python.version)
    target = Target(frameworks=[], platform=platform_key(ctx) or "linux-x86_64", wsl=bool(ctx.snap.platform.wsl),
                    python=f"{py.major}.{py.minor}" if py is not None else None, companions=[])
    out: List[Tuple[str, str, Dict[str, SpecifierSet], object]] = []
    seen = set()
    for cand in fspec.candidates(m, target):
        if fam == "torch":
            key = Version(cand.version).release[:2]
            if cand.index_url is not None or key in seen:
                continue  # the PyPI default build, newest patch of each release
            seen.add(key)
            cmd = f"torch=={cand.version}"
        elif fam == "tensorflow":
            series = m.tf_release(cand.version)
            if series is None or series.tested != cand.version:
                continue
            cmd = cand.requirement
        else:
            if plugin is None or cand.build != f"cuda{plugin[0]}":
                continue
            cmd = f"jax[{cand.build}]=={cand.version}"
        pins = {norm(n): sp for n, sp in ((n, spec(t)) for n, t in cand.pins.items()) if sp is not None}
        if not pins or fspec.fits(m, cand, target):
            continue
        out.append((f"{fam} {cand.version}", cmd, pins, cand.row))
    return list(reversed(out))


def _agree(pins_a: Dict[str, SpecifierSet], pins_b: Dict[str, SpecifierSet], packages_: Sequence[str]) -> bool:
    if not all(p in pins_a and p in pins_b for p in packages_):
        return False
    for name in set(pins_a) & set(pins_b):
        if overlap(pins_a[name], pins_b[name]) is False:
            return False
    return True


def _current_pins(ctx, fw: Framework) -> Dict[str, SpecifierSet]:
    from envdoctor.facts.libraries import pins_in_effect

    return {p.name: p.specifier for p in pins_in_effect(fw, ctx.snap, ctx.frameworks) if str(p.specifier)}


def _family_of_pin(pin: Pin) -> str:
    return _family(pin.owner) or pin.owner.name


def pair_fix(ctx, broken: Pin, kept: Pin, names: Sequence[str]) -> List[str]:
    """Concrete ways out: a version of one framework whose pins agree with the other's, or two environments."""
    fix: List[str] = []
    fam_b, fam_k = _family_of_pin(broken), _family_of_pin(kept)
    cur_b, cur_k = _current_pins(ctx, broken.owner), _current_pins(ctx, kept.owner)
    cands_b = _candidates_for(ctx, fam_b, broken)
    cands_k = _candidates_for(ctx, fam_k, kept)
    # 1) keep the framework pip kept, move the other one
    for label, cmd, pins, row in reversed(cands_b):
        if _agree(pins, cur_k, names):
            fix += [f"Keep {fw_label(kept.owner)} and move {broken.owner.name} to {label}, whose pins agree "
                    f"({', '.join(f'{n}{pins[n]}' for n in names)}):", f'$ pip install "{cmd}"']
            break
    # 2) keep the framework whose pin is broken, move the other one
    for label, cmd, pins, row in reversed(cands_k):
        if _agree(pins, cur_b, names):
            fix += [f"Or keep {fw_label(broken.owner)} and move {kept.owner.name} to {label} "
                    f"({', '.join(f'{n}{pins[n]}' for n in names)}):", f'$ pip install "{cmd}"']
            break
    # 3) a pair of releases whose pins agree, closest to what is installed
    if not fix and cands_b and cands_k:
        vb, vk = public(broken.owner.version), public(kept.owner.version)
        best = None
        for ib, (lb, cb, pb, rb) in enumerate(cands_b):
            for ik, (lk, ck, pk_, rk) in enumerate(cands_k):
                if not _agree(pb, pk_, names):
                    continue
                dist = _distance(cands_b, ib, vb) + _distance(cands_k, ik, vk)
                key = (dist, -ib, -ik)
                if best is None or key < best[0]:
                    best = (key, lb, cb, lk, ck, pb)
        if best is not None:
            _, lb, cb, lk, ck, pb = best
            fix += [f"No release of one framework agrees with the other as installed; the pins of {lb} and {lk} "
                    f"agree on {', '.join(names)}:", f'$ pip install "{cb}" "{ck}"']
    extra = sorted({p.extra for p in parse_pins(broken.owner, ctx.snap) if p.extra and p.name in names})
    requirement = broken.owner.distribution + (f"[{extra[0]}]" if extra else "")
    fix += ["Or give each framework its own environment:",
            f"$ python -m venv ~/venv-{broken.owner.name} && ~/venv-{broken.owner.name}/bin/pip install "
            f"\"{requirement}=={public(broken.owner.version) or broken.owner.version}\""]
    return fix


def _distance(cands, index: int, current: Optional[Version]) -> int:
    """How many releases away from the installed one a candidate is."""
    if current is None:
        return 0
    versions = [public(c[0].split(" ", 1)[1]) for c in cands]
    here = 0
    for i, v in enumerate(versions):
        if v is not None and mm(v) <= mm(current):
            here = i
    return abs(index - here)
