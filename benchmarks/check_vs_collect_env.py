#!/usr/bin/env python3
"""Time `envdoctor check` against `python -m torch.utils.collect_env` on the same interpreter.

Paired runs: each round runs both commands back to back (order alternating), so
both see the same machine state and caches; the ratio of the medians is printed.
The target interpreter needs torch (and, for a fair picture, tensorflow-cpu and
jax) installed; envdoctor inspects it with --python and never imports them.

    python benchmarks/check_vs_collect_env.py --python .ci-venv/fw/bin/python --rounds 5

Target: ratio <= 0.1 (aim 0.05).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time


def timed(argv, env) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, timeout=600)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-500:]}")
    return elapsed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=os.environ.get("ENVDOCTOR_TEST_FW_PYTHON", sys.executable),
                    help="interpreter with torch installed (default: $ENVDOCTOR_TEST_FW_PYTHON or this one)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--envdoctor", default=None, help="envdoctor command (default: this interpreter -m envdoctor)")
    args = ap.parse_args()
    env = dict(os.environ)
    check = (args.envdoctor.split() if args.envdoctor else [sys.executable, "-m", "envdoctor"]) + [
        "check", "--python", args.python, "--format", "json"]
    baseline = [args.python, "-m", "torch.utils.collect_env"]
    # warm both once (file cache), not counted
    timed(check, env)
    timed(baseline, env)
    ours, theirs = [], []
    for i in range(args.rounds):
        pair = [(check, ours), (baseline, theirs)]
        if i % 2:
            pair.reverse()
        for argv, bucket in pair:
            bucket.append(timed(argv, env))
    m_ours, m_theirs = statistics.median(ours), statistics.median(theirs)
    ratio = m_ours / m_theirs
    print(f"envdoctor check:              median {m_ours:.3f} s  runs {', '.join(f'{x:.3f}' for x in ours)}")
    print(f"torch.utils.collect_env:      median {m_theirs:.3f} s  runs {', '.join(f'{x:.3f}' for x in theirs)}")
    print(f"ratio (check / collect_env):  {ratio:.3f}   target <= 0.10, aim 0.05")
    return 0


if __name__ == "__main__":
    sys.exit(main())
