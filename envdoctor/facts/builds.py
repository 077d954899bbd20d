"""What a framework build states about itself, and whether envdoctor's data knows its release.

A build judged only through rows of the matrices goes silent when its release is not there (older than
the data, or a source build): every lookup returns nothing and every rule skips. The facts here let
rules judge what the build itself says (torch/version.py `cuda`/`hip`, jaxlib's local version
`+cuda111` / `+cuda12.cudnn89`, TensorFlow's build_info, nvidia-* Requires-Dist pins) against the driver
and GPU tables, which need no release row, and say plainly what could not be judged.
"""
from __future__ import annotations

from dataclasses import field
from typing import Any, List, Optional

from packaging.version import Version

from envdoctor.knowledge.tables import parse_version as _v
from envdoctor.snapshot import Framework
from envdoctor.records import dataclass

# the distribution whose release row the data keeps, per framework family
FAMILY_OF = {"torch": "torch", "tensorflow": "tensorflow", "jaxlib": "jax"}


def oldest_known(m: Any, family: str) -> Optional[str]:
    """The oldest release of `family` (torch | tensorflow | jax) the data has a row for."""
    if m is None:
        return None
    if family == "torch":
        vs = [_v(p) for r in m.pytorch_releases for p in (r.patches or [r.version])]
    elif family == "tensorflow":
        vs = [_v(r.tested or r.version) for r in m.tensorflow_releases]
    else:
        vs = [_v(r.version) for r in m.jax_releases]
    vs = [v for v in vs if v is not None]
    return str(min(vs)) if vs else None


def release_row(m: Any, family: str, version: str):
    """The data's row for this release (torch: its X.Y row; jax: the exact or same-X.Y row), else None."""
    if m is None:
        return None
    if family == "torch":
        return m.torch_release(version)
    if family == "tensorflow":
        return m.tf_release(version)
    return m.jax_release(version)


@dataclass
class BuildFacts:
    fw: Framework
    family: str  # torch | tensorflow | jax
    cuda: Optional[str] = None  # as the build states it ("10.1", "11" for a major-only label)
    rocm: Optional[str] = None
    cudnn: Optional[str] = None  # the cuDNN the build names (build_info, local label, its own pin)
    arch_list: List[str] = field(default_factory=list)
    in_data: Optional[bool] = None  # None: no data loaded
    position: str = ""  # "older" | "newer" | "absent" (a release inside the data's range it has no row for)
    oldest: Optional[str] = None
    newest: Optional[str] = None


def build_facts(m: Any, fw: Framework, cudnn_pin: Optional[str] = None) -> Optional[BuildFacts]:
    """The facts of a torch / tensorflow / jaxlib build; None for other distributions."""
    family = FAMILY_OF.get(fw.name)
    if family is None:
        return None
    bf = BuildFacts(fw, family, cuda=fw.cuda_version or None, rocm=fw.rocm_version or None,
                    cudnn=fw.cudnn_version or cudnn_pin, arch_list=list(fw.arch_list or []))
    if m is None:
        return bf
    v = _v(fw.version)
    bf.oldest, bf.newest = oldest_known(m, family), m.newest_known(family)
    row = release_row(m, family, fw.version) if v is not None else None
    bf.in_data = row is not None
    if row is None and v is not None:
        base = Version(v.base_version)
        if _v(bf.oldest) is not None and base < _v(bf.oldest):
            bf.position = "older"
        elif _v(bf.newest) is not None and base > _v(bf.newest):
            bf.position = "newer"
        else:
            bf.position = "absent"
    return bf
