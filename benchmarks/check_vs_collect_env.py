#!/usr/bin/env python3
"""Time `envdoctor check` against `python -m torch.utils.collect_env` on the same interpreter.

Paired runs: each round runs both commands back to back (order alternating), so
both see the same machine state and caches; the ratio of the medians is printed,
with the spread (min-max) of each side and of the per-round ratios. The target
interpreter needs torch (and, for a fair picture, tensorflow-cpu and jax)
installed; envdoctor inspects it with --python and never imports them.

    python benchmarks/check_vs_collect_env.py --python .ci-venv/fw/bin/python --rounds 7

It also times check after an install (every kept probe answer deleted first: the helper runs, the shared objects
are scanned again; the data's cache kept), and with ENVDOCTOR_NO_CACHE=1 (nothing kept is used, as on a first run
ever: the matrices are parsed too). Besides the ratio it prints where check's time goes (median over --rounds in-process
runs of the real `check` command, each in a fresh interpreter): interpreter start,
import, data (the matrices), probes (and each probe's own wall time; they overlap),
rules, render; the peak memory (max RSS) of each check; and the wall time of
`check --snapshot FILE`, `rules` and `explain`.

When envdoctor is installed in that interpreter (`pip install .` there), both commands
run on it; otherwise this interpreter's envdoctor inspects it with --python.

Targets: ratio <= 0.05 warm, <= 0.08 with nothing kept (ENVDOCTOR_NO_CACHE=1); the whole process tree's
memory <= 30 MiB; `check --snapshot`, `rules`,
`explain` <= 0.1 s; `lock` (stated facts: --driver/--gpu/--python-version) <= 0.3 s. Each of those
prints its wall and CPU time (user+sys of the process: steadier than wall on a busy machine) and its
ratio to `python -c pass` timed in the same rounds. Nothing here is asserted: the figures are printed.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

# Runs the real `envdoctor check` in this process, timing its phases by wrapping the functions
# check's body (envdoctor.commands_run.check) calls in envdoctor.doctor (no copy of check's logic): the figures land
# in $BENCH_OUT as JSON. The entry takes the fast door (no click) as `envdoctor check` does.
PHASES = r"""
import os, sys, time
t0 = time.perf_counter()
import json  # (and re behind it: envdoctor's first imports need them anyway)
import envdoctor.entry as entry
import envdoctor.commands_run as commands
import envdoctor.doctor as doctor
mark = {"import": time.perf_counter()}
spent = {"data": 0.0, "select": 0.0, "probes": 0.0, "rules": 0.0, "emit": 0.0, "callback": 0.0}
box = {}

def timed(name, fn):
    def wrapper(*a, **k):
        start = time.perf_counter()
        mark.setdefault(name + " start", start)
        try:
            return fn(*a, **k)
        finally:
            mark[name] = time.perf_counter()
            spent[name] += mark[name] - start
    return wrapper

doctor.load_data = timed("data", doctor.load_data)
doctor.prepare_judgement = timed("select", doctor.prepare_judgement)
_obtain = doctor.obtain_snapshot
def obtain(*a, **k):
    box["snap"] = snap = _obtain(*a, **k)
    return snap
doctor.obtain_snapshot = timed("probes", obtain)
doctor.build_report = timed("rules", doctor.build_report)
commands.emit = timed("emit", commands.emit)
commands.check = timed("callback", commands.check)
sys.stdout = open(os.devnull, "w")
sys.argv[0] = "envdoctor"

def report():  # the real entry point ends the process without tearing the interpreter down: report from atexit
    end = time.perf_counter()
    snap = box.get("snap")
    out = {"import": mark["import"] - t0, "click": mark["callback start"] - mark["import"],
           "import_rules": mark["select start"] - mark["callback start"],
           "select": spent["select"] - spent["data"], "data": spent["data"], "probes": spent["probes"],
           "rules": spent["rules"], "render": mark["emit"] - mark["rules"], "exit": end - mark["emit"],
           "total": end - t0,
           "per_probe": {p.name: p.duration_ms / 1000 for p in snap.probes} if snap is not None else {}}
    with open(os.environ["BENCH_OUT"], "w") as f:
        json.dump(out, f)

import atexit
atexit.register(report)
entry.main()  # as `envdoctor` runs: signal handlers, the collector's thresholds, the quick exit
"""


# Prints the envdoctor modules a check imports that have no up-to-date .pyc beside them.
PYC_CHECK = r"""
import importlib.util, os, sys
import envdoctor.commands, envdoctor.rules, envdoctor.knowledge
for name, mod in sorted(sys.modules.items()):
    path = getattr(mod, "__file__", None) or ""
    if name.startswith("envdoctor") and path.endswith(".py"):
        pyc = importlib.util.cache_from_source(path)
        if not os.path.exists(pyc) or os.path.getmtime(pyc) < os.path.getmtime(path):
            print(name)
"""


def run(argv, env, stdout=subprocess.DEVNULL, cpu=None):
    """(wall seconds, peak RSS in MiB) of one run of argv (in a neutral directory, so `-m envdoctor`
    never picks up a source tree from the working directory); its CPU seconds (user+sys, its children
    included) are appended to ``cpu`` when given."""
    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=stdout, stderr=err, env=env, cwd=tempfile.gettempdir())
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        _, status, usage = os.wait4(proc.pid, 0)  # reaped here, so its own peak RSS is known
        elapsed = time.perf_counter() - start
        if cpu is not None:  # RUSAGE_CHILDREN grows by the reaped child and every grandchild it reaped
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode not in (0, 1):
            err.seek(0)
            raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {err.read().decode(errors='replace')[-500:]}")
    return elapsed, usage.ru_maxrss / 1024


def tree_peak(argv, env, every: float = 0.002) -> float:
    """The largest sum of RSS (MiB) over the process and all its descendants (the helper in the target interpreter,
    nvidia-smi, ...), sampled every `every` seconds with psutil: the whole tree's peak, which the process's own
    ru_maxrss leaves out. A sample misses a peak shorter than `every`, so it is a close lower bound; these runs are
    not the timed ones (sampling takes CPU)."""
    import psutil

    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            cwd=tempfile.gettempdir())
    root, peak = psutil.Process(proc.pid), 0
    while proc.poll() is None:
        total = 0
        try:
            members = [root] + root.children(recursive=True)
        except psutil.Error:
            break
        for member in members:
            try:
                total += member.memory_info().rss
            except psutil.Error:
                pass
        peak = max(peak, total)
        time.sleep(every)
    proc.wait()
    return peak / (1 << 20)


def spread(xs) -> str:
    return f"median {statistics.median(xs):.3f} s  (min {min(xs):.3f}, max {max(xs):.3f}, n={len(xs)})"


def breakdown(interpreter, args, env, rounds):
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "phases.json")
        for _ in range(rounds):
            start = time.perf_counter()
            # a blocking wait: subprocess.run(timeout=...) polls with sleeps of up to 50 ms, which the old
            # "start+exit" phase counted
            rc = subprocess.Popen([interpreter, "-c", PHASES, *args], env=dict(env, BENCH_OUT=out), cwd=tmp,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).wait()
            wall = time.perf_counter() - start
            if rc not in (0, 1):  # a failed run's phases are not check's (the harness itself once failed unseen)
                raise SystemExit(f"the timed check failed ({rc}): run {' '.join(args)} with the PHASES code to see why")
            with open(out) as f:
                phases = json.load(f)
            phases["start"] = wall - phases["total"]
            runs.append(phases)
    med = lambda key: statistics.median(r[key] for r in runs)  # noqa: E731
    print(f"breakdown of check (median of {rounds} in-process runs, each in a fresh interpreter):")
    for key, label in (("start", "interpreter start, exit"), ("import", "import envdoctor.entry+bodies"),
                       ("click", "parse the command line"), ("import_rules", "import the rules"),
                       ("select", "select the rules"), ("data", "data (matrices)"), ("probes", "probes (wall)"),
                       ("rules", "rules (judging)"), ("render", "render (redact, format, emit)"),
                       ("exit", "after emit")):
        xs = [r[key] for r in runs]
        print(f"  {label:<30} {med(key) * 1000:7.1f} ms  (min {min(xs) * 1000:.1f}, max {max(xs) * 1000:.1f})")
    names = sorted({n for r in runs for n in r["per_probe"]},
                   key=lambda n: -statistics.median(r["per_probe"].get(n, 0) for r in runs))
    print("  per probe (own wall time; a stage's waiting probes run beside the others):")
    for n in names:
        print(f"    {n:<28} {statistics.median(r['per_probe'].get(n, 0) for r in runs) * 1000:7.1f} ms")


def forget_probe_answers(env) -> None:
    """Delete the kept probe answers (the Python helper's, the commands', the binaries' scans) of the cache `env`
    names, as envdoctor finds it (not imported: this script also times other versions of envdoctor), and keep the
    data's (the compiled matrices, the parsed tables): what a check after a `pip install` meets."""
    import shutil

    root = env.get("ENVDOCTOR_CACHE_DIR") or os.path.join(
        env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".cache"), "envdoctor")
    for name in ("pyenv", "commands"):
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)
    try:
        os.unlink(os.path.join(root, "binaries.json"))
    except OSError:
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=os.environ.get("ENVDOCTOR_TEST_FW_PYTHON", sys.executable),
                    help="interpreter with torch installed (default: $ENVDOCTOR_TEST_FW_PYTHON or this one)")
    ap.add_argument("--rounds", "-n", type=int, default=5, help="paired runs (and runs of each other command)")
    ap.add_argument("--envdoctor", default=None, help="envdoctor command (default: this interpreter -m envdoctor)")
    ap.add_argument("--no-breakdown", action="store_true", help="only the paired ratio")
    args = ap.parse_args()
    # An installed package has its bytecode (pip compiles it): PYTHONDONTWRITEBYTECODE would time the compiler instead.
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX", "PYTHONDONTWRITEBYTECODE")}
    if args.envdoctor:
        prefix, check_args = args.envdoctor.split(), ["check", "--python", args.python, "--format", "json"]
        interpreter = None
    elif subprocess.run([args.python, "-c", "import envdoctor.cli"], capture_output=True,
                        cwd=tempfile.gettempdir()).returncode == 0:
        # envdoctor installed in the target interpreter itself: the same interpreter runs both
        interpreter, check_args = args.python, ["check", "--format", "json"]
        prefix = [interpreter, "-m", "envdoctor"]
    else:
        interpreter, check_args = sys.executable, ["check", "--python", args.python, "--format", "json"]
        prefix = [interpreter, "-m", "envdoctor"]
    if interpreter is not None:
        # What a user types: the console script beside the interpreter (pip writes it at install), not `-m`, which
        # also pays for runpy (~5 ms); `-m` only where there is no script.
        script = os.path.join(os.path.dirname(interpreter), "envdoctor")
        if os.access(script, os.X_OK):
            with open(script, "rb") as f:
                head = f.readline()
            if head.startswith(b"#!") and os.path.dirname(head[2:].strip().decode(errors="replace")) == \
                    os.path.dirname(os.path.abspath(interpreter)):  # that venv's own script
                prefix = [script]
    global FLOOR_PYTHON
    FLOOR_PYTHON = interpreter or sys.executable  # `python -c pass` of the interpreter envdoctor runs on
    check = prefix + check_args
    print("envdoctor:", " ".join(check))
    baseline = [args.python, "-m", "torch.utils.collect_env"]
    # warm both once (file cache, the matrices' parse cache), not counted; check's output must be a report
    with tempfile.TemporaryFile() as out:
        run(check, env, stdout=out)
        out.seek(0)
        try:
            assert "findings" in json.load(out)
        except (ValueError, AssertionError):
            raise SystemExit(f"{' '.join(check)} did not print a JSON report")
    run(baseline, env)
    if interpreter is not None:  # the timed runs must read bytecode, not compile envdoctor each time
        stale = subprocess.run([interpreter, "-c", PYC_CHECK], capture_output=True, text=True, env=env,
                               cwd=tempfile.gettempdir()).stdout.strip()
        if stale:
            print(f"WARNING: no up-to-date bytecode for {stale}: its folder is not writable? the runs compile it")
    ours, theirs, rss, ours_cpu, cold, cold_cpu, after, after_cpu = [], [], [], [], [], [], [], []
    no_cache = dict(env, ENVDOCTOR_NO_CACHE="1")  # nothing kept is used: every probe runs, the data is parsed
    for i in range(args.rounds):
        pair = [(check, ours), (baseline, theirs)]
        if i % 2:
            pair.reverse()
        for argv, bucket in pair:
            wall, peak = run(argv, env, cpu=ours_cpu if argv is check else None)
            bucket.append(wall)
            if argv is check:
                rss.append(peak)
        cold.append(run(check, no_cache, cpu=cold_cpu)[0])
        forget_probe_answers(env)  # an install changed the environment: every probe answer is asked again
        after.append(run(check, env, cpu=after_cpu)[0])
    ratios = [a / b for a, b in zip(ours, theirs)]
    m_ours, m_theirs = statistics.median(ours), statistics.median(theirs)
    print(f"envdoctor check:              {spread(ours)}  runs {', '.join(f'{x:.3f}' for x in ours)}")
    print(f"torch.utils.collect_env:      {spread(theirs)}  runs {', '.join(f'{x:.3f}' for x in theirs)}")
    print(f"ratio (check / collect_env):  {m_ours / m_theirs:.3f}   per round: median {statistics.median(ratios):.3f} "
          f"(min {min(ratios):.3f}, max {max(ratios):.3f})   target <= 0.05")
    print(f"CPU time of check:            {spread(ours_cpu)}  (user+sys, with its probes' children)")
    print(f"check after an install:       {spread(after)}  cpu {statistics.median(after_cpu):.3f} s  ratio "
          f"{statistics.median(after) / m_theirs:.3f}  (no probe answer kept, the data's cache kept)")
    print(f"check, nothing kept:          {spread(cold)}  cpu {statistics.median(cold_cpu):.3f} s  ratio "
          f"{statistics.median(cold) / m_theirs:.3f}  target <= 0.08  (ENVDOCTOR_NO_CACHE=1: a first run ever)")
    print(f"peak memory of check:         median {statistics.median(rss):.1f} MiB (max {max(rss):.1f})   "
          "(its own process)")
    trees = [tree_peak(check, env) for _ in range(args.rounds)]
    cold_trees = [tree_peak(check, no_cache) for _ in range(args.rounds)]
    print(f"memory of check's whole tree: warm median {statistics.median(trees):.1f} MiB (max {max(trees):.1f}), "
          f"nothing kept median {statistics.median(cold_trees):.1f} MiB (max {max(cold_trees):.1f})   target <= 30 MiB "
          "(the sum of RSS over the process and its children, sampled every 2 ms)")
    print(f"machine load (1, 5, 15 min):  {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    if args.no_breakdown:
        return 0
    if interpreter is not None:
        breakdown(interpreter, check_args, env, args.rounds)
    others(prefix, check_args, env, args.rounds)
    return 0


FLOOR_PYTHON = sys.executable


def others(prefix, check_args, env, rounds):
    """`check --snapshot`, `lock`, `rules`, `explain` against their targets, each round also timing
    `python -c pass` on envdoctor's interpreter (the floor any command pays)."""
    with tempfile.TemporaryDirectory() as tmp:
        snap_file = os.path.join(tmp, "snap.json")
        probe = prefix + ["probe", "--format", "json", "-o", snap_file] + check_args[1:-2]
        run(probe, env)
        floor = [prefix[0] if prefix[1:2] == ["-m"] else FLOOR_PYTHON, "-c", "pass"]
        commands = (("check --snapshot FILE", prefix + ["check", "--snapshot", snap_file, "--format", "json"], 0.1),
                    ("lock (stated facts)", prefix + ["lock", "--driver", "550.54.15", "--gpu", "sm_86",
                                                      "--python-version", "3.11", "--platform", "linux-x86_64",
                                                      "--torch"], 0.3),
                    ("rules", prefix + ["rules"], 0.1), ("explain ED001", prefix + ["explain", "ED001"], 0.1))
        for argv in [floor] + [c[1] for c in commands]:
            run(argv, env)  # warm
        walls = {label: [] for label, _, _ in commands}
        cpus = {label: [] for label, _, _ in commands}
        base_walls, base_cpus = [], []
        for _ in range(rounds):
            base_walls.append(run(floor, env, cpu=base_cpus)[0])
            for label, argv, _ in commands:
                walls[label].append(run(argv, env, cpu=cpus[label])[0])
        print(f"{'python -c pass:':<30}{spread(base_walls)}  cpu {statistics.median(base_cpus):.3f} s")
        for label, _, target in commands:
            ratio = statistics.median(walls[label]) / statistics.median(base_walls)
            print(f"{label + ':':<30}{spread(walls[label])}  cpu {statistics.median(cpus[label]):.3f} s  "
                  f"{ratio:.1f}x python -c pass   target <= {target} s")


if __name__ == "__main__":
    sys.exit(main())
