#!/usr/bin/env python3
"""Time `envdoctor smoke` over all frameworks against the slowest framework alone (--framework NAME).

The frameworks run in parallel, each in its own process, so the whole run should take little
more than its slowest framework. Each round runs the full smoke test and every framework alone
(order rotating between rounds); the medians are compared.

    python benchmarks/smoke_parallel.py --python .ci-venv/fw/bin/python --rounds 3

Target: ratio (all / slowest alone) <= 1.3.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def timed(argv, env) -> tuple:
    start = time.perf_counter()
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=1200)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[:6])} ... failed ({proc.returncode}): {proc.stderr.decode(errors='replace')[-500:]}")
    return elapsed, json.loads(proc.stdout)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=os.environ.get("ENVDOCTOR_TEST_FW_PYTHON", sys.executable),
                    help="interpreter with the frameworks installed (default: $ENVDOCTOR_TEST_FW_PYTHON or this one)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--timeout", default="300", help="--timeout for each framework")
    ap.add_argument("--envdoctor", default=None, help="envdoctor command (default: this interpreter -m envdoctor)")
    args = ap.parse_args()
    env = dict(os.environ)
    base = (args.envdoctor.split() if args.envdoctor else [sys.executable, "-m", "envdoctor"]) + [
        "smoke", "--python", args.python, "--format", "json", "--quiet", "--timeout", args.timeout]
    # warm-up (file cache, compiler caches), not counted; it also tells which frameworks there are
    _, data = timed(base, env)
    names = [f["name"] for f in data["frameworks"]]
    if not names:
        raise SystemExit(f"no framework installed in {args.python}")
    runs = [("all", base)] + [(n, base + ["--framework", n]) for n in names]
    times = {label: [] for label, _ in runs}
    for i in range(args.rounds):
        order = runs[i % len(runs):] + runs[:i % len(runs)]
        for label, argv in order:
            elapsed, _ = timed(argv, env)
            times[label].append(elapsed)
    med = {label: statistics.median(v) for label, v in times.items()}
    slowest = max(names, key=lambda n: med[n])
    for label, _ in runs:
        print(f"{('smoke, all ' + str(len(names)) if label == 'all' else 'smoke --framework ' + label):<32} "
              f"median {med[label]:7.2f} s  runs {', '.join(f'{x:.2f}' for x in times[label])}")
    ratio = med["all"] / med[slowest]
    print(f"ratio (all / slowest alone = {slowest}):  {ratio:.2f}   target <= 1.3 "
          f"(sum alone {sum(med[n] for n in names):.2f} s; {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
