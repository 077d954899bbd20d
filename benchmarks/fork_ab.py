#!/usr/bin/env python3
"""Paired, interleaved A/B timing of one envdoctor command between two checkouts (say main and a branch).

    python benchmarks/fork_ab.py /path/to/checkout-A /path/to/checkout-B --rounds 20

Each checkout runs on the same interpreter (--python, default this one) with PYTHONPATH set to it and its own cache
folder (ENVDOCTOR_CACHE_DIR, filled by --warm runs first, so every run is warm: its kept answers present, and its
bytecode written, as in everyday use). Each round runs A and B back to back, the order alternating, so that both see the same machine
state; before each pair the 1-minute load average is read. Per run: wall time, and CPU time (user + sys) of the
whole process tree, from os.wait4 of the command (its own CPU and that of every descendant it reaped: commands,
helpers, forked children). The medians, the spread, and the median of the per-round differences B - A are printed,
with a sign count (the rounds where B was faster); the exit codes and rule IDs of the two reports are
compared, so a difference in speed is never a difference in what was judged. Nothing here is asserted.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Sequence, Tuple


def one_run(python: str, checkout: str, args: Sequence[str], env: Dict[str, str], cwd: str
            ) -> Tuple[float, float, int, Optional[List[str]]]:
    """(wall s, CPU s of the process tree, exit code, the rule IDs of the JSON findings or None)."""
    out = tempfile.TemporaryFile()
    start = time.monotonic()
    proc = subprocess.Popen([python, "-m", "envdoctor", *args], env=env, cwd=cwd, stdout=out,
                            stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    out.seek(0)
    try:
        ids: Optional[List[str]] = sorted(f["id"] for f in json.loads(out.read()).get("findings", []))
    except (ValueError, AttributeError, KeyError, TypeError):
        ids = None
    out.close()
    return wall, usage.ru_utime + usage.ru_stime, proc.returncode, ids


def env_for(checkout: str, cache_dir: str) -> Dict[str, str]:
    env = dict(os.environ, PYTHONPATH=os.path.abspath(checkout), ENVDOCTOR_CACHE_DIR=cache_dir)
    env.pop("ENVDOCTOR_NO_CACHE", None)
    # the warm runs write each checkout's bytecode, as an installed package has it: without it every run compiles
    # whatever has no current .pyc, and the side with fewer of them loses tens of ms for it
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def summary(name: str, values: List[float]) -> str:
    ms = sorted(v * 1000 for v in values)
    return (f"{name:>10}: median {statistics.median(ms):7.1f} ms  mean {statistics.mean(ms):7.1f}  "
            f"min {ms[0]:7.1f}  max {ms[-1]:7.1f}")


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="checkout A (its root: the folder holding envdoctor/)")
    ap.add_argument("b", help="checkout B")
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--warm", type=int, default=2, help="untimed runs of each first (they fill the caches)")
    ap.add_argument("--python", default=sys.executable, help="the interpreter both run on")
    ap.add_argument("--json", help="also write every run's figures to this file")
    ap.add_argument("command", nargs="*", default=["check", "--format", "json"],
                    help="envdoctor's arguments (default: check --format json); put them after --")
    opts = ap.parse_args(argv)
    sides = {"A": opts.a, "B": opts.b}
    with tempfile.TemporaryDirectory(prefix="envdoctor-ab-") as tmp:
        cwd = os.path.join(tmp, "cwd")  # a folder with no project files: the same for both
        os.mkdir(cwd)
        envs = {k: env_for(v, os.path.join(tmp, f"cache-{k}")) for k, v in sides.items()}
        for side, path in sides.items():
            probe = subprocess.run([opts.python, "-c", "import envdoctor, os; print(os.path.dirname(envdoctor.__file__))"],
                                   env=envs[side], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()
            print(f"{side}: {path} (envdoctor from {probe})")
        for _ in range(opts.warm):
            for side in sides:
                one_run(opts.python, sides[side], opts.command, envs[side], cwd)
        rows: List[Dict[str, object]] = []  # every run's figures, for --json
        figures: Dict[str, List[float]] = {f"{s}_{k}": [] for s in sides for k in ("wall", "cpu")}
        loads: List[float] = []
        same = True
        for r in range(opts.rounds):
            load = os.getloadavg()[0]
            order = ("A", "B") if r % 2 == 0 else ("B", "A")
            got = {}
            for side in order:
                got[side] = one_run(opts.python, sides[side], opts.command, envs[side], cwd)
            rows.append({"round": r, "load1": load, "first": order[0],
                         **{f"{s}_{k}": v for s in sides for k, v in zip(("wall", "cpu", "rc", "ids"), got[s])}})
            loads.append(load)
            for s in sides:
                figures[f"{s}_wall"].append(got[s][0])
                figures[f"{s}_cpu"].append(got[s][1])
            same = same and got["A"][2:] == got["B"][2:]
            print(f"round {r:2d} load {load:5.2f}  A wall {got['A'][0] * 1000:6.1f} cpu {got['A'][1] * 1000:6.1f}  "
                  f"B wall {got['B'][0] * 1000:6.1f} cpu {got['B'][1] * 1000:6.1f} ms", flush=True)
    for what in ("wall", "cpu"):
        a, b = figures[f"A_{what}"], figures[f"B_{what}"]
        diff = [y - x for x, y in zip(a, b)]
        print(f"{what}:")
        print(summary("A", a))
        print(summary("B", b))
        print(summary("B - A", diff) + f"  (B faster in {sum(d < 0 for d in diff)}/{len(diff)} rounds)")
    print(f"load average (1 min) before each pair: median {statistics.median(loads):.2f}, "
          f"min {min(loads):.2f}, max {max(loads):.2f}; {os.cpu_count()} CPUs")
    print("reports: " + ("the same exit codes and rule IDs in every round" if same else "DIFFER between A and B"))
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
