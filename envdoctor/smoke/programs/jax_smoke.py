# envdoctor smoke test driver for JAX. Runs after _common.py in the target interpreter
# (see _common.py for the protocol and the constraints): stdlib + jax (+ its numpy) only.


def jax_import(s, device):
    # Allocate GPU memory on demand instead of preallocating 75 % of it: the other frameworks'
    # smoke tests may share the GPU at the same moment. A value the user set is kept.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    jax = importlib.import_module("jax")
    importlib.import_module("jax.numpy")
    importlib.import_module("jax.lax")
    s.fw = jax
    s.state["np"] = importlib.import_module("numpy")
    info = {"version": str(getattr(jax, "__version__", "?")), "file": getattr(jax, "__file__", None)}
    try:
        info["jaxlib"] = importlib.import_module("jaxlib.version").__version__
    except Exception:  # noqa: BLE001
        info["jaxlib"] = None
    return {"detail": "jax %s (jaxlib %s) from %s" % (info["version"], info["jaxlib"] or "?",
                                                       os.path.dirname(info["file"] or "?")), "info": info}


def jax_devices(s, device):
    jax = s.fw
    cpus = jax.devices("cpu")
    s.state["cpu"] = cpus[0]
    gpus, why = [], ""
    try:
        found = jax.devices("gpu")
    except RuntimeError as exc:
        found, why = [], str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
    for i, d in enumerate(found):
        entry = {"index": i, "name": getattr(d, "device_kind", str(d)), "platform": getattr(d, "platform", "")}
        cc = getattr(d, "compute_capability", None)
        if cc:
            entry["compute_capability"] = str(cc)
        gpus.append(entry)
    s.gpus = gpus
    if found:
        s.state["gpu"] = found[0]
    try:
        backend = jax.default_backend()
    except Exception as exc:  # noqa: BLE001
        backend = "error: " + error_text(exc)
    if not gpus:
        s.no_gpu_why = "jax.devices('gpu') failed: %s" % why if why else "jax found no GPU"
        detail = "CPU only (%d CPU device%s); %s" % (len(cpus), "" if len(cpus) == 1 else "s", s.no_gpu_why)
    else:
        detail = "; ".join("%d: %s (%s)" % (g["index"], g["name"], g.get("compute_capability", g["platform"]))
                           for g in gpus) + " [default backend %s]" % backend
    return {"detail": detail, "info": {"default_backend": backend, "gpus": gpus, "cpus": len(cpus)},
            "numbers": {"gpus": len(gpus)}}


def _target(s, device):
    return s.state["gpu"] if device == "gpu" else s.state["cpu"]


def _put(s, device, value, dtype=None):
    np = s.state["np"]
    return s.fw.device_put(np.asarray(value, dtype=dtype or np.float32), _target(s, device))


def _check_placed(arr, device):
    devices = arr.devices() if hasattr(arr, "devices") else set()
    platforms = set(getattr(d, "platform", "?") for d in devices)
    ok = platforms and (platforms <= set(["cpu"]) if device == "cpu" else "cpu" not in platforms)
    if not ok:
        raise RuntimeError("the result was computed on %s, not on the %s" % (sorted(platforms), device.upper()))


def _list(s, arr):
    np = s.state["np"]
    return np.asarray(arr, dtype=np.float32).tolist()


def jax_matmul(s, device):
    a, b, ref = s.data("mm", matmul_data)
    c = _put(s, device, a) @ _put(s, device, b)
    c.block_until_ready()
    _check_placed(c, device)
    numbers = compare(_list(s, c), ref, TOL[device], "matmul")
    return {"detail": "%dx%d fp32 on %s, max rel error %.2g" % (MM, MM, _target(s, device), numbers["max_rel_err"]),
            "numbers": numbers}


def _conv(s, device, dtype=None):
    jax = s.fw
    jnp, lax = jax.numpy, jax.lax
    d = s.data("conv", conv_data)

    def loss(x, w, g):
        if dtype is not None:
            x, w = x.astype(dtype), w.astype(dtype)
        y = lax.conv_general_dilated(x, w, (1, 1), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHW"))
        return jnp.sum(y.astype(jnp.float32) * g), y

    # one XLA program for forward + backward (op-by-op dispatch would compile every op on its own)
    grad = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))
    (_, y), (dx, dw) = grad(_put(s, device, d["x"]), _put(s, device, d["w"]), _put(s, device, d["g"]))
    dw.block_until_ready()
    _check_placed(y, device)
    return d, y, dx, dw


def jax_conv(s, device):
    d, y, dx, dw = _conv(s, device)
    tol = TOL[device]
    numbers = conv_errors(d, y, dx, dw, tol, lambda t: _list(s, t))
    return {"detail": "conv2d forward + backward fp32, max rel error %.2g" % numbers["max_rel_err"],
            "numbers": numbers}


def jax_mixed(s, device):
    jnp = s.fw.numpy
    names = ["float16", "bfloat16"] if device == "gpu" else ["bfloat16"]  # bf16 is the CPU mixed-precision dtype
    done, numbers, unsupported_by = [], {}, []
    a, b, ref = s.data("mm", matmul_data)
    for name in names:
        dtype = getattr(jnp, name)
        try:
            c = _put(s, device, a).astype(dtype) @ _put(s, device, b).astype(dtype)
            c.block_until_ready()
            _check_placed(c, device)
            if c.dtype != dtype:
                raise RuntimeError("a %s matmul gave %s" % (name, c.dtype))
            n1 = compare(_list(s, c), ref, TOL[name], "%s matmul" % name)
            d, y, dx, dw = _conv(s, device, dtype)
            n2 = compare(_list(s, y), d["y"], TOL[name], "%s conv2d forward" % name)
            compare(_list(s, dw), d["dw"], TOL[name], "%s conv2d weight gradient" % name)
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
        raise NotAvailable("no mixed-precision dtype works on %s here (%s)" % (device, "; ".join(unsupported_by)),
                           code="dtype")
    detail = ", ".join(done) + " ok (matmul + conv2d forward/backward)"
    if unsupported_by:
        detail += "; not supported: " + "; ".join(unsupported_by)
    return {"detail": detail, "numbers": numbers}


def jax_compile(s, device):
    jax = s.fw
    a, b, ref = s.data("mm", matmul_data)

    def fn(x, y):
        return jax.nn.relu(x @ y) * 0.5 + 1.0

    c = jax.jit(fn)(_put(s, device, a), _put(s, device, b))
    c.block_until_ready()
    _check_placed(c, device)
    expected = [[max(v, 0.0) * 0.5 + 1.0 for v in row] for row in ref]
    numbers = compare(_list(s, c), expected, TOL[device], "jit-compiled function")
    return {"detail": "jax.jit (XLA) of relu(x @ y) * 0.5 + 1, max rel error %.2g" % numbers["max_rel_err"],
            "numbers": numbers}


def jax_bench_matmul(s, device):
    jax = s.fw
    np = s.state["np"]
    n = 4096 if device == "gpu" else 512
    a = jax.device_put(np.ones((n, n), dtype=np.float32), _target(s, device))
    f = jax.jit(lambda x, y: x @ y)
    last = []

    def run():
        last[:] = [f(a, a)]

    rate = timed_rate(run, lambda: last[0].block_until_ready(), 2.0 * n ** 3 / 1e9)
    return {"detail": "%dx%d fp32 matmul: %.1f GFLOP/s" % (n, n, rate), "numbers": {"gflops": rate, "n": n}}


def jax_bench_h2d(s, device):
    jax = s.fw
    np = s.state["np"]
    size = 64 << 20
    host = np.ones(size // 4, dtype=np.float32)
    last = []

    def run():
        last[:] = [jax.device_put(host, s.state["gpu"])]

    rate = timed_rate(run, lambda: last[0].block_until_ready(), size / 1e9)
    return {"detail": "host-to-device copy of 64 MiB: %.1f GB/s" % rate, "numbers": {"gb_per_s": rate, "bytes": size}}



def jax_each_gpu(s, device):
    jax = s.fw
    gpus = jax.devices("gpu")
    a, b, ref = s.data("mm", matmul_data)

    def one(i):
        put = lambda x: jax.device_put(jax.numpy.asarray(x, dtype="float32"), gpus[i])  # noqa: E731
        c = put(a) @ put(b)
        c.block_until_ready()
        return _list(s, c), ref

    return on_each_gpu(["%s:%d" % (getattr(d, "platform", "gpu"), i) for i, d in enumerate(gpus)], one)


def jax_allreduce(s, device):
    jax = s.fw
    gpus = jax.devices("gpu")
    n = len(gpus)

    def reduce():
        jnp = jax.numpy
        x = jnp.arange(1, n + 1, dtype="float32").reshape(n, 1) * jnp.ones((n, 4), dtype="float32")
        out = jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i", devices=gpus)(x)
        out.block_until_ready()
        return [float(v) for v in _list(s, out.reshape(-1))]

    return all_reduce_step(n, "jax.lax.psum over pmap", reduce)


STEPS = {
    "import": jax_import,
    "devices": jax_devices,
    "matmul": jax_matmul,
    "conv": jax_conv,
    "mixed_precision": jax_mixed,
    "each_gpu": jax_each_gpu,
    "allreduce": jax_allreduce,
    "compile": jax_compile,
    "bench_matmul": jax_bench_matmul,
    "bench_h2d": jax_bench_h2d,
}

if __name__ == "__main__":
    main(STEPS, "jax")
