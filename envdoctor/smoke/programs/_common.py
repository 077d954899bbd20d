# envdoctor smoke test: the part every framework driver shares.
#
# envdoctor runs `python -c <_common.py + <framework>_smoke.py> CONFIG_JSON` in the TARGET
# interpreter, one process per framework. This is the only code of envdoctor that imports a
# framework, and it does so only there, never in envdoctor's own process.
#
# Constraints: standard library plus the framework under test (and numpy where the framework
# depends on it); no envdoctor import; Python 3.6+ syntax (no `from __future__ import
# annotations`, no walrus) because the target may be older than envdoctor's own interpreter.
#
# Protocol: one JSON line per event on the original stdout, each prefixed with MARKER:
#   {"event": "hello", ...}                                      the program started
#   {"event": "begin", "step": S, "device": D}                   a step starts
#   {"event": "end", "step": S, "device": D, "status": ..., "duration_ms": ..., "detail": ...,
#    "numbers": {...}, "info": {...}, "code": ...}                a step ended
#   {"event": "done"}                                            every step ran
# Everything else the process writes to fd 1 (framework chatter) is redirected to stderr,
# so a crash mid-way leaves the steps before it on record and nothing corrupts the protocol.
import sys

if __name__ == "__main__":
    # -c puts '' (the current directory) first on sys.path: drop it, so that a folder named
    # torch/ or a json.py in the user's cwd never shadows what is installed (as the probe does).
    sys.path[:] = [p for p in sys.path if p not in ("", ".")]

import faulthandler  # noqa: E402
import importlib  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
import warnings  # noqa: E402

MARKER = "@@ENVDOCTOR-SMOKE@@ "
DETAIL_MAX = 1500

# Relative tolerances (max |got - ref| / max |ref|). The inputs are multiples of 1/16 in
# [-1, 1], exactly representable in fp32, tf32, fp16 and bf16, so every product and every
# fp32 partial sum of these small problems is exact: a correct fp32 result equals the
# reference; the slack covers reordered or transformed (Winograd/FFT) algorithms and the
# rounding of fp16 / bf16 outputs.
TOL = {"cpu": 1e-4, "gpu": 1e-3, "float16": 1e-2, "bfloat16": 5e-2}

MM = 64  # matmul: (MM x MM) @ (MM x MM)
CONV_N, CONV_C, CONV_H, CONV_O, CONV_K = 2, 3, 8, 4, 3  # conv2d NCHW, OIHW, stride 1, VALID


class NotAvailable(Exception):
    """The step cannot run here (no GPU, no compiler ...): reported as not_available."""

    def __init__(self, reason, code=""):
        Exception.__init__(self, reason)
        self.code = code


class Skipped(Exception):
    """The step was not run because an earlier one failed."""


class Mismatch(Exception):
    """The result differs from the reference."""

    def __init__(self, message, numbers):
        Exception.__init__(self, message)
        self.numbers = numbers


def _protocol_stream():
    fd = os.dup(1)
    try:
        os.dup2(2, 1)  # framework output to stdout (Python or C level) goes to stderr from now on
    except OSError:
        pass
    return os.fdopen(fd, "w", buffering=1, encoding="utf-8", errors="replace")


def error_text(exc):
    text = "%s: %s" % (type(exc).__name__, exc)
    text = text.strip()
    return text if len(text) <= DETAIL_MAX else text[:DETAIL_MAX] + " ..."


def unsupported(exc):
    """Does the error say the operation is not implemented for this dtype/device (rather than broken)?"""
    text = str(exc)
    needles = ("not implemented for", "No registered", "OpKernel", "Could not find device for node",
               "is not supported", "not supported on", "Unsupported dtype", "unsupported dtype")
    return any(n in text for n in needles)


# -- deterministic data and the pure-Python references -----------------------------------

def grid_values(count, seed):
    rng = random.Random(seed)
    return [rng.randint(-16, 16) / 16.0 for _ in range(count)]


def nested(values, shape):
    if len(shape) == 1:
        return list(values[: shape[0]])
    step = 1
    for d in shape[1:]:
        step *= d
    return [nested(values[i * step:(i + 1) * step], shape[1:]) for i in range(shape[0])]


def flat(x):
    if isinstance(x, (list, tuple)):
        out = []
        for v in x:
            out.extend(flat(v))
        return out
    return [float(x)]


def ref_matmul(a, b):
    bt = list(zip(*b))
    return [[sum(x * y for x, y in zip(row, col)) for col in bt] for row in a]


def matmul_data():
    a = nested(grid_values(MM * MM, 1), (MM, MM))
    b = nested(grid_values(MM * MM, 2), (MM, MM))
    return a, b, ref_matmul(a, b)


def conv_data():
    """x (N,C,H,H), w (O,C,K,K), g (upstream gradient of y) and the references y, dx, dw
    for loss = sum(conv2d(x, w) * g) with stride 1 and no padding."""
    n, c, h, o, k = CONV_N, CONV_C, CONV_H, CONV_O, CONV_K
    ho = h - k + 1
    x = nested(grid_values(n * c * h * h, 3), (n, c, h, h))
    w = nested(grid_values(o * c * k * k, 4), (o, c, k, k))
    g = nested(grid_values(n * o * ho * ho, 5), (n, o, ho, ho))
    y = [[[[sum(x[b][ci][i + p][j + q] * w[oi][ci][p][q] for ci in range(c) for p in range(k) for q in range(k))
            for j in range(ho)] for i in range(ho)] for oi in range(o)] for b in range(n)]
    dw = [[[[sum(g[b][oi][i][j] * x[b][ci][i + p][j + q] for b in range(n) for i in range(ho) for j in range(ho))
             for q in range(k)] for p in range(k)] for ci in range(c)] for oi in range(o)]
    dx = [[[[0.0] * h for _ in range(h)] for _ in range(c)] for _ in range(n)]
    for b in range(n):
        for oi in range(o):
            for i in range(ho):
                for j in range(ho):
                    gv = g[b][oi][i][j]
                    for ci in range(c):
                        for p in range(k):
                            for q in range(k):
                                dx[b][ci][i + p][j + q] += gv * w[oi][ci][p][q]
    return {"x": x, "w": w, "g": g, "y": y, "dx": dx, "dw": dw}


def compare(got, ref, tol, what="result"):
    """Numbers for the report; raises Mismatch when got is not within tol of ref."""
    g, r = flat(got), flat(ref)
    if len(g) != len(r):
        raise Mismatch("%s has %d values, the reference %d" % (what, len(g), len(r)), {})
    bad = sum(1 for v in g if math.isnan(v) or math.isinf(v))
    if bad:
        raise Mismatch("%s has %d non-finite values (NaN/inf)" % (what, bad), {"nonfinite": bad})
    max_abs = max(abs(a - b) for a, b in zip(g, r)) if g else 0.0
    scale = max(abs(v) for v in r) if r else 1.0
    rel = max_abs / (scale or 1.0)
    numbers = {"max_abs_err": max_abs, "max_rel_err": rel, "tolerance": tol}
    if rel > tol:
        raise Mismatch("%s differs from the CPU reference: max abs error %.3g (%.3g relative to max |ref|, "
                       "tolerance %.3g)" % (what, max_abs, rel, tol), numbers)
    return numbers


def conv_errors(ref, y, dx, dw, tol, to_list):
    """Compare a conv2d forward output and both gradients with the pure-Python reference `ref`."""
    return worst(compare(to_list(y), ref["y"], tol, "conv2d forward"),
                 compare(to_list(dx), ref["dx"], tol, "conv2d input gradient"),
                 compare(to_list(dw), ref["dw"], tol, "conv2d weight gradient"))


def worst(*numbers):
    out = {}
    for n in numbers:
        for key, value in n.items():
            if key in ("max_abs_err", "max_rel_err"):
                out[key] = max(out.get(key, 0.0), value)
            else:
                out.setdefault(key, value)
    return out


def _compiler(variable, names):
    """The program named by the environment variable (a name on PATH or a path), else the first of names on PATH."""
    chosen = os.environ.get(variable)
    if chosen and (shutil.which(chosen) or os.path.isfile(chosen)):
        return shutil.which(chosen) or chosen
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


def cxx_compiler():
    """The C++ compiler torch.compile's CPU backend would use, or None."""
    return _compiler("CXX", ("g++", "c++", "clang++"))


def c_compiler():
    """The C compiler Triton builds its launcher with (CC, else cc / gcc / clang), or None."""
    return _compiler("CC", ("cc", "gcc", "clang"))


def timed_rate(fn, sync, work, min_time=0.2, max_iter=20):
    """Run fn (then sync) repeatedly after one warm-up; return work units per second."""
    fn()
    sync()
    count, start = 0, time.perf_counter()
    while True:
        fn()
        count += 1
        if count >= max_iter or time.perf_counter() - start >= min_time:
            break
    sync()
    return work * count / (time.perf_counter() - start)


# -- the step loop --------------------------------------------------------------------------

class Smoke(object):
    """State shared by the steps of one framework's run."""

    def __init__(self, config):
        self.config = config
        self.fw = None  # the imported framework module
        self.gpus = None  # set by the devices step: a list (maybe empty) of GPU descriptions
        self.no_gpu_why = ""
        self.state = {}
        self._out = _protocol_stream()

    def emit(self, obj):
        try:
            self._out.write(MARKER + json.dumps(obj, default=str) + "\n")
            self._out.flush()
        except (OSError, ValueError):
            pass

    def data(self, name, make):
        if name not in self.state:
            self.state[name] = make()
        return self.state[name]

    def require_gpu(self):
        if self.gpus is None:
            raise Skipped("not run: device discovery did not succeed")
        if not self.gpus:
            raise NotAvailable("no GPU", code="no_gpu")

    def run(self, steps):
        plan = self.config.get("steps") or []
        blocked = ""
        for name, device in plan:
            self.emit({"event": "begin", "step": name, "device": device})
            rec = {"event": "end", "step": name, "device": device, "status": "ok", "detail": "",
                   "numbers": {}, "info": {}, "code": ""}
            start = time.perf_counter()
            try:
                if blocked:
                    raise Skipped(blocked)
                fn = steps.get(name)
                if fn is None:
                    raise NotAvailable("not implemented for this framework", code="not_implemented")
                if device == "gpu":
                    self.require_gpu()
                out = fn(self, device) or {}
                for key in ("status", "detail", "numbers", "info", "code"):
                    if key in out:
                        rec[key] = out[key]
            except NotAvailable as exc:
                rec.update(status="not_available", detail=str(exc), code=exc.code)
            except Skipped as exc:
                rec.update(status="skipped", detail=str(exc))
            except Mismatch as exc:
                rec.update(status="failed", detail=str(exc), numbers=exc.numbers, code="mismatch")
            except BaseException as exc:  # noqa: BLE001 - SystemExit from a framework is a failure too
                if isinstance(exc, KeyboardInterrupt):
                    raise
                rec.update(status="failed", detail=error_text(exc))
                tb = traceback.format_exc().strip().splitlines()
                rec["info"] = {"traceback": tb[-12:]}
                if name == "import":
                    blocked = "not run: the import failed"
            rec["duration_ms"] = round((time.perf_counter() - start) * 1000.0, 1)
            self.emit(rec)
        self.emit({"event": "done"})


def main(steps, framework):
    config = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    faulthandler.enable(all_threads=True)  # a crash leaves its Python traceback on stderr
    dump_signal = getattr(signal, config.get("dump_signal") or "", None)
    timeout = float(config.get("timeout") or 0)
    if dump_signal is not None:
        # envdoctor sends this signal before it kills a hung run (in a step or while exiting):
        # every thread's stack goes to stderr, whenever the hang happens
        faulthandler.register(dump_signal, all_threads=True)
    elif timeout > 0:
        _dump_before(timeout)  # no such signal here: dump shortly before envdoctor's kill
    smoke = Smoke(config)
    smoke.emit({"event": "hello", "framework": framework, "pid": os.getpid(), "python": sys.version.split()[0],
                "executable": sys.executable})
    smoke.run(steps)
    grace = float(config.get("shutdown_grace") or 0)
    if dump_signal is None and grace > 0:
        faulthandler.cancel_dump_traceback_later()
        _dump_before(grace)  # the exit gets its own allowance, counted from the last step


def _dump_before(seconds):
    margin = max(0.2, min(2.0, seconds * 0.1))
    faulthandler.dump_traceback_later(max(0.1, seconds - margin), exit=False)


def import_step(s, module):
    """The import step of a framework whose module carries __version__: import it, say which and from where."""
    fw = importlib.import_module(module)
    s.fw = fw
    info = {"version": str(getattr(fw, "__version__", "?")), "file": getattr(fw, "__file__", None)}
    return {"detail": "%s %s from %s" % (module, info["version"], os.path.dirname(info["file"] or "?")), "info": info}


# -- multi-GPU steps (each GPU, isolated and timed; an all-reduce over all of them) ----------------------------

def on_each_gpu(labels, run_one):
    """run_one(i) -> (result as nested lists, reference) on GPU i, for every GPU: a failure on one is recorded and
    the others still run; each is timed."""
    parts, failed, worst = [], [], 0.0
    numbers = {"gpus": len(labels)}
    for i, label in enumerate(labels):
        start = time.perf_counter()
        try:
            got, ref = run_one(i)
            worst = max(worst, compare(got, ref, TOL["gpu"], "matmul on " + label)["max_rel_err"])
        except Exception as exc:  # noqa: BLE001 - one GPU's failure is that GPU's result
            failed.append("%s: %s" % (label, error_text(exc)))
            continue
        ms = (time.perf_counter() - start) * 1000.0
        numbers["gpu%d_ms" % i] = round(ms, 1)
        parts.append("%s %.1f ms" % (label, ms))
    numbers["max_rel_err"] = worst
    if failed:
        return {"status": "failed", "numbers": numbers,
                "detail": "matmul failed on %d of %d GPUs: %s" % (len(failed), len(labels), "; ".join(failed))}
    return {"detail": "%dx%d fp32 matmul on each of %d GPUs: %s" % (MM, MM, len(labels), ", ".join(parts)),
            "numbers": numbers}


def all_reduce_step(count, what, reduce_fn):
    """reduce_fn() sums (device index + 1) over `count` GPUs and returns the values every device ended with."""
    if count < 2:
        raise Skipped("one device")
    start = time.perf_counter()
    values = reduce_fn()
    ms = (time.perf_counter() - start) * 1000.0
    expected = count * (count + 1) / 2.0
    numbers = {"ms": round(ms, 2), "gpus": count, "expected": expected}
    wrong = [v for v in values if abs(float(v) - expected) > 1e-6]
    if not values or wrong:
        raise Mismatch("%s over %d GPUs gave %r, expected %g everywhere" % (what, count, (wrong or values)[:4], expected),
                       numbers)
    return {"detail": "%s over %d GPUs: %.1f ms" % (what, count, ms), "numbers": numbers}
