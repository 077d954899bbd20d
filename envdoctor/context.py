"""What a rule reads: the snapshot, the matrices, and facts derived from both.

Outside envdoctor/rules/ on purpose: importing any module of that package first runs its __init__, which imports
every rule module. The facts, doctor and gate build or read a Context without pulling the catalogue in, and the rules
import it from here like any other fact."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from envdoctor.knowledge.matrices import Matrices
from envdoctor.snapshot import GPU, Framework, Snapshot
from envdoctor.records import dataclass, field


@dataclass
class Context:
    snap: Snapshot
    matrices: Matrices  # Matrices.empty() when no data could be loaded: lookups find nothing, no guard needed
    extra: Dict[str, Any] = field(default_factory=dict)  # room for commands that lay plans over a snapshot (gate)

    def __post_init__(self) -> None:
        if self.matrices is None:  # an untyped caller without data (commands.load_data's import failure)
            self.matrices = Matrices.empty("compatibility data unavailable")

    # -- platform ----------------------------------------------------------
    @property
    def os(self) -> str:
        system = (self.snap.platform.system or "").lower()
        if system.startswith("win"):
            return "windows"
        if system == "darwin":
            return "macos"
        return "linux"

    # -- driver and GPUs ---------------------------------------------------
    @property
    def driver_version(self) -> Optional[str]:
        return self.snap.driver.version

    @property
    def driver_ok(self) -> bool:
        return self.snap.driver.state == "ok" and bool(self.snap.driver.version)

    @property
    def gpus(self) -> List[GPU]:
        return list(self.snap.gpus)

    def gpu_cc(self, gpu: GPU) -> Optional[str]:
        """The GPU's compute capability, from the probe or, failing that, from its name in the matrices."""
        if gpu.compute_capability:
            return gpu.compute_capability
        return self.matrices.cc_for_gpu_name(gpu.name) if gpu.name else None

    @property
    def has_nvidia_gpu(self) -> bool:
        """An NVIDIA GPU is present and the driver works (devices may still be hidden by the environment)."""
        return self.driver_ok and bool(self.snap.gpus)

    @property
    def gpu_env(self) -> dict:
        return dict(self.snap.loader.gpu_env)

    # -- frameworks ----------------------------------------------------------
    def framework(self, name: str) -> Optional[Framework]:
        return next((fw for fw in self.frameworks if fw.name == name), None)

    @property
    def frameworks(self) -> List[Framework]:
        """The installed frameworks, less records of stub releases (tensorflow-gpu 2.12+ holds no TensorFlow:
        ED420 says so, and no rule judges it as a build)."""
        lookup = self.matrices.deprecated_distribution
        return [fw for fw in self.snap.python.frameworks if lookup(fw.distribution, fw.version or "") is None]

    @property
    def python_version(self) -> Optional[str]:
        return self.snap.python.version or None
