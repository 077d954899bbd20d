"""Score `envdoctor gate` against the held-out corpus in tests/fixtures/gate_corpus.

Runs `python -m envdoctor gate FILE TARGETARGS --format json` (with `--offline`,
and without it: resolving) as a subprocess on every file x target of TRUTH.toml,
so it scores whatever envdoctor is importable (PYTHONPATH) from any checkout.

A pair is judged unless its truth is `unsure = true` or `verdict = "unjudgeable"`.
A judged pair is right when:
  * truth "ok": envdoctor reports no error-severity finding;
  * truth "error": envdoctor's set of error-severity finding IDs equals the
    truth's `errors` set exactly (a missing ID is a miss, an extra one is wrong);
  * truth "invalid" (pip rejects the file): envdoctor exits 2 with an input error.
False error: truth ok, envdoctor reports an error.  Miss: truth error, envdoctor
reports none.  Output: per mode the % right of judged pairs, false errors, misses,
pairs where resolving is wrong but offline right, per-file wall times
(median/max), and every wrong pair with envdoctor's IDs vs the truth's.

    python benchmarks/gate_corpus.py [--mode offline|resolve|both] [--only PROJECT] [--jobs N]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "gate_corpus"


def load():
    targets = {k: v["args"] for k, v in tomllib.loads((CORPUS / "TARGETS.toml").read_text()).items()}
    truth = tomllib.loads((CORPUS / "TRUTH.toml").read_text())
    return targets, truth


def error_ids(report: dict) -> set[str]:
    ids = set()
    for inp in report.get("inputs", []):
        for f in inp.get("findings", []):
            if f.get("severity") == "error":
                ids.add(f["id"])
    return ids


def run_one(rel: str, args: list[str], offline: bool, timeout: int = 600):
    cmd = [sys.executable, "-m", "envdoctor", "gate", str(CORPUS / rel), *args, "--format", "json"]
    if offline:
        cmd.append("--offline")
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=os.environ.copy())
    dt = time.monotonic() - t0
    if p.returncode == 2 and "envdoctor: error:" in p.stderr:
        return {INVALID}, dt, None  # an input error (exit 2): what a file pip rejects must give
    try:
        return error_ids(json.loads(p.stdout)), dt, None
    except (json.JSONDecodeError, KeyError):
        return None, dt, (p.stderr or p.stdout)[-300:]


INVALID = "exit-2"


def judged(t: dict) -> bool:
    return not t.get("unsure") and t["verdict"] != "unjudgeable"


def right(t: dict, got: set[str] | None) -> bool:
    if got is None:
        return False
    if t["verdict"] == "ok":
        return not got
    if t["verdict"] == "invalid":
        return got == {INVALID}
    return got == set(t["errors"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["offline", "resolve", "both"], default="both")
    ap.add_argument("--only", help="one project (folder under gate_corpus)")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args(argv)
    targets, truth = load()
    pairs = [(f, t) for f in truth for t in truth[f] if not a.only or f.split("/")[0] == a.only]
    modes = ["offline", "resolve"] if a.mode == "both" else [a.mode]
    results: dict[str, dict] = {}
    for mode in modes:
        with ThreadPoolExecutor(a.jobs) as ex:
            futs = {p: ex.submit(run_one, p[0], targets[p[1]], mode == "offline") for p in pairs}
            results[mode] = {p: f.result() for p, f in futs.items()}
    for mode in modes:
        res = results[mode]
        jp = [p for p in pairs if judged(truth[p[0]][p[1]])]
        ok = [p for p in jp if right(truth[p[0]][p[1]], res[p][0])]
        false_err = [p for p in jp if truth[p[0]][p[1]]["verdict"] == "ok" and res[p][0]]
        misses = [p for p in jp if truth[p[0]][p[1]]["verdict"] == "error" and res[p][0] is not None and not res[p][0]]
        per_file: dict[str, float] = {}
        for p in pairs:
            per_file[p[0]] = per_file.get(p[0], 0.0) + res[p][1]
        times = sorted(per_file.values())
        print(f"== {mode}: {len(ok)}/{len(jp)} judged pairs right ({100 * len(ok) / max(len(jp), 1):.1f}%), "
              f"false errors {len(false_err)}, misses {len(misses)}, not judged {len(pairs) - len(jp)}")
        print(f"   per-file wall time (5 targets): median {statistics.median(times):.1f}s max {max(times):.1f}s")
        for p in jp:
            if p in ok:
                continue
            t = truth[p[0]][p[1]]
            got = res[p][0]
            said = "crashed: " + res[p][2].strip().replace("\n", " ") if got is None else (",".join(sorted(got)) or "no error")
            want = ",".join(t["errors"]) if t["verdict"] == "error" else t["verdict"]
            print(f"   WRONG {p[0]} @ {p[1]}: envdoctor {said} | truth {want} ({t['why'][:120]})")
    if len(modes) == 2:
        worse = [p for p in pairs if judged(truth[p[0]][p[1]])
                 and right(truth[p[0]][p[1]], results["offline"][p][0])
                 and not right(truth[p[0]][p[1]], results["resolve"][p][0])]
        print(f"== resolving worse than offline on {len(worse)} pairs")
        for p in worse:
            print(f"   {p[0]} @ {p[1]}: offline {sorted(results['offline'][p][0])} resolve {sorted(results['resolve'][p][0] or [])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
