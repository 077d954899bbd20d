# envdoctor smoke test driver for PyTorch. Runs after _common.py in the target interpreter
# (see _common.py for the protocol and the constraints): stdlib + torch only.


def torch_import(s, device):
    torch = importlib.import_module("torch")
    s.fw = torch
    version = getattr(torch, "__version__", "?")
    tv = getattr(torch, "version", None)
    info = {"version": str(version), "file": getattr(torch, "__file__", None),
            "cuda": getattr(tv, "cuda", None), "hip": getattr(tv, "hip", None)}
    return {"detail": "torch %s from %s" % (version, os.path.dirname(info["file"] or "?")), "info": info}


def _build(torch):
    tv = torch.version
    if getattr(tv, "hip", None):
        return "rocm %s" % tv.hip
    if getattr(tv, "cuda", None):
        return "cuda %s" % tv.cuda
    return "cpu"


def torch_devices(s, device):
    torch = s.fw
    build = _build(torch)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        available = bool(torch.cuda.is_available())
        count = torch.cuda.device_count() if available else 0
    said = [str(w.message).strip() for w in caught]
    gpus = []
    for i in range(count):
        p = torch.cuda.get_device_properties(i)
        entry = {"index": i, "name": p.name, "memory_mib": int(p.total_memory // (1 << 20))}
        if build.startswith("rocm"):
            entry["arch"] = getattr(p, "gcnArchName", None)
        else:
            entry["compute_capability"] = "%d.%d" % (p.major, p.minor)
        gpus.append(entry)
    s.gpus = gpus
    info = {"build": build, "gpus": gpus, "warnings": said[:5]}
    if build != "cpu":
        try:
            info["cudnn"] = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
        except Exception as exc:  # noqa: BLE001
            info["cudnn"] = "error: " + error_text(exc)
    if not gpus:
        if build == "cpu":
            s.no_gpu_why = "torch %s is a CPU-only build" % torch.__version__
        else:
            s.no_gpu_why = "torch.cuda.is_available() is False" + (" (%s)" % said[0][:300] if said else "")
        detail = "CPU only; " + s.no_gpu_why
    else:
        detail = "; ".join("%d: %s (%s)" % (g["index"], g["name"], g.get("compute_capability") or g.get("arch"))
                           for g in gpus) + " [%s build]" % build
    return {"detail": detail, "info": info, "numbers": {"gpus": len(gpus)}}


def _dev(device):
    return "cuda" if device == "gpu" else "cpu"


def _sync(torch, device):
    if device == "gpu":
        torch.cuda.synchronize()


def _mm_inputs(s, device, dtype=None):
    torch = s.fw
    a, b, ref = s.data("mm", matmul_data)
    dtype = dtype or torch.float32
    return torch.tensor(a, dtype=dtype, device=_dev(device)), torch.tensor(b, dtype=dtype, device=_dev(device)), ref


def _list(t):
    return t.detach().float().cpu().tolist()


def torch_matmul(s, device):
    torch = s.fw
    a, b, ref = _mm_inputs(s, device)
    c = a @ b
    _sync(torch, device)
    if c.device.type != _dev(device):
        raise RuntimeError("the result is on %s, not on %s" % (c.device, _dev(device)))
    numbers = compare(_list(c), ref, TOL[device], "matmul")
    return {"detail": "%dx%d fp32 on %s, max rel error %.2g" % (MM, MM, c.device, numbers["max_rel_err"]),
            "numbers": numbers}


def _conv(s, device, dtype=None):
    torch = s.fw
    d = s.data("conv", conv_data)
    dev = _dev(device)
    x = torch.tensor(d["x"], dtype=torch.float32, device=dev, requires_grad=True)
    w = torch.tensor(d["w"], dtype=torch.float32, device=dev, requires_grad=True)
    g = torch.tensor(d["g"], dtype=torch.float32, device=dev)
    if dtype is None:
        y = torch.nn.functional.conv2d(x, w)
    else:
        with torch.autocast(device_type=dev, dtype=dtype):
            y = torch.nn.functional.conv2d(x, w)
    (y.float() * g).sum().backward()
    _sync(torch, device)
    return d, y, x.grad, w.grad


def torch_conv(s, device):
    torch = s.fw
    d, y, dx, dw = _conv(s, device)
    tol = TOL[device]
    numbers = conv_errors(d, y, dx, dw, tol, _list)
    info = {}
    if device == "gpu":
        info["cudnn_enabled"] = bool(torch.backends.cudnn.enabled)
        try:
            info["cudnn"] = torch.backends.cudnn.version()
        except Exception as exc:  # noqa: BLE001
            info["cudnn"] = "error: " + error_text(exc)
    return {"detail": "conv2d forward + backward fp32%s, max rel error %.2g"
                      % (" (cuDNN %s)" % info.get("cudnn") if info.get("cudnn") else "", numbers["max_rel_err"]),
            "numbers": numbers, "info": info}


def torch_mixed(s, device):
    torch = s.fw
    dtypes = []
    notes = []
    if device == "gpu":
        dtypes.append("float16")
        try:
            bf16 = torch.cuda.is_bf16_supported()
        except Exception:  # noqa: BLE001
            bf16 = False
        if bf16:
            dtypes.append("bfloat16")
        else:
            notes.append("bf16 not supported by this GPU")
    else:
        dtypes = ["bfloat16"]  # bf16 is the CPU mixed-precision dtype (autocast "cpu")
    done, numbers, unsupported_by = [], {}, []
    for name in dtypes:
        dtype = getattr(torch, name)
        a, b, ref = _mm_inputs(s, device)
        try:
            with torch.autocast(device_type=_dev(device), dtype=dtype):
                c = a @ b
                if c.dtype != dtype:
                    raise RuntimeError("autocast(%s) gave a %s matmul" % (name, c.dtype))
            _sync(torch, device)
            n1 = compare(_list(c), ref, TOL[name], "%s matmul" % name)
            d, y, dx, dw = _conv(s, device, dtype)
            n2 = compare(_list(y), d["y"], TOL[name], "%s conv2d forward" % name)
            compare(_list(dw), d["dw"], TOL[name], "%s conv2d weight gradient" % name)
        except Mismatch:
            raise
        except Exception as exc:  # noqa: BLE001
            if unsupported(exc):
                unsupported_by.append("%s: %s" % (name, str(exc).splitlines()[0][:200]))
                continue
            raise
        numbers[name + "_max_rel_err"] = max(n1["max_rel_err"], n2["max_rel_err"])
        done.append(name)
    if not done:
        raise NotAvailable("no mixed-precision dtype works on %s here (%s)" % (device, "; ".join(unsupported_by + notes)),
                           code="dtype")
    detail = "autocast " + ", ".join(done) + " ok (matmul + conv2d forward/backward)"
    if unsupported_by or notes:
        detail += "; " + "; ".join(notes + ["not supported: " + u for u in unsupported_by])
    return {"detail": detail, "numbers": numbers}


def torch_compile(s, device):
    torch = s.fw
    if not hasattr(torch, "compile"):
        raise NotAvailable("torch %s has no torch.compile (needs torch >= 2.0)" % torch.__version__, code="old")
    if sys.platform == "win32":
        raise NotAvailable("torch.compile's Inductor backend does not support Windows here", code="platform")
    if device == "cpu":
        cxx = cxx_compiler()
        if cxx is None:
            raise NotAvailable("no C++ compiler (CXX, g++, c++, clang++ not found on PATH); torch.compile's CPU "
                               "backend (Inductor) needs one", code="no_compiler")
        backend_note = "Inductor C++ (%s)" % cxx
    else:
        if importlib.util.find_spec("triton") is None:
            raise NotAvailable("Triton is not installed; torch.compile's GPU backend (Inductor) needs it",
                               code="no_triton")
        if c_compiler() is None:
            raise NotAvailable("no C compiler (CC, cc, gcc, clang not found on PATH); Triton builds its GPU "
                               "launcher with one", code="no_compiler")
        gpu = s.gpus[0]
        cc = gpu.get("compute_capability")
        if cc and tuple(int(p) for p in cc.split(".")) < (7, 0):
            raise NotAvailable("Triton needs compute capability >= 7.0; GPU 0 (%s) is %s" % (gpu["name"], cc),
                               code="old_gpu")
        backend_note = "Inductor Triton"
    a, b, ref = _mm_inputs(s, device)

    def fn(x, y):
        return torch.nn.functional.relu(x @ y) * 0.5 + 1.0

    try:
        compiled = torch.compile(fn, fullgraph=True)
        c = compiled(a, b)
        _sync(torch, device)
    except Exception as exc:  # noqa: BLE001
        if "not supported on Python" in str(exc):
            raise NotAvailable(str(exc).splitlines()[0][:300], code="python")
        raise
    expected = [[max(v, 0.0) * 0.5 + 1.0 for v in row] for row in ref]
    numbers = compare(_list(c), expected, TOL[device], "compiled function")
    return {"detail": "torch.compile (%s) of relu(x @ y) * 0.5 + 1, max rel error %.2g"
                      % (backend_note, numbers["max_rel_err"]), "numbers": numbers}


def torch_bench_matmul(s, device):
    torch = s.fw
    n = 4096 if device == "gpu" else 512
    a = torch.ones((n, n), dtype=torch.float32, device=_dev(device))
    b = torch.ones((n, n), dtype=torch.float32, device=_dev(device))
    rate = timed_rate(lambda: a @ b, lambda: _sync(torch, device), 2.0 * n ** 3 / 1e9)
    return {"detail": "%dx%d fp32 matmul: %.1f GFLOP/s" % (n, n, rate), "numbers": {"gflops": rate, "n": n}}


def torch_bench_h2d(s, device):
    torch = s.fw
    size = 64 << 20
    host = torch.empty(size // 4, dtype=torch.float32).pin_memory()
    dev = torch.empty(size // 4, dtype=torch.float32, device="cuda")
    rate = timed_rate(lambda: dev.copy_(host, non_blocking=True), torch.cuda.synchronize, size / 1e9)
    return {"detail": "host-to-device copy of 64 MiB pinned memory: %.1f GB/s" % rate,
            "numbers": {"gb_per_s": rate, "bytes": size}}



def torch_each_gpu(s, device):
    torch = s.fw
    a, b, ref = s.data("mm", matmul_data)

    def one(i):
        dev = torch.device("cuda", i)
        c = torch.tensor(a, dtype=torch.float32, device=dev) @ torch.tensor(b, dtype=torch.float32, device=dev)
        torch.cuda.synchronize(dev)
        return _list(c), ref

    return on_each_gpu(["cuda:%d" % i for i in range(torch.cuda.device_count())], one)


def torch_allreduce(s, device):
    torch = s.fw
    count = torch.cuda.device_count()

    def reduce():
        nccl = importlib.import_module("torch.cuda.nccl")  # NCCL, one process driving every GPU
        ts = [torch.full((4,), float(i + 1), device="cuda:%d" % i) for i in range(count)]
        nccl.all_reduce(ts)
        for i in range(count):
            torch.cuda.synchronize(i)
        return [v for t in ts for v in _list(t)]

    return all_reduce_step(count, "NCCL all-reduce (torch.cuda.nccl)", reduce)


STEPS = {
    "import": torch_import,
    "devices": torch_devices,
    "matmul": torch_matmul,
    "conv": torch_conv,
    "mixed_precision": torch_mixed,
    "each_gpu": torch_each_gpu,
    "allreduce": torch_allreduce,
    "compile": torch_compile,
    "bench_matmul": torch_bench_matmul,
    "bench_h2d": torch_bench_h2d,
}

if __name__ == "__main__":
    main(STEPS, "torch")
