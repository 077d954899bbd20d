# envdoctor smoke test driver for TensorFlow. Runs after _common.py in the target interpreter
# (see _common.py for the protocol and the constraints): stdlib + tensorflow (+ its numpy) only.


def tf_import(s, device):
    # Grow GPU memory on demand instead of taking it all: the other frameworks' smoke tests may
    # share the GPU at the same moment. A value the user set is kept.
    os.environ.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
    tf = importlib.import_module("tensorflow")
    s.fw = tf
    version = getattr(tf, "__version__", "?")
    info = {"version": str(version), "file": getattr(tf, "__file__", None)}
    try:
        build = dict(tf.sysconfig.get_build_info())
        info["build_info"] = {k: build[k] for k in ("cuda_version", "cudnn_version", "is_cuda_build", "is_rocm_build")
                              if k in build}
    except Exception as exc:  # noqa: BLE001
        info["build_info"] = {"error": error_text(exc)}
    return {"detail": "tensorflow %s from %s" % (version, os.path.dirname(info["file"] or "?")), "info": info}


def _build(s):
    bi = s.fw.sysconfig.get_build_info() if hasattr(s.fw, "sysconfig") else {}
    if bi.get("is_rocm_build"):
        return "rocm"
    if bi.get("is_cuda_build"):
        return "cuda %s" % bi.get("cuda_version", "?")
    return "cpu"


def tf_devices(s, device):
    tf = s.fw
    try:
        build = _build(s)
    except Exception:  # noqa: BLE001
        build = "unknown"
    cpus = tf.config.list_physical_devices("CPU")
    physical = tf.config.list_physical_devices("GPU")
    gpus = []
    for i, dev in enumerate(physical):
        entry = {"index": i, "name": dev.name}
        try:
            details = tf.config.experimental.get_device_details(dev)
        except Exception:  # noqa: BLE001
            details = {}
        if details.get("device_name"):
            entry["name"] = details["device_name"]
        cc = details.get("compute_capability")
        if cc:
            entry["compute_capability"] = "%d.%d" % tuple(cc)[:2]
        gpus.append(entry)
    s.gpus = gpus
    if not gpus:
        if build == "cpu":
            s.no_gpu_why = "tensorflow %s is a CPU-only build" % tf.__version__
        else:
            s.no_gpu_why = ("tf.config.list_physical_devices('GPU') is empty (%s build; TensorFlow's log on stderr "
                            "says why)" % build)
        detail = "CPU only (%d CPU device%s); %s" % (len(cpus), "" if len(cpus) == 1 else "s", s.no_gpu_why)
    else:
        detail = "; ".join("%d: %s (%s)" % (g["index"], g["name"], g.get("compute_capability", "?")) for g in gpus)
        detail += " [%s build]" % build
    return {"detail": detail, "info": {"build": build, "gpus": gpus, "cpus": len(cpus)},
            "numbers": {"gpus": len(gpus)}}


def _devname(device):
    return "/GPU:0" if device == "gpu" else "/CPU:0"


class Misplaced(RuntimeError):
    """TensorFlow's soft placement ran the op elsewhere (e.g. no GPU kernel for that dtype)."""


def _check_placed(t, device):
    where = getattr(t, "device", "") or ""
    want = "GPU:" if device == "gpu" else "CPU:"
    if want not in where:
        raise Misplaced("the result was computed on %r, not on the %s" % (where, device.upper()))


def _list(tf, t):
    return tf.cast(t, tf.float32).numpy().tolist()


def _matmul(s, device, dtype=None, fn=None):
    tf = s.fw
    a, b, ref = s.data("mm", matmul_data)
    with tf.device(_devname(device)):
        ta = tf.constant(a, dtype=tf.float32)
        tb = tf.constant(b, dtype=tf.float32)
        if dtype is not None:
            ta, tb = tf.cast(ta, dtype), tf.cast(tb, dtype)
        c = (fn or tf.matmul)(ta, tb)
    _check_placed(c, device)
    return c, ref


def tf_matmul(s, device):
    tf = s.fw
    c, ref = _matmul(s, device)
    numbers = compare(_list(tf, c), ref, TOL[device], "matmul")
    return {"detail": "%dx%d fp32 on %s, max rel error %.2g" % (MM, MM, c.device.split("device:")[-1],
                                                               numbers["max_rel_err"]), "numbers": numbers}


def _conv(s, device, dtype=None):
    tf = s.fw
    d = s.data("conv", conv_data)
    with tf.device(_devname(device)):
        x = tf.constant(d["x"], dtype=tf.float32)
        w = tf.constant(d["w"], dtype=tf.float32)
        g = tf.constant(d["g"], dtype=tf.float32)
        with tf.GradientTape() as tape:
            tape.watch([x, w])
            xc, wc = (x, w) if dtype is None else (tf.cast(x, dtype), tf.cast(w, dtype))
            # NCHW / OIHW data, NHWC / HWIO as every TensorFlow device supports
            y = tf.nn.conv2d(tf.transpose(xc, [0, 2, 3, 1]), tf.transpose(wc, [2, 3, 1, 0]), strides=1,
                             padding="VALID")
            y = tf.transpose(y, [0, 3, 1, 2])
            loss = tf.reduce_sum(tf.cast(y, tf.float32) * g)
        dx, dw = tape.gradient(loss, [x, w])
    _check_placed(y, device)
    return d, y, dx, dw


def tf_conv(s, device):
    tf = s.fw
    d, y, dx, dw = _conv(s, device)
    tol = TOL[device]
    numbers = conv_errors(d, y, dx, dw, tol, lambda t: _list(tf, t))
    return {"detail": "conv2d forward + backward fp32, max rel error %.2g" % numbers["max_rel_err"],
            "numbers": numbers}


def tf_mixed(s, device):
    tf = s.fw
    notes = []
    if device == "gpu":
        names = ["float16"]
        cc = s.gpus[0].get("compute_capability")
        if cc is None or tuple(int(p) for p in cc.split(".")) >= (8, 0):
            names.append("bfloat16")
        else:
            notes.append("bf16 needs compute capability >= 8.0 (GPU 0 is %s)" % cc)
    else:
        names = ["bfloat16"]  # bf16 is the CPU mixed-precision dtype
    done, numbers, unsupported_by = [], {}, []
    for name in names:
        dtype = getattr(tf, name)
        try:
            c, ref = _matmul(s, device, dtype)
            n1 = compare(_list(tf, c), ref, TOL[name], "%s matmul" % name)
            d, y, dx, dw = _conv(s, device, dtype)
            n2 = compare(_list(tf, y), d["y"], TOL[name], "%s conv2d forward" % name)
            compare(_list(tf, dw), d["dw"], TOL[name], "%s conv2d weight gradient" % name)
        except Mismatch:
            raise
        except Exception as exc:  # noqa: BLE001
            if unsupported(exc) or isinstance(exc, Misplaced):  # no kernel: soft placement fell back
                unsupported_by.append("%s: %s" % (name, str(exc).splitlines()[0][:200]))
                continue
            raise
        numbers[name + "_max_rel_err"] = max(n1["max_rel_err"], n2["max_rel_err"])
        done.append(name)
    if not done:
        raise NotAvailable("no mixed-precision dtype works on %s here (%s)" % (device, "; ".join(unsupported_by + notes)),
                           code="dtype")
    detail = ", ".join(done) + " ok (matmul + conv2d forward/backward)"
    if unsupported_by or notes:
        detail += "; " + "; ".join(notes + ["not supported: " + u for u in unsupported_by])
    return {"detail": detail, "numbers": numbers}


def tf_compile(s, device):
    tf = s.fw

    def fn(x, y):
        return tf.nn.relu(tf.matmul(x, y)) * 0.5 + 1.0

    compiled = tf.function(fn, jit_compile=True)
    c, ref = _matmul(s, device, fn=compiled)
    expected = [[max(v, 0.0) * 0.5 + 1.0 for v in row] for row in ref]
    numbers = compare(_list(tf, c), expected, TOL[device], "XLA-compiled function")
    return {"detail": "tf.function(jit_compile=True) (XLA) of relu(x @ y) * 0.5 + 1, max rel error %.2g"
                      % numbers["max_rel_err"], "numbers": numbers}


def tf_bench_matmul(s, device):
    tf = s.fw
    n = 4096 if device == "gpu" else 512
    last = []
    with tf.device(_devname(device)):
        a = tf.ones((n, n), dtype=tf.float32)
        b = tf.ones((n, n), dtype=tf.float32)

        def run():
            last[:] = [tf.matmul(a, b)]

        def sync():
            float(tf.reduce_sum(last[0][:1, :1]).numpy())

        rate = timed_rate(run, sync, 2.0 * n ** 3 / 1e9)
    return {"detail": "%dx%d fp32 matmul: %.1f GFLOP/s" % (n, n, rate), "numbers": {"gflops": rate, "n": n}}


def tf_bench_h2d(s, device):
    tf = s.fw
    np = importlib.import_module("numpy")
    size = 64 << 20
    host = np.ones(size // 4, dtype=np.float32)
    last = []
    with tf.device("/CPU:0"):
        src = tf.constant(host)
    with tf.device("/GPU:0"):
        def run():
            last[:] = [tf.identity(src)]  # a copy to the GPU

        def sync():
            float(tf.reduce_sum(last[0][:1]).numpy())

        rate = timed_rate(run, sync, size / 1e9)
    _check_placed(last[0], "gpu")
    return {"detail": "host-to-device copy of 64 MiB: %.1f GB/s" % rate, "numbers": {"gb_per_s": rate, "bytes": size}}



def tf_each_gpu(s, device):
    tf = s.fw
    gpus = tf.config.list_logical_devices("GPU")
    a, b, ref = s.data("mm", matmul_data)

    def one(i):
        with tf.device(gpus[i].name):
            c = tf.matmul(tf.constant(a, dtype=tf.float32), tf.constant(b, dtype=tf.float32))
        _check_placed(c, "gpu")
        return _list(tf, c), ref

    return on_each_gpu([d.name for d in gpus], one)


def tf_allreduce(s, device):
    tf = s.fw
    gpus = tf.config.list_logical_devices("GPU")

    def reduce():
        strategy = tf.distribute.MirroredStrategy([d.name for d in gpus])

        def fn():
            rid = tf.distribute.get_replica_context().replica_id_in_sync_group
            return tf.fill([4], tf.cast(rid + 1, tf.float32))

        total = strategy.reduce(tf.distribute.ReduceOp.SUM, strategy.run(fn), axis=None)
        return [float(v) for v in total.numpy().tolist()]

    return all_reduce_step(len(gpus), "MirroredStrategy all-reduce", reduce)


STEPS = {
    "import": tf_import,
    "devices": tf_devices,
    "matmul": tf_matmul,
    "conv": tf_conv,
    "mixed_precision": tf_mixed,
    "each_gpu": tf_each_gpu,
    "allreduce": tf_allreduce,
    "compile": tf_compile,
    "bench_matmul": tf_bench_matmul,
    "bench_h2d": tf_bench_h2d,
}

if __name__ == "__main__":
    main(STEPS, "tensorflow")
