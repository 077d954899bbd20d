#!/usr/bin/env python3
"""The long run of the cache's referee: the seeded random walk of tests/cache_walk.py, many steps and seeds.

After every step the snapshot and the check on a fake GPU made with envdoctor's cache must equal those made with
ENVDOCTOR_NO_CACHE=1 (tests/test_cache_defects.py runs 300 steps of one seed in the fast suite). Prints, per seed,
the steps walked, how many answers the cache gave (a walk in which the cache never answered would prove nothing),
the seconds, and the machine's load average; stops at the first difference with the seed, the step and a diff.

    python benchmarks/cache_walk.py --steps 5000 --seeds 1 [--first-seed 20261202]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.cache_walk import walk  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5000)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--first-seed", type=int, default=20261202)
    args = ap.parse_args()
    os.environ.setdefault("ENVDOCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="envdoctor-walk-data-"))
    total = 0
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        with tempfile.TemporaryDirectory(prefix="envdoctor-walk-") as tmp:
            start = time.monotonic()
            got = walk(Path(tmp), seed, args.steps)
            took = time.monotonic() - start
        total += got["steps"]
        print(f"seed {seed}: {got['steps']} steps, {got['compared']} snapshots compared, {got['kept_answers']} answers "
              f"given by the cache, {took:.0f} s (load average {os.getloadavg()[0]:.2f}): no difference", flush=True)
    print(f"{total} steps in all, no difference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
