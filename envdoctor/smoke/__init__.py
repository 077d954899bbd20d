"""`envdoctor smoke`: prove that each installed framework really computes, on the GPU when there is one.

Every framework (torch, tensorflow, jax, cupy) found in the target environment by the
python-env probe gets a small program (envdoctor/smoke/programs/) run in its own process of
the target interpreter, all in parallel, each under a hard timeout. The program reports one
JSON line per step as it goes, so a segfault, an abort or a hang in one framework costs only
that framework's remaining steps and never envdoctor itself. This package is the only part of
envdoctor that makes a framework get imported, and only in those child processes.

Public API (kept light: importing this package imports no runner, renderer or framework; the result model is
results.py):
    run_smoke(snapshot=None, python=None, ...) -> SmokeRun
    smoke_findings(results, snapshot) -> list[Finding]   (IDs ED700-ED749, for `check --smoke`)
"""
from __future__ import annotations

from typing import Any, List, Optional

from envdoctor.smoke.results import (BAD, DEFAULT_TIMEOUT, FRAMEWORKS, RANK, SCHEMA, STATUSES, FrameworkResult,
                                     SmokeRun, StepResult)

__all__ = ["BAD", "DEFAULT_TIMEOUT", "FRAMEWORKS", "RANK", "SCHEMA", "STATUSES", "FrameworkResult", "SmokeRun",
           "StepResult", "run_smoke", "smoke_findings"]


def run_smoke(snapshot: Any = None, python: Optional[str] = None, **kwargs: Any) -> SmokeRun:
    """Run the smoke programs; see envdoctor.smoke.runner.run_smoke for the options."""
    from envdoctor.smoke.runner import run_smoke as _run

    return _run(snapshot=snapshot, python=python, **kwargs)


def smoke_findings(results: SmokeRun, snapshot: Any) -> List[Any]:
    """The doctor's findings (ED700-ED749) for a smoke run; see envdoctor.smoke.findings."""
    from envdoctor.smoke.findings import smoke_findings as _findings

    return _findings(results, snapshot)
