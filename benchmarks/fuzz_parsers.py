#!/usr/bin/env python3
"""The long run of the parser property tests: every parser, many mutated real fixtures.

Same parsers, seeds, mutations and contract as tests/test_parser_properties.py (which runs
a few dozen inputs per parser in the normal suite); this runs --examples per parser and
prints, per parser, the inputs tried, how many raised ParseError and the time taken.

    python benchmarks/fuzz_parsers.py --examples 3000
    python benchmarks/fuzz_parsers.py --examples 500 --only smi.

Exit status 1 when any input breaks the contract (the failing input is printed, shrunk).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hypothesis import HealthCheck, given, settings  # noqa: E402

from envdoctor.parsers import ParseError  # noqa: E402
from tests.test_parser_properties import SPECS, check_once, mutated  # noqa: E402


def fuzz(spec, examples: int) -> tuple:
    counts = {"inputs": 0, "parse_errors": 0}

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(mutated(spec.seeds()))
    def prop(text):
        counts["inputs"] += 1
        try:
            spec.parse(text)
        except ParseError:
            counts["parse_errors"] += 1
        check_once(spec, text)

    prop()
    return counts["inputs"], counts["parse_errors"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=2000, help="inputs per parser (default 2000)")
    ap.add_argument("--only", default="", help="run only the parsers whose name starts with this")
    args = ap.parse_args(argv)
    total, failed, start = 0, [], time.perf_counter()
    for spec in SPECS:
        if not spec.name.startswith(args.only):
            continue
        t0 = time.perf_counter()
        try:
            n, pe = fuzz(spec, args.examples)
        except Exception as exc:  # noqa: BLE001 - report every parser, then fail
            failed.append(spec.name)
            print(f"{spec.name:34} FAILED: {type(exc).__name__}: {str(exc)[:300]}")
            continue
        total += n
        print(f"{spec.name:34} {n:7d} inputs  {pe:5d} ParseError  {time.perf_counter() - t0:6.1f} s")
    print(f"total: {total} inputs, {len(failed)} parsers broke the contract, {time.perf_counter() - start:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
