"""Requires-Dist pins of installed framework builds, with their markers and extras honoured.

Owns: distribution-name normalization (`canonical_name`, alias `norm`), the requirement parser
(`requirement`, cached per line), specifier helpers (`spec`, `satisfies`), the extras a marker names
(`marker_extras`), the pins of a build that apply on the inspected interpreter (`Pin`, `parse_pins`,
`in_effect`), what is installed (`packages`), and the names of the wheels those pins are about
(`is_cudnn_wheel`, `cudnn_wheel_major`, `jax_plugin`).

packaging's requirement parser costs more to import than most of a check, and many checks never need it (no
framework pins anything): it is imported on first use.
"""
from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple, Union

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envdoctor.facts.platform import marker_env
from envdoctor.facts.versions import canonical_name, parse_version  # canonical_name: re-exported, the rules' name
from envdoctor.lazyre import lazy_re
from envdoctor.records import dataclass

if TYPE_CHECKING:
    from packaging.requirements import Requirement

    from envdoctor.snapshot import Framework, Snapshot

__all__ = [
    "Pin", "canonical_name", "cudnn_wheel_major", "in_effect", "is_cudnn_wheel", "jax_plugin", "marker_extras", "norm",
    "packages", "parse_pins", "requirement", "satisfies", "spec", "spec_contains",
]

norm = canonical_name  # the short name the rules use


@functools.lru_cache(maxsize=4096)
def requirement(line: str) -> Optional["Requirement"]:
    """A packaging Requirement for a Requires-Dist line ("Requires-Dist: " prefix allowed), or None for garbage."""
    from packaging.requirements import InvalidRequirement, Requirement

    text = line.split(":", 1)[1] if line.lower().startswith("requires-dist:") else line
    try:
        return Requirement(text.strip())
    except InvalidRequirement:
        return None


_EXTRA_RE = lazy_re(r"""extra\s*==\s*['"]([^'"]+)['"]""")


def marker_extras(line: str) -> List[str]:
    """The extras a Requires-Dist line's marker names (`extra == "and-cuda"`), normalized."""
    return [canonical_name(x) for x in _EXTRA_RE.findall(line)]


def spec(text: Union[str, SpecifierSet, None]) -> Optional[SpecifierSet]:
    """A SpecifierSet, or None for None and garbage."""
    if text is None or isinstance(text, SpecifierSet):
        return text
    try:
        return SpecifierSet(str(text))
    except InvalidSpecifier:
        return None


def satisfies(version: Union[str, Version, None], specifier: Union[str, SpecifierSet, None]) -> Optional[bool]:
    """Does `version` meet `specifier` (pre-releases admitted)? None when either is missing or unreadable; an
    empty SpecifierSet admits everything."""
    v = parse_version(version)
    sp = spec(specifier)
    if v is None or sp is None:
        return None
    return sp.contains(v, prereleases=True)


def spec_contains(specifier: Optional[str], version: Version) -> Optional[bool]:
    """`satisfies` with the specifier first (the order the framework choosers call it in)."""
    return satisfies(version, specifier or None)


def packages(snap: "Snapshot") -> Dict[str, str]:
    """Installed distributions (normalized name -> version)."""
    return {canonical_name(k): str(v) for k, v in (snap.python.packages or {}).items() if v}


@dataclass
class Pin:
    """One Requires-Dist line of an installed build, whose platform markers hold here."""

    owner: "Framework"
    name: str  # normalized
    specifier: SpecifierSet
    line: str
    extra: Optional[str]  # normalized extra guarding the line, None when unconditional
    extras: Tuple[str, ...] = ()  # extras requested on the named package (jax-cuda12-plugin[with-cuda])

    @property
    def text(self) -> str:
        return f"{self.name}{self.specifier}" if str(self.specifier) else self.name

    def describe(self) -> str:
        guard = f" (extra [{self.extra}])" if self.extra else ""
        return f"{self.owner.distribution} {self.owner.version} requires {self.text}{guard}"


def parse_pins(fw: "Framework", snap: "Snapshot") -> List[Pin]:
    """The framework's Requires-Dist lines that apply on this platform/interpreter. Garbage lines are skipped.
    What packaging made of a line here is remembered between runs (envdoctor.facts.pin_memo)."""
    from envdoctor.facts.pin_memo import memo_for

    env = marker_env(snap)
    memo = memo_for(env)
    out: List[Pin] = []
    for line in fw.requires or []:
        text = str(line)
        known, entry = memo.get(text)
        if not known:
            entry = _judge_line(text, env)
            memo.put(text, entry)
        if entry is not None:
            name, specifier, extra, extras = entry
            out.append(Pin(fw, name, _specifier(specifier), text.strip(), extra, extras))
    memo.save()
    return out


@functools.lru_cache(maxsize=1024)
def _specifier(text: str) -> SpecifierSet:
    return SpecifierSet(text)


def _judge_line(line: str, env: Optional[Dict[str, str]]) -> Optional[Tuple[str, str, Optional[str], Tuple[str, ...]]]:
    """(name, specifier, extra, requested extras) of a Requires-Dist line that applies under `env`, else None."""
    req = requirement(line)
    if req is None:
        return None
    extra: Optional[str] = None
    if req.marker is not None:
        if env is None:
            return None
        found = _EXTRA_RE.findall(str(req.marker))
        extra_raw = found[0] if found else ""
        e = dict(env)
        e["extra"] = extra_raw
        try:
            applies = req.marker.evaluate(e)
        except Exception:  # noqa: BLE001 - an odd marker means "unknown": skip the line
            return None
        if not applies:
            return None
        extra = canonical_name(extra_raw) if extra_raw else None
    return canonical_name(req.name), str(req.specifier), extra, tuple(sorted(canonical_name(x) for x in req.extras))


def in_effect(pin: Pin, pkgs: Dict[str, str], extras: Optional[Dict[str, Optional[bool]]] = None) -> bool:
    """Unconditional pins always; pins behind an extra when the package they name is installed and (when `extras`
    says, envdoctor.facts.libraries) that extra itself was installed."""
    if pin.extra is None:
        return True
    if extras is not None and extras.get(pin.extra) is False:
        return False
    return pin.name in pkgs


_CUDNN_WHEEL_RE = lazy_re(r"^nvidia-cudnn(?:-cu(\d+))?$")
_JAX_PLUGIN_RE = lazy_re(r"^jax-cuda(\d+)-(plugin|pjrt)$")


def cudnn_wheel_major(name: str) -> Optional[int]:
    """The CUDA major of an nvidia-cudnn-cuNN wheel name (None for other names, or plain nvidia-cudnn)."""
    m = _CUDNN_WHEEL_RE.match(canonical_name(name))
    if not m or not m.group(1):
        return None
    return int(m.group(1))


def is_cudnn_wheel(name: str) -> bool:
    return bool(_CUDNN_WHEEL_RE.match(canonical_name(name)))


def jax_plugin(fw: "Framework") -> Optional[Tuple[int, str]]:
    """(cuda major, 'plugin'|'pjrt') for a jax CUDA plugin distribution."""
    m = _JAX_PLUGIN_RE.match(canonical_name(fw.distribution or fw.name))
    if not m:
        m = _JAX_PLUGIN_RE.match(canonical_name(fw.name))
    if not m:
        return None
    return int(m.group(1)), m.group(2)
