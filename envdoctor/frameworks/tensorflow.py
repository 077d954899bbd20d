"""TensorFlow: ``tensorflow`` (CUDA on Linux, the [and-cuda] extra from 2.14) and ``tensorflow-cpu``; its builds
are the release rows of the matrices (a tested release and the patch releases of its series).  TensorFlow
generates GPU code with XLA, so PTX of an older architecture is no help where its CUDA predates the GPU."""
from __future__ import annotations

from typing import Any, Callable, List, Optional

from packaging.version import Version

from envdoctor.frameworks.base import (
    PLATFORMS, Candidate, FrameworkSpec, Requirement, Target, Unknown, _pin_names, _sorted_desc, python_fits,
)


def tf_candidate(m: Any, release: Any, gpu: bool, platform: str, wsl: bool = False) -> Candidate:
    v = release.tested
    if not gpu:
        name = "tensorflow-cpu" if platform == "linux-x86_64" else "tensorflow"
        cand = Candidate(framework="tensorflow", version=v, build="cpu", kind="cpu", label=f"tensorflow {v} (CPU)",
                         full_version=v, python=release.python, platforms=list(PLATFORMS), source=m.row_source(release), row=release)
        cand.requirements.append(Requirement(f"{name}=={v}", "CPU-only build"))
        cand.unverified.append(f"tensorflow {v}: CPU wheels per platform are not in the data (presumed published)")
        return cand
    plats = [p for p in release.gpu_platforms if p in PLATFORMS]
    if "wsl2" in release.gpu_platforms and wsl:
        plats.append("linux-x86_64")
    elif wsl:
        plats = [p for p in plats if p != "linux-x86_64"]
    build = "and-cuda" if release.and_cuda else "system-cuda"
    cand = Candidate(framework="tensorflow", version=v, build=build, kind="cuda",
                     label=f"tensorflow {v}" + (" [and-cuda]" if release.and_cuda else ""), full_version=v,
                     cuda=release.cuda, python=release.python, platforms=sorted(set(plats)),
                     archs=list(release.compute_capabilities), source=m.row_source(release), row=release,
                     archs_presumed=str(release.cc_verified or "").strip().upper().startswith("UNVERIFIED"))
    pin = release.cudnn_pin
    if pin and pin.startswith("=="):
        cand.cudnn = pin[2:]
    if release.and_cuda:
        cand.pins = _pin_names(release.and_cuda)
        cand.requirements.append(Requirement(f"tensorflow[and-cuda]=={v}", f"built for CUDA {release.cuda}, cuDNN {release.cudnn}; "
                                             "the and-cuda extra installs the nvidia-* wheels"))
    else:
        cand.pins_known = "none"
        dist = release.gpu_distribution or "tensorflow"  # up to 2.0 the CUDA wheels are tensorflow-gpu
        cand.requirements.append(Requirement(f"{dist}=={v}", f"needs CUDA {release.cuda} and cuDNN {release.cudnn} installed "
                                             "system-wide (no [and-cuda] extra before 2.14)"))
        cand.notes.append(f"tensorflow {v} loads a system CUDA {release.cuda} / cuDNN {release.cudnn}: install them separately")
    if not release.compute_capabilities:
        cand.unverified.append(Unknown(f"tensorflow {v}: its compiled compute capabilities are not in the data"))
    if release.unverified:
        cand.unverified.append(f"tensorflow {v}: {release.verified}")
    return cand


class TensorflowSpec(FrameworkSpec):
    name = "tensorflow"
    lock_examples = ("2.16.1", "2.16", ">=2.15,<2.18")
    distributions = {"tensorflow": "gpu", "tensorflow-cpu": "cpu", "tensorflow-gpu": "gpu", "tf-nightly": "gpu",
                     "tf-nightly-cpu": "cpu", "tf-nightly-gpu": "gpu"}
    xla = True
    smoke_program = "tensorflow_smoke.py"
    refresh_table = "tensorflow"
    refresh_learner = "envdoctor.knowledge.refresh:_tensorflow"
    version_files = ("tensorflow/python/platform/build_info.py", "tensorflow_core/python/platform/build_info.py")
    version_parser = "envdoctor.parsers.tf_build_info:parse_build_info"

    def candidates(self, m: Any, target: Target) -> List[Candidate]:
        out: List[Candidate] = []
        for rel in sorted(m.tensorflow_releases, key=lambda r: Version(r.tested), reverse=True):
            for v in _sorted_desc(rel.versions):  # the tested release and the patch releases of the series
                out.append(tf_candidate(m, rel.for_patch(v), not target.cpu, target.platform, target.wsl))
        return out

    def known_versions(self, m: Any) -> List[str]:
        return sorted({v for r in m.tensorflow_releases for v in r.versions}, key=Version)

    def python_specs(self, m: Any) -> List[str]:
        return [r.python for r in m.tensorflow_releases if r.python]


    def choose_release(self, m: Any, platform: str, wsl: bool, python: Optional[str],
                       accept: Callable[[Any], bool]) -> Optional[Any]:
        """The newest release row (a series, by its tested release) whose GPU build is published for
        ``platform`` (WSL2 included) and ``python`` and for which ``accept(row)`` holds, for a fix."""
        for rel in sorted(m.tensorflow_releases, key=lambda r: Version(r.version), reverse=True):
            cand = tf_candidate(m, rel, True, platform, wsl)
            if platform in cand.platforms and python_fits(cand, python) is not False and accept(rel):
                return rel
        return None


SPEC = TensorflowSpec()
