"""What `envdoctor gate` takes on the issue-17 corpus (tests/fixtures/gate: the real install inputs of
tests/test_gate_resolve_corpus.py), offline (the data-only planner) and resolving (uv, or pip, against the indexes
this machine reaches), each input on each of the four targets, one `python -m envdoctor gate` process per run.

    python benchmarks/gate_corpus.py [--mode offline|resolve|both] [--targets all|a100-535-py311,...] [--repeat 1]

Per mode: the total wall time, the median and the slowest run, and for the resolving mode how many runs really
resolved (the rest fell back to the planner: an index not reachable here, an sdist the resolver would have to
build) -- a resolving figure is only meaningful with the indexes the inputs name reachable.

Measured 2026-12-01 on the project's 2-core machine shared with ~7 other jobs (noisy), all four targets, only the
default index reachable (the PyTorch / jax indexes and find-links pages were not):

    offline   80 runs: total 148.0 s, median 1.62 s, slowest 4.06 s
    resolve   80 runs: total 333.3 s, median 2.54 s, slowest 15.64 s, 20 of 80 really resolved (the rest fell
              back to the planner: an index not reachable here, an sdist the resolver would have to build)

In process (tests/test_gate_resolve_corpus.py::test_corpus_offline_time), one target: 1.8 s for the 20 inputs.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.test_gate_resolve_corpus import EXPECTED, GATE_FIX, TARGETS  # noqa: E402


def run_one(path: str, target: str, offline: bool) -> Tuple[float, str]:
    argv = [sys.executable, "-m", "envdoctor", "gate", str(GATE_FIX / path), *TARGETS[target], "--format", "json"]
    if offline:
        argv.append("--offline")
    start = time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, cwd=str(ROOT), timeout=600,
                         env=dict(os.environ))
    took = time.monotonic() - start
    try:
        resolver = json.loads(out.stdout)["inputs"][0]["resolver"]
    except (ValueError, KeyError, IndexError):
        resolver = f"failed (exit {out.returncode}): {out.stderr.strip()[-200:]}"
    return took, resolver


def measure(offline: bool, targets: List[str], repeat: int) -> Dict[str, object]:
    times: List[float] = []
    resolved: List[float] = []  # the runs the resolver really answered
    runs = [(p, t) for p, t, _, _ in EXPECTED if t in targets]
    start = time.monotonic()
    for _ in range(repeat):
        for path, target in runs:
            took, resolver = run_one(path, target, offline)
            times.append(took)
            if not resolver.startswith(("offline", "failed")):
                resolved.append(took)
    return {"runs": len(times), "total_s": time.monotonic() - start, "median_s": statistics.median(times),
            "max_s": max(times), "resolved": len(resolved),
            "resolved_median_s": statistics.median(resolved) if resolved else 0.0}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=("offline", "resolve", "both"), default="both")
    ap.add_argument("--targets", default="all")
    ap.add_argument("--repeat", type=int, default=1)
    a = ap.parse_args()
    targets = list(TARGETS) if a.targets == "all" else a.targets.split(",")
    inputs = len({p for p, *_ in EXPECTED})
    print(f"gate on the corpus: {inputs} inputs x {len(targets)} target(s), {a.repeat} repeat(s), one process per run")
    for mode in (("offline", "resolve") if a.mode == "both" else (a.mode,)):
        r = measure(mode == "offline", targets, a.repeat)
        extra = "" if mode == "offline" else (f", {r['resolved']} of {r['runs']} really resolved (median "
                                              f"{r['resolved_median_s']:.2f} s; the rest fell back to the planner)")
        print(f"  {mode:8} {r['runs']:3} runs: total {r['total_s']:.1f} s, median {r['median_s']:.2f} s, "
              f"slowest {r['max_s']:.2f} s{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
