"""The builds a fix names: check's suggestion of another torch variant, TensorFlow release or jax plugin that fits the
inspected machine, asked of the frameworks/ specs (the same judgement lock and gate make). Read by the driver, arch and
machine rules; kept here so that no rule module imports another.
"""
from __future__ import annotations

from typing import Any, Callable, List, Optional

from envdoctor.facts.builds import companion_pins
from envdoctor.facts.platform import platform_key, python_version
from envdoctor.frameworks import jax as jax_fw
from envdoctor.frameworks import tensorflow as tf_fw
from envdoctor.frameworks import torch as torch_fw
from envdoctor.frameworks.base import GpuTarget, Target
from envdoctor.records import dataclass
from envdoctor.snapshot import Framework


def _python(ctx: Any) -> Optional[str]:
    py = python_version(ctx)
    return str(py) if py else None


# --------------------------------------------------------------------------- alternatives from the matrices


@dataclass
class TorchChoice:
    release: Any  # a TorchRelease row
    variant: Any  # a TorchVariant row
    patch: str

    def command(self, ctx: Any) -> str:
        """The install line: torch with the torchvision / torchaudio that are installed, at the versions
        that match this torch (the patch row of matrices/pytorch.toml), from the same index (whose builds carry its CUDA label)."""
        pins = "".join(f" {name}=={v}" for name, v in companion_pins(ctx, self.patch))
        return f"$ pip install torch=={self.patch}{pins} --index-url {self.variant.index_url}"

    def label(self) -> str:
        return f"torch {self.patch} {self.variant.name} (CUDA {self.variant.cuda})"


def torch_choice(ctx, fw: Framework, fits: Callable[[object], bool]) -> Optional[TorchChoice]:
    """A torch CUDA build for which `fits(variant)` holds (the torch spec's choice: the same release's other
    variants first, else the newest release that has one; only builds for this platform and Python)."""
    plat = platform_key(ctx)
    if plat is None:  # a platform no key names: no build is published for it
        return None
    found = torch_fw.SPEC.choose_variant(ctx.matrices, fw.version, plat, _python(ctx), fits)
    return TorchChoice(*found) if found is not None else None


def tf_choice(ctx, fits: Callable[[object], bool]):
    """The newest TensorFlow release (in the data) with a GPU build for this platform and Python that fits."""
    plat = platform_key(ctx)
    if plat is None:  # a platform no key names: no build is published for it
        return None
    return tf_fw.SPEC.choose_release(ctx.matrices, plat, bool(ctx.snap.platform.wsl), _python(ctx), fits)


def tf_command(rel) -> str:
    extra = "[and-cuda]" if rel.and_cuda else ""
    return f"$ pip install 'tensorflow{extra}~={rel.tested}'"


def jax_choice(ctx, fits: Callable[[object, object], bool], prefer_version: Optional[str] = None):
    """(release, plugin) for which fits(release, plugin) holds: the installed jax release first, else the newest."""
    return jax_fw.SPEC.choose_plugin(ctx.matrices, _python(ctx), fits, prefer_version)


def jax_command(rel, plugin) -> str:
    return f"$ pip install 'jax[{plugin.name}]=={rel.version}'"


def unknown_note(cand: Any) -> str:
    """"; not known to fit: ..." for a build a fix names although the data lacks a fact it was judged on (no build
    whose facts are known fits), else ""."""
    missing = getattr(cand, "unknown", None)
    return f"; not known to fit: {'; '.join(missing)}" if missing else ""


def spec_target(ctx, driver: Optional[str], ccs: List[str]) -> Target:
    """The inspected machine as the frameworks/ specs' Target: platform, Python X.Y, driver, GPUs."""
    py = python_version(ctx)
    return Target(frameworks=[], driver=driver, gpus=[GpuTarget(cc) for cc in ccs],
                  python=f"{py.major}.{py.minor}" if py is not None else None,
                  platform=platform_key(ctx) or "",  # no key (i686, s390x): "" names no published build
                  wsl=bool(ctx.snap.platform.wsl), companions=[])
