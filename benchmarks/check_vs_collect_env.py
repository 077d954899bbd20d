#!/usr/bin/env python3
"""Time `envdoctor check` against `python -m torch.utils.collect_env` on the same interpreter.

Paired runs: each round runs both commands back to back (order alternating), so
both see the same machine state and caches; the ratio of the medians is printed.
The target interpreter needs torch (and, for a fair picture, tensorflow-cpu and
jax) installed; envdoctor inspects it with --python and never imports them.

    python benchmarks/check_vs_collect_env.py --python .ci-venv/fw/bin/python --rounds 5

When envdoctor is installed in that interpreter (`pip install .` there), both commands
run on it; otherwise this interpreter's envdoctor inspects it with --python.

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
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    if args.envdoctor:
        check = args.envdoctor.split() + ["check", "--python", args.python, "--format", "json"]
    elif subprocess.run([args.python, "-c", "import envdoctor"], capture_output=True).returncode == 0:
        # envdoctor installed in the target interpreter itself: the same interpreter runs both
        check = [args.python, "-m", "envdoctor", "check", "--format", "json"]
    else:
        check = [sys.executable, "-m", "envdoctor", "check", "--python", args.python, "--format", "json"]
    print("envdoctor:", " ".join(check))
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
