"""What `envdoctor smoke` found: the result model (steps, frameworks, the run) and its JSON form. Re-exported by
envdoctor.smoke; the runner, the renderer and the findings import it from here."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

STATUSES = ("ok", "failed", "crashed", "timeout", "not_available", "skipped")
BAD = ("failed", "crashed", "timeout")  # statuses that make the run fail (exit 1)
RANK = {"crashed": 5, "timeout": 4, "failed": 3, "ok": 2, "not_available": 1, "skipped": 0}
FRAMEWORKS = ("torch", "tensorflow", "jax", "cupy", "onnxruntime")
DEFAULT_TIMEOUT = 120.0
SCHEMA = "envdoctor-smoke/1"


@dataclass
class StepResult:
    """One step of one framework: `step` (import, devices, matmul, conv, mixed_precision, compile,
    bench_matmul, bench_h2d, shutdown) on `device` ("cpu", "gpu", or "" for import/devices)."""

    step: str
    device: str = ""
    status: str = "skipped"  # ok | failed | crashed | timeout | not_available | skipped
    duration_ms: float = 0.0
    detail: str = ""  # what was done or what went wrong (error message, last lines of stderr)
    numbers: Dict[str, float] = field(default_factory=dict)  # max_abs_err, max_rel_err, tolerance, gflops ...
    info: Dict[str, Any] = field(default_factory=dict)  # devices found, versions, a traceback excerpt
    code: str = ""  # machine-readable reason: no_gpu, no_compiler, no_triton, mismatch ...
    hint: str = ""  # an explanation from the probe's facts, when one fits

    @property
    def label(self) -> str:
        name = self.step.replace("_", " ")
        return f"{name} ({self.device})" if self.device else name

    def to_dict(self) -> Dict[str, Any]:
        out = {"step": self.step, "device": self.device, "status": self.status, "duration_ms": self.duration_ms,
               "detail": self.detail, "numbers": dict(self.numbers), "info": dict(self.info), "code": self.code}
        if self.hint:
            out["hint"] = self.hint
        return out

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "StepResult":
        return cls(step=str(d.get("step", "")), device=str(d.get("device") or ""),
                   status=str(d.get("status") or "skipped"), duration_ms=float(d.get("duration_ms") or 0.0),
                   detail=str(d.get("detail") or ""), numbers=dict(d.get("numbers") or {}),
                   info=dict(d.get("info") or {}), code=str(d.get("code") or ""), hint=str(d.get("hint") or ""))


@dataclass
class FrameworkResult:
    name: str  # torch | tensorflow | jax | cupy
    version: str = ""  # as the probe found it installed
    distribution: str = ""
    build: str = ""  # the probe's view: cpu, cuda 12.1, rocm 6.0 ...
    status: str = "ok"  # the worst step status that counts: ok | failed | crashed | timeout
    outcome: str = ""  # how its process ended: "exit 0", "crashed (signal 11, SIGSEGV)", "timeout after 120 s (killed)"
    returncode: Optional[int] = None
    signal: Optional[int] = None
    duration_ms: float = 0.0
    steps: List[StepResult] = field(default_factory=list)
    stderr_tail: List[str] = field(default_factory=list)
    notes: List[str] = field(default_factory=list)  # telling stderr lines (dlopen failures, CUDA errors ...)

    def step(self, name: str, device: str = "") -> Optional[StepResult]:
        for s in self.steps:
            if s.step == name and s.device == device:
                return s
        return None

    @property
    def gpus(self) -> List[dict]:
        dev = self.step("devices")
        gpus = dev.info.get("gpus") if dev else None
        return list(gpus) if isinstance(gpus, list) else []

    def to_dict(self) -> Dict[str, Any]:
        return {"name": self.name, "version": self.version, "distribution": self.distribution, "build": self.build,
                "status": self.status, "outcome": self.outcome, "returncode": self.returncode, "signal": self.signal,
                "duration_ms": self.duration_ms, "steps": [s.to_dict() for s in self.steps],
                "stderr_tail": list(self.stderr_tail), "notes": list(self.notes)}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "FrameworkResult":
        return cls(name=str(d.get("name", "")), version=str(d.get("version") or ""),
                   distribution=str(d.get("distribution") or ""), build=str(d.get("build") or ""),
                   status=str(d.get("status") or "ok"), outcome=str(d.get("outcome") or ""),
                   returncode=d.get("returncode"), signal=d.get("signal"),
                   duration_ms=float(d.get("duration_ms") or 0.0),
                   steps=[StepResult.from_dict(s) for s in d.get("steps") or []],
                   stderr_tail=[str(x) for x in d.get("stderr_tail") or []], notes=[str(x) for x in d.get("notes") or []])


@dataclass
class SmokeRun:
    python: str = ""
    python_version: str = ""
    timeout: float = DEFAULT_TIMEOUT
    bench: bool = False
    require_gpu: bool = False
    duration_ms: float = 0.0
    frameworks: List[FrameworkResult] = field(default_factory=list)
    problems: List[str] = field(default_factory=list)  # run-level errors (e.g. --require-gpu and no framework)

    def exit_code(self) -> int:
        """0 ok; 1 a step failed, crashed or timed out (or a GPU was required and is missing)."""
        if self.problems or any(fw.status in BAD for fw in self.frameworks):
            return 1
        return 0

    def summary(self) -> Dict[str, Any]:
        counts = {s: 0 for s in STATUSES}
        for fw in self.frameworks:
            for s in fw.steps:
                counts[s.status] = counts.get(s.status, 0) + 1
        return {"frameworks": len(self.frameworks),
                "frameworks_ok": sum(1 for fw in self.frameworks if fw.status not in BAD),
                "steps": counts, "exit_code": self.exit_code()}

    def to_dict(self) -> Dict[str, Any]:
        return {"schema": SCHEMA, "python": self.python, "python_version": self.python_version,
                "timeout_s": self.timeout, "bench": self.bench, "require_gpu": self.require_gpu,
                "duration_ms": self.duration_ms, "summary": self.summary(), "problems": list(self.problems),
                "frameworks": [fw.to_dict() for fw in self.frameworks]}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "SmokeRun":
        return cls(python=str(d.get("python") or ""), python_version=str(d.get("python_version") or ""),
                   timeout=float(d.get("timeout_s") or DEFAULT_TIMEOUT), bench=bool(d.get("bench")),
                   require_gpu=bool(d.get("require_gpu")), duration_ms=float(d.get("duration_ms") or 0.0),
                   frameworks=[FrameworkResult.from_dict(f) for f in d.get("frameworks") or []],
                   problems=[str(p) for p in d.get("problems") or []])
