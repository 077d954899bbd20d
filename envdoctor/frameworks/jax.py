"""JAX: ``jax`` + ``jaxlib`` and the CUDA plugins (``jax-cudaNN-plugin`` / ``-pjrt``, installed by the
``jax[cudaNN]`` extra); its builds are the jax release rows with their plugin rows (a plugin states a minimum
compute capability and driver instead of an arch list).  XLA generates the GPU code."""
from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

from envdoctor.frameworks.base import PLATFORMS, Candidate, FrameworkSpec, Requirement, Target, _pin_names, python_fits
from envdoctor.knowledge.tables import parse_version
from envdoctor.parsers.jax_build import plugin_module_paths


def jax_gpu_platforms(m: Any) -> List[str]:
    """The platforms jax's CUDA plugins serve (incompatibilities.toml [[fact]] jax-cuda-platforms)."""
    return m.fact_value("jax-cuda-platforms").split()


def jax_candidate(m: Any, release: Any, plugin: Optional[Any]) -> Candidate:
    v = release.version
    if plugin is None:
        cand = Candidate(framework="jax", version=v, build="cpu", kind="cpu", label=f"jax {v} (CPU)", full_version=v,
                         python=release.requires_python, platforms=list(PLATFORMS), source=m.row_source(release))
        cand.requirements.append(Requirement(f"jax=={v}", "CPU-only (no CUDA plugin)"))
    else:
        runtime = None
        if plugin.cuda_runtime:
            try:
                lows = [s.version for s in SpecifierSet(plugin.cuda_runtime) if s.operator in (">=", "==", "~=")]
            except InvalidSpecifier:
                lows = []
            runtime = _series(lows[0]) if lows else None
        cand = Candidate(framework="jax", version=v, build=plugin.name, kind="cuda", label=f"jax {v} [{plugin.name}]",
                         full_version=v, cuda=runtime or f"{plugin.cuda_major}.0", python=release.requires_python,
                         platforms=jax_gpu_platforms(m), cc_min=plugin.cc_min, driver_min=plugin.driver_min,
                         source=m.row_source(plugin))
        if plugin.cudnn_min and plugin.cudnn and plugin.cudnn.startswith("=="):
            cand.cudnn = plugin.cudnn[2:]
        pins = {f"nvidia-cudnn-cu{plugin.cuda_major}": plugin.cudnn}
        if plugin.cuda_runtime and plugin.cuda_major == 12:
            pins["nvidia-cuda-runtime-cu12"] = plugin.cuda_runtime
        cand.pins = _pin_names(pins)
        cand.requirements.append(Requirement(f"jax[{plugin.name}]=={v}", f"installs {plugin.package}{plugin.pin} with the "
                                             f"nvidia-* wheels (cuDNN {plugin.cudnn}, CUDA runtime {plugin.cuda_runtime})"))
        if plugin.unverified:
            cand.unverified.append(f"{cand.label}: {plugin.verified}")
    if release.jaxlib:
        cand.requirements.append(Requirement(f"jaxlib{release.jaxlib}", f"what jax {v} requires"))
    if release.unverified:
        cand.unverified.append(f"jax {v}: {release.verified}")
    return cand


def _series(v: Optional[str]) -> Optional[str]:
    pv = parse_version(v)
    if pv is None:
        return None
    rel = pv.release + (0,)
    return f"{rel[0]}.{rel[1]}"


class JaxSpec(FrameworkSpec):
    name = "jax"
    lock_examples = ("0.4.30", "0.4", ">=0.4.26,<0.5")
    distributions = {"jax": "gpu", "jaxlib": "cpu", "jax-cuda11-plugin": "plugin", "jax-cuda12-plugin": "plugin",
                     "jax-cuda13-plugin": "plugin", "jax-cuda11-pjrt": "plugin", "jax-cuda12-pjrt": "plugin",
                     "jax-cuda13-pjrt": "plugin"}
    xla = True
    smoke_program = "jax_smoke.py"
    refresh_table = "jax"
    refresh_learner = "envdoctor.knowledge.refresh:_jax"
    # jax, jaxlib, then each plugin's module (jax_cuda12_plugin/, jax_plugins/xla_cuda12/ for the -pjrt)
    version_files = ("jax/version.py", "jaxlib/version.py") + tuple(
        rel for dist, kind in distributions.items() if kind == "plugin" for rel in plugin_module_paths(dist))
    version_parser = "envdoctor.parsers.jax_build:parse_jax_version_file"

    def releases(self, m: Any) -> List[Any]:
        """The jax release rows, newest first (a release's builds: CPU, or one per CUDA plugin)."""
        return sorted(m.jax_releases, key=lambda r: Version(r.version), reverse=True)

    def candidates(self, m: Any, target: Target) -> List[Candidate]:
        out: List[Candidate] = []
        for rel in self.releases(m):
            if target.cpu:
                out.append(jax_candidate(m, rel, None))
            else:
                for key in sorted(rel.plugins, key=lambda k: rel.plugins[k].cuda_major, reverse=True):
                    out.append(jax_candidate(m, rel, rel.plugins[key]))
        return out

    def known_versions(self, m: Any) -> List[str]:
        return sorted({r.version for r in m.jax_releases}, key=Version)

    def python_specs(self, m: Any) -> List[str]:
        return [r.requires_python for r in m.jax_releases if r.requires_python]


    def choose_plugin(self, m: Any, python: Optional[str], accept: Callable[[Any, Any], bool],
                      prefer_version: Optional[str] = None) -> Optional[Tuple[Any, Any]]:
        """(release, plugin) for which ``accept(release, plugin)`` holds and whose release supports ``python``,
        for a fix: the ``prefer_version`` release first (the installed jax), else the newest; the newest CUDA
        major's plugin first."""
        def plugins(rel: Any) -> Optional[Tuple[Any, Any]]:
            if python_fits(jax_candidate(m, rel, None), python) is False:
                return None
            for name in sorted(rel.plugins, key=lambda n: rel.plugins[n].cuda_major, reverse=True):
                if accept(rel, rel.plugins[name]):
                    return rel, rel.plugins[name]
            return None

        preferred = m.jax_release(prefer_version) if prefer_version else None
        found = plugins(preferred) if preferred is not None else None
        for rel in sorted(m.jax_releases, key=lambda r: Version(r.version), reverse=True):
            if found is not None:
                break
            found = plugins(rel)
        return found


SPEC = JaxSpec()
