"""Time `envdoctor gate --offline` in process on the hand-read corpus of tests/fixtures/gate (one target).

The verdicts are tests (tests/test_gate_resolve_corpus.py); a wall time depends on the machine and its load, so it is
measured here and read by a person, not asserted.

    python benchmarks/gate_offline_time.py [--rounds N]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from click.testing import CliRunner

from envdoctor.cli import cli
from test_gate_resolve_corpus import EXPECTED, GATE_FIX, TARGETS


def one_round(paths: list[str]) -> float:
    start = time.monotonic()
    for path in paths:
        r = CliRunner().invoke(cli, ["gate", str(GATE_FIX / path), *TARGETS["a100-535-py311"], "--offline",
                                     "--format", "json"])
        if r.exit_code not in (0, 1):
            raise SystemExit(f"gate {path}: exit {r.exit_code}\n{r.output}")
    return time.monotonic() - start


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    paths = sorted({p for p, *_ in EXPECTED})
    times = [one_round(paths) for _ in range(a.rounds)]
    print(f"gate --offline on the {len(paths)}-input corpus (one target, in process): "
          f"median {statistics.median(times):.2f} s, min {min(times):.2f} s over {a.rounds} rounds")


if __name__ == "__main__":
    main()
