# envdoctor smoke test driver for CuPy (GPU only). Runs after _common.py in the target
# interpreter (see _common.py for the protocol and the constraints): stdlib + cupy (+ its numpy).


def cupy_import(s, device):
    return import_step(s, "cupy")


def cupy_devices(s, device):
    cp = s.fw
    rt = cp.cuda.runtime
    info = {}
    for key, call in (("runtime", "runtimeGetVersion"), ("driver", "driverGetVersion")):
        try:
            info[key] = getattr(rt, call)()
        except Exception as exc:  # noqa: BLE001
            info[key] = "error: " + error_text(exc)
    try:
        count = rt.getDeviceCount()
        why = ""
    except Exception as exc:  # noqa: BLE001 - CUDARuntimeError without a driver or a device
        count, why = 0, error_text(exc)
    gpus = []
    for i in range(count):
        props = rt.getDeviceProperties(i)
        name = props.get("name", b"?")
        entry = {"index": i, "name": name.decode("utf-8", "replace") if isinstance(name, bytes) else str(name)}
        if getattr(rt, "is_hip", False):
            entry["arch"] = props.get("gcnArchName", b"").decode("utf-8", "replace") or None
        else:
            cc = str(cp.cuda.Device(i).compute_capability)  # "86"
            entry["compute_capability"] = "%s.%s" % (cc[:-1], cc[-1]) if len(cc) >= 2 else cc
        gpus.append(entry)
    s.gpus = gpus
    info["gpus"] = gpus
    if not gpus:
        s.no_gpu_why = why or "cupy.cuda.runtime.getDeviceCount() is 0"
        detail = "no GPU; " + s.no_gpu_why
    else:
        detail = "; ".join("%d: %s (%s)" % (g["index"], g["name"], g.get("compute_capability") or g.get("arch"))
                           for g in gpus)
    return {"detail": detail, "info": info, "numbers": {"gpus": len(gpus)}}


def _sync(s):
    s.fw.cuda.Device().synchronize()


def _list(s, arr):
    return s.fw.asnumpy(arr).astype("float32").tolist()


def cupy_matmul(s, device):
    cp = s.fw
    a, b, ref = s.data("mm", matmul_data)
    c = cp.asarray(a, dtype=cp.float32) @ cp.asarray(b, dtype=cp.float32)
    _sync(s)
    numbers = compare(_list(s, c), ref, TOL["gpu"], "matmul")
    return {"detail": "%dx%d fp32 (cuBLAS), max rel error %.2g" % (MM, MM, numbers["max_rel_err"]), "numbers": numbers}


def cupy_conv(s, device):
    cp = s.fw
    try:
        cudnn = importlib.import_module("cupyx.cudnn")
    except Exception as exc:  # noqa: BLE001
        raise NotAvailable("cuDNN is not usable from cupy (%s); install cupy's cuDNN support to test convolutions"
                           % error_text(exc), code="no_cudnn")
    d = s.data("conv", conv_data)
    x = cp.asarray(d["x"], dtype=cp.float32)
    w = cp.asarray(d["w"], dtype=cp.float32)
    g = cp.asarray(d["g"], dtype=cp.float32)
    y = cp.empty(g.shape, dtype=cp.float32)
    pad, stride, dilation = (0, 0), (1, 1), (1, 1)
    cudnn.convolution_forward(x, w, None, y, pad, stride, dilation, 1, auto_tune=False, tensor_core="auto")
    dw = cp.empty_like(w)
    cudnn.convolution_backward_filter(x, g, dw, pad, stride, dilation, 1, deterministic=False, auto_tune=False,
                                      tensor_core="auto")
    dx = cp.empty_like(x)
    cudnn.convolution_backward_data(w, g, None, dx, pad, stride, dilation, 1, deterministic=False, auto_tune=False,
                                    tensor_core="auto")
    _sync(s)
    tol = TOL["gpu"]
    numbers = conv_errors(d, y, dx, dw, tol, lambda t: _list(s, t))
    return {"detail": "cuDNN conv2d forward + backward fp32, max rel error %.2g" % numbers["max_rel_err"],
            "numbers": numbers}


def cupy_mixed(s, device):
    cp = s.fw
    a, b, ref = s.data("mm", matmul_data)
    c = cp.asarray(a, dtype=cp.float16) @ cp.asarray(b, dtype=cp.float16)
    _sync(s)
    n1 = compare(_list(s, c), ref, TOL["float16"], "float16 matmul")
    return {"detail": "float16 matmul ok (cupy has no bfloat16)", "numbers": {"float16_max_rel_err": n1["max_rel_err"]}}


def cupy_compile(s, device):
    cp = s.fw
    a, b, ref = s.data("mm", matmul_data)
    kernel = cp.ElementwiseKernel("float32 x", "float32 z", "z = (x > 0.0f ? x : 0.0f) * 0.5f + 1.0f",
                                  "envdoctor_smoke_relu")
    c = kernel(cp.asarray(a, dtype=cp.float32) @ cp.asarray(b, dtype=cp.float32))
    _sync(s)
    expected = [[max(v, 0.0) * 0.5 + 1.0 for v in row] for row in ref]
    numbers = compare(_list(s, c), expected, TOL["gpu"], "NVRTC-compiled kernel")
    return {"detail": "cupy.ElementwiseKernel (NVRTC) of relu(x @ y) * 0.5 + 1, max rel error %.2g"
                      % numbers["max_rel_err"], "numbers": numbers}


def cupy_bench_matmul(s, device):
    cp = s.fw
    n = 4096
    a = cp.ones((n, n), dtype=cp.float32)
    rate = timed_rate(lambda: a @ a, lambda: _sync(s), 2.0 * n ** 3 / 1e9)
    return {"detail": "%dx%d fp32 matmul: %.1f GFLOP/s" % (n, n, rate), "numbers": {"gflops": rate, "n": n}}


def cupy_bench_h2d(s, device):
    cp = s.fw
    np = importlib.import_module("numpy")
    size = 64 << 20
    host = np.ones(size // 4, dtype=np.float32)
    dev = cp.empty(size // 4, dtype=cp.float32)
    rate = timed_rate(lambda: dev.set(host), lambda: _sync(s), size / 1e9)
    return {"detail": "host-to-device copy of 64 MiB (pageable): %.1f GB/s" % rate,
            "numbers": {"gb_per_s": rate, "bytes": size}}


STEPS = {
    "import": cupy_import,
    "devices": cupy_devices,
    "matmul": cupy_matmul,
    "conv": cupy_conv,
    "mixed_precision": cupy_mixed,
    "compile": cupy_compile,
    "bench_matmul": cupy_bench_matmul,
    "bench_h2d": cupy_bench_h2d,
}

if __name__ == "__main__":
    main(STEPS, "cupy")
