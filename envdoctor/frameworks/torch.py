"""PyTorch: ``torch`` (+ torchvision / torchaudio companions); its builds are the ``TorchVariant`` rows of
matrices/pytorch.toml (one candidate per patch release and variant: cu121, cu128, cpu ...)."""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from packaging.version import Version

from envdoctor.facts.platform import BUILD_PLATFORMS
from envdoctor.frameworks.base import (
    COMPANIONS, Candidate, FrameworkSpec, Requirement, Target, _pin_names, _sorted_desc, _v, python_fits,
)
from envdoctor.knowledge.tables import parse_version


def torch_candidate(m: Any, release: Any, patch: str, variant: Any, platform: str,
                    companions: Sequence[str] = COMPANIONS, python: Optional[str] = None) -> Candidate:
    """The candidate for ``torch==patch`` of ``variant`` (a TorchVariant row) on ``platform``; its pins are those
    that apply for ``python`` (every pin when it is not known)."""
    default = release.default_variant(platform)
    is_default = default is not None and default.name == variant.name
    label = variant.local_label or f"+{variant.name}"
    text = f"torch=={patch}" if is_default else f"torch=={patch}{label}"
    spec = release.python_spec(patch)
    archs = list(variant.arch_list_aarch64) if platform == "linux-aarch64" and variant.arch_list_aarch64 else list(variant.arch_list)
    if variant.ptx and archs:
        archs.append("compute_" + archs[-1].split("_", 1)[1])
    cand = Candidate(
        framework="torch", version=patch, build=variant.name, kind="cuda" if variant.kind == "cuda" else variant.kind,
        label=f"torch {patch}{label}", full_version=f"{patch}{label}", cuda=variant.cuda, cudnn=variant.cudnn,
        python=str(spec) if spec is not None else None, platforms=list(variant.platforms), archs=archs,
        archs_undecided_newer=variant.ptx is None and bool(archs), archs_presumed=bool(variant.arch_unverified),
        index_url=None if is_default else variant.index_url, source=m.row_source(variant))
    note = f"CUDA {variant.cuda}, cuDNN {variant.cudnn or 'unknown'}" if variant.kind == "cuda" else "CPU build"
    note += "; the PyPI default build, no index line needed" if is_default else f"; from {variant.index_url}"
    cand.requirements.append(Requirement(text, note))
    if variant.kind == "cuda" and platform.startswith("linux"):
        # the PyPI default's pins: x86_64, and aarch64 where the data names the default a CUDA build (2.11+)
        if variant.nvidia_pins and is_default and platform in BUILD_PLATFORMS:
            cand.pins = _pin_names(variant.pins_for(python, platform))
        elif variant.cudnn and variant.cuda_major:
            cand.pins = {f"nvidia-cudnn-cu{variant.cuda_major}": f"=={variant.cudnn}"}
            cand.pins_known = "cudnn-only"
        else:
            cand.pins_known = "none"
    prow = release.patch(patch)
    if prow is not None:
        for comp in companions:
            ver = getattr(prow, comp, None)
            if not ver:
                cand.notes.append(f"no {comp} release is known for torch {patch}")
                continue
            req = getattr(prow, f"{comp}_requires", None)
            cnote = f"companion of torch {patch}"
            if req and not req.startswith("=="):
                cnote += f" (it requires torch{req}, not an exact pin)"
            cand.requirements.append(Requirement(f"{comp}=={ver}", cnote))
        if prow.unverified:
            cand.unverified.append(f"torch {patch}: {prow.verified}")
    if variant.unverified:
        cand.unverified.append(f"{cand.label}: {variant.verified}")
    if variant.arch_unverified:
        cand.unverified.append(f"{cand.label} arch list: {variant.arch_verified}")
    return cand


class TorchSpec(FrameworkSpec):
    name = "torch"
    lock_examples = ("2.5.1", "2.5", ">=2.4,<2.6")
    distributions = {"torch": "gpu", "torchvision": "companion", "torchaudio": "companion"}
    smoke_program = "torch_smoke.py"
    refresh_table = "pytorch"
    refresh_learner = "envdoctor.knowledge.refresh:_torch"
    version_files = ("torch/version.py", "torchvision/version.py", "torchaudio/version.py")
    version_parser = "envdoctor.parsers.torch_version:parse_torch_version"

    def candidates(self, m: Any, target: Target) -> List[Candidate]:
        """Every torch build of the right kind, newest first (release, patch, then CUDA)."""
        out: List[Candidate] = []
        for rel in sorted(m.pytorch_releases, key=lambda r: Version(r.version), reverse=True):
            if target.cpu:
                variants = [v for v in rel.variants if v.kind == "cpu"]
            else:
                variants = sorted((v for v in rel.variants if v.kind == "cuda" and parse_version(v.cuda) is not None),
                                  key=lambda v: Version(v.cuda), reverse=True)
            for patch in _sorted_desc(rel.patches):
                for var in variants:
                    out.append(torch_candidate(m, rel, patch, var, target.platform, target.companions,
                                               target.python))
        return out

    def known_versions(self, m: Any) -> List[str]:
        return sorted({p for r in m.pytorch_releases for p in r.patches}, key=Version)

    def python_specs(self, m: Any) -> List[str]:
        out: List[str] = []
        for r in m.pytorch_releases:
            for p in r.patches:
                s = r.python_spec(p)
                if s is not None:
                    out.append(str(s))
        return out


    def choose_variant(self, m: Any, installed: Optional[str], platform: str, python: Optional[str],
                       accept: Callable[[Any], bool]) -> Optional[Tuple[Any, Any, str]]:
        """(release, variant, patch) of a torch CUDA build from a download index for which ``accept(variant)``
        holds, for a fix: the installed release's other variants first (its patch when the data has it), else
        the newest release that has one; only builds published for ``platform`` and ``python``.  Within a
        release the PyPI default comes first, then the newest CUDA."""
        v = parse_version(installed) if installed else None

        def variants(rel: Any) -> List[Any]:
            probe = Candidate(framework="torch", version=rel.version, build="", kind="cuda", label="", full_version="",
                              python=str(rel.python_spec()) if rel.python_spec() is not None else None)
            if python_fits(probe, python) is False:
                return []
            out = [var for var in rel.variants if var.kind == "cuda" and var.index_url and platform in var.platforms
                   and accept(var)]
            out.sort(key=lambda x: (bool(x.pypi_default), _v(x.cuda)), reverse=True)
            return out

        same = m.torch_release(installed) if v is not None and installed else None
        if same is not None:
            found = variants(same)
            if found:
                base = v.base_version if v is not None else ""
                return same, found[0], base if same.has_patch(base) else (same.newest_patch or same.version)
        for rel in sorted(m.pytorch_releases, key=lambda r: Version(r.version), reverse=True):
            if rel is same:
                continue
            found = variants(rel)
            if found:
                return rel, found[0], rel.newest_patch or rel.version
        return None


SPEC = TorchSpec()
