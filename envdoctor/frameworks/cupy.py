"""CuPy: ``cupy-cudaNNx`` wheels (one distribution per CUDA major).

The matrices hold no CuPy rows today (``lock`` never offered CuPy; ``check`` reads a CuPy build's CUDA from its
distribution name), so :meth:`CupySpec.candidates` is empty: this spec owns the distribution names and their
classification, and a future matrices table of CuPy releases plugs in here without touching lock, gate or check.
"""
from __future__ import annotations

from typing import Any, List

from envdoctor.frameworks.base import Candidate, FrameworkSpec, Target


class CupySpec(FrameworkSpec):
    name = "cupy"
    distributions = {"cupy": "gpu", "cupy-cuda11x": "gpu", "cupy-cuda12x": "gpu", "cupy-cuda13x": "gpu"}
    lockable = False
    smoke_program = "cupy_smoke.py"
    version_files = ("cupy/_version.py",)
    version_parser = "envdoctor.parsers.torch_version:parse_simple_version_py"

    def candidates(self, m: Any, target: Target) -> List[Candidate]:
        """No CuPy release rows in the matrices: no candidates (never invented)."""
        return []

    def known_versions(self, m: Any) -> List[str]:
        return []

    def python_specs(self, m: Any) -> List[str]:
        return []


SPEC = CupySpec()
