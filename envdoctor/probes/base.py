"""What every probe gets and how it reports.

A probe is a function `probe(ctx, snap) -> None` that fills its own part of the
snapshot. It may raise ProbeUnknown("reason") to say its part stays unknown; any
other exception is caught by the runner and recorded too, so one failing probe
never sinks the report.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Callable, Mapping, Optional

from envdoctor.fsroot import Root
from envdoctor.snapshot import Snapshot
from envdoctor.subproc import DEFAULT_TIMEOUT, Runner


class ProbeUnknown(Exception):
    """The probe could not answer; its part of the snapshot stays unknown."""


@dataclass
class ProbeContext:
    root: Root = field(default_factory=Root)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    timeout: float = DEFAULT_TIMEOUT
    target_python: Optional[str] = None  # --python PATH; None: the active env or this interpreter
    use_nvml: bool = True  # tests turn NVML off to exercise the file and command layers
    python_report: Optional[dict] = None  # the --python helper's answer when the CLI already checked it

    @property
    def runner(self) -> Runner:
        return Runner(env=self.env, timeout=self.timeout)


ProbeFn = Callable[[ProbeContext, Snapshot], None]
