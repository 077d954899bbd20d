"""What the NVIDIA driver of a snapshot runs: its facts, and a CUDA build's fate under it.

Owns: `DriverFacts` / `driver_facts` (the working driver's version, the CUDA it reports, the table that
applies), `cuda_floor` (the oldest driver that runs a CUDA X.Y build), `has_mvc`, `driver_runs` (does the
build run at all: minor-version compatibility, NVIDIA's CUDA compatibility guide), `driver_native` (is the
driver at least the X.Y toolkit driver: PTX JIT of that toolkit's PTX), and `driver_evidence`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional

from packaging.version import Version

from envdoctor.facts.labels import driver_source
from envdoctor.facts.platform import driver_os
from envdoctor.facts.versions import major_minor, major_minor_version, parse_version
from envdoctor.records import dataclass

if TYPE_CHECKING:  # facts never import envdoctor.rules at module level: that package imports every rule module
    from envdoctor.rules.base import EvidenceItem
    from envdoctor.knowledge.matrices import Matrices
    from envdoctor.context import Context

__all__ = ["DriverFacts", "cuda_floor", "driver_evidence", "driver_facts", "driver_native", "driver_runs", "has_mvc"]


@dataclass
class DriverFacts:
    version: Optional[str]  # "535.104.05"
    reported: Optional[str]  # the CUDA version the driver itself reports ("12.2")
    os: str  # linux | windows (WSL uses the Windows driver)
    data_max: Optional[str]  # newest CUDA X.Y whose toolkit driver <= version, per the matrices
    source: str

    @property
    def max_cuda(self) -> Optional[str]:
        """The newest CUDA X.Y this driver supports natively: the larger of what it reports (authoritative,
        also under forward compatibility) and what the data derives from its version."""
        cands = [v for v in (major_minor_version(self.reported), major_minor_version(self.data_max)) if v is not None]
        if not cands:
            return None
        best = max(cands)
        return f"{best.major}.{best.minor}"

    def describe(self) -> str:
        mc = self.max_cuda
        if self.version:
            return f"{self.version}" + (f" (supports CUDA <= {mc})" if mc else "")
        return f"a driver that reports CUDA {self.reported}"


def driver_facts(ctx: "Context") -> Optional[DriverFacts]:
    """None unless the driver works and its version or CUDA level is known (and the OS has NVIDIA's tables)."""
    d = ctx.snap.driver
    if d.state != "ok":
        return None
    version = d.version if parse_version(d.version) is not None else None
    reported = d.cuda_version if major_minor_version(d.cuda_version) is not None else None
    if version is None and reported is None:
        return None
    if ctx.os not in ("linux", "windows"):
        return None
    os_ = driver_os(ctx, wsl_is_windows=True)
    data_max = None
    if version:
        try:
            data_max = ctx.matrices.max_cuda_for_driver(version, os_)
        except Exception:  # noqa: BLE001 - an odd version: the reported CUDA still speaks
            data_max = None
    return DriverFacts(version, reported, os_, data_max, driver_source(ctx.snap))


def cuda_floor(m: "Matrices", cuda: str, os_: str) -> Optional[str]:
    """The oldest driver that runs a build of CUDA `cuda`: the MVC floor of its major, or for families
    without minor-version compatibility (10.x) the toolkit driver of that X.Y."""
    v = parse_version(cuda)
    if v is None:
        return None
    floor = m.mvc_floor(v.major, os_)
    if floor is None and "." in cuda:
        floor = m.min_driver_for_cuda(major_minor(cuda) or cuda, os_)
    return floor


def has_mvc(m: "Matrices", major: int, os_: str) -> bool:
    """Does CUDA `major` have minor-version compatibility (a driver floor for every X.y)?"""
    return m.mvc_floor(major, os_) is not None


def driver_runs(ctx: "Context", df: DriverFacts, cuda: str) -> Optional[bool]:
    """Can this driver run a build of CUDA `cuda` (at all)?  None when nothing is known."""
    m = ctx.matrices
    v = parse_version(cuda)
    if v is None:
        return None
    votes: List[bool] = []
    rv = major_minor_version(df.reported)
    if rv is not None:
        want = major_minor_version(cuda)
        if has_mvc(m, v.major, df.os) or "." not in cuda or want is None:
            votes.append(rv.major >= v.major)
        else:
            votes.append(rv >= want)
    floor = cuda_floor(m, cuda, df.os)
    if df.version and floor is not None and parse_version(floor) is not None:
        votes.append(Version(df.version) >= Version(floor))
    if not votes:
        return None
    return any(votes)


def driver_native(ctx: "Context", df: DriverFacts, cuda: str) -> Optional[bool]:
    """Is the driver at least the toolkit driver of CUDA X.Y (full features, PTX JIT of that toolkit's PTX)?"""
    if "." not in cuda:
        return None
    want = major_minor_version(cuda)
    votes: List[bool] = []
    rv = major_minor_version(df.reported)
    if rv is not None and want is not None:
        votes.append(rv >= want)
    need = ctx.matrices.min_driver_for_cuda(major_minor(cuda) or cuda, df.os)
    if df.version and need is not None and parse_version(need) is not None:
        votes.append(Version(df.version) >= Version(need))
    if not votes:
        return None
    return any(votes)


def driver_evidence(df: DriverFacts) -> List["EvidenceItem"]:
    """The driver's version and reported CUDA as evidence items."""
    from envdoctor.rules.base import EvidenceItem

    ev = []
    if df.version:
        ev.append(EvidenceItem("NVIDIA driver", df.version, df.source))
    if df.reported:
        ev.append(EvidenceItem("CUDA version reported by the driver", df.reported, df.source))
    return ev
