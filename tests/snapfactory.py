"""Build snapshots of (fake) machines for rule tests, tersely.

    snap = machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2")], python="3.11.7")
"""
from __future__ import annotations

from typing import Iterable, Optional

from envdoctor.snapshot import GPU, Cudnn, Driver, Evidence, Framework, Library, Platform, Snapshot, Toolkit


def machine(
    driver: Optional[str] = None,
    driver_cuda: Optional[str] = None,
    state: Optional[str] = None,
    gpus: Iterable[str] = (),
    frameworks: Iterable[Framework] = (),
    packages: Optional[dict] = None,
    python: str = "3.11.7",
    system: str = "Linux",
    machine_arch: str = "x86_64",
    wsl: Optional[int] = None,
    toolkits: Iterable[Toolkit] = (),
    cudnn: Iterable[Cudnn] = (),
    gpu_env: Optional[dict] = None,
    ld_library_path: Iterable[str] = (),
    libraries: Iterable[Library] = (),
) -> Snapshot:
    snap = Snapshot(envdoctor_version="test", created="2026-11-29T00:00:00+00:00")
    snap.platform = Platform(system=system, machine=machine_arch, distro_id="ubuntu", distro_version="22.04",
                             distro_name="Ubuntu 22.04.4 LTS", wsl=wsl)
    gpu_list = []
    for i, spec in enumerate(gpus):
        name, _, cc = spec.rpartition(":") if ":" in spec else (spec, "", "")
        gpu_list.append(GPU(index=i, name=name or spec, compute_capability=cc or None, source="nvml"))
    snap.gpus = gpu_list
    if state is None:
        state = "ok" if driver and gpu_list else ("no_devices" if driver else "not_installed")
    snap.driver = Driver(state=state, version=driver, cuda_version=driver_cuda, source="nvml" if driver else "",
                         nvml="ok" if driver else "missing", nvidia_smi="ok" if driver else "missing")
    if driver:
        snap.driver.evidence.append(Evidence("nvml", f"driver {driver}"))
    snap.python.version = python
    snap.python.executable = "/home/user/venv/bin/python"
    snap.python.kind = "venv"
    snap.python.prefix = "/home/user/venv"
    snap.python.frameworks = list(frameworks)
    pk = {fw.distribution: fw.version for fw in snap.python.frameworks}
    pk.update(packages or {})
    snap.python.packages = pk
    snap.toolkits = list(toolkits)
    snap.cudnn = list(cudnn)
    snap.loader.gpu_env = dict(gpu_env or {})
    snap.loader.ld_library_path = list(ld_library_path)
    snap.loader.libraries = list(libraries)
    return snap


def torch(version: str, cuda: Optional[str] = None, cudnn: Optional[str] = None, rocm: Optional[str] = None,
          requires: Iterable[str] = (), arch_list=None) -> Framework:
    build = "cuda" if cuda else ("rocm" if rocm else "cpu")
    return Framework("torch", "torch", version, build=build, cuda_version=cuda, cudnn_version=cudnn,
                     rocm_version=rocm, requires=list(requires), arch_list=arch_list,
                     evidence=[Evidence("file:/home/user/venv/lib/python3.11/site-packages/torch/version.py",
                                        f"__version__ = '{version}'\ncuda = {cuda!r}")])


def tensorflow(version: str, cuda: Optional[str] = None, cudnn: Optional[str] = None, dist: str = "tensorflow",
               caps=None, requires: Iterable[str] = ()) -> Framework:
    return Framework("tensorflow", dist, version, build="cuda" if cuda else "cpu", cuda_version=cuda,
                     cudnn_version=cudnn, arch_list=caps, requires=list(requires),
                     evidence=[Evidence("file:/home/user/venv/lib/python3.11/site-packages/tensorflow/python/platform/build_info.py",
                                        f"'cuda_version': {cuda!r}, 'cudnn_version': {cudnn!r}")])


def jax(version: str, jaxlib: Optional[str] = None, plugin: Optional[str] = None, plugin_version: Optional[str] = None,
        requires: Iterable[str] = ()) -> list:
    """jax, jaxlib and optionally a CUDA plugin ("jax-cuda12-plugin"): returns a list of Framework."""
    cuda_major = plugin.split("cuda")[1].split("-")[0] if plugin else None
    out = [Framework("jax", "jax", version, build="cuda" if plugin else "cpu",
                     cuda_version=cuda_major, requires=[f"jaxlib<={jaxlib or version}"]),
           Framework("jaxlib", "jaxlib", jaxlib or version, build="cpu")]
    if plugin:
        out.append(Framework(plugin, plugin, plugin_version or jaxlib or version, build="cuda",
                             cuda_version=cuda_major, requires=list(requires)))
    return out
