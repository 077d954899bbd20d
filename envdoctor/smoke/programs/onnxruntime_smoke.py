# envdoctor smoke test driver for ONNX Runtime. Runs after _common.py in the target interpreter (see _common.py
# for the protocol and the constraints): stdlib + onnxruntime (+ its numpy) + onnx to build the tiny model.


def ort_import(s, device):
    return import_step(s, "onnxruntime")


def ort_devices(s, device):
    ort = s.fw
    providers = [str(p) for p in ort.get_available_providers()]
    info = {"providers": providers, "device": str(ort.get_device())}
    if "CUDAExecutionProvider" in providers:
        s.gpus = [{"index": 0, "name": "CUDAExecutionProvider"}]
        detail = "providers: " + ", ".join(providers)
    else:
        s.gpus = []
        s.no_gpu_why = "CUDAExecutionProvider is not among onnxruntime's providers (%s)" % ", ".join(providers)
        detail = "CPU only; " + s.no_gpu_why
    info["gpus"] = s.gpus
    return {"detail": detail, "info": info, "numbers": {"gpus": len(s.gpus)}}


def _model(s):
    """A one-node MatMul model, serialized; built with the onnx package."""
    try:
        onnx = importlib.import_module("onnx")
    except ImportError as exc:
        raise NotAvailable("the onnx package is not installed, so no test model can be built (%s); "
                           "pip install onnx" % error_text(exc), code="no_onnx")
    helper, tp = onnx.helper, onnx.TensorProto
    graph = helper.make_graph([helper.make_node("MatMul", ["A", "B"], ["C"])], "envdoctor_smoke",
                              [helper.make_tensor_value_info("A", tp.FLOAT, [MM, MM]),
                               helper.make_tensor_value_info("B", tp.FLOAT, [MM, MM])],
                              [helper.make_tensor_value_info("C", tp.FLOAT, [MM, MM])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7  # opset 13's IR (onnx 1.8): every onnxruntime since 1.6 reads it
    return model.SerializeToString()


def ort_session(s, device):
    ort = s.fw
    blob = s.data("model", lambda: _model(s))
    np = importlib.import_module("numpy")
    a, b, ref = s.data("mm", matmul_data)
    wanted = ["CUDAExecutionProvider", "CPUExecutionProvider"] if device == "gpu" else ["CPUExecutionProvider"]
    opts = ort.SessionOptions()
    opts.log_severity_level = 3  # errors only: the fallback is reported below, not as a log line
    sess = ort.InferenceSession(blob, sess_options=opts, providers=wanted)
    used = [str(p) for p in sess.get_providers()]
    out = sess.run(None, {"A": np.asarray(a, dtype=np.float32), "B": np.asarray(b, dtype=np.float32)})[0]
    numbers = compare(out.tolist(), ref, TOL[device], "MatMul")
    info = {"requested": wanted, "providers": used}
    ran = used[0] if used else "?"
    if device == "gpu" and ran != "CUDAExecutionProvider":
        return {"status": "failed", "code": "cpu_fallback", "info": info, "numbers": numbers,
                "detail": "InferenceSession asked for CUDAExecutionProvider but runs on %s: the CUDA provider did "
                          "not load (its CUDA / cuDNN libraries, or the driver)" % ran}
    return {"detail": "InferenceSession MatMul %dx%d ran on %s, max rel error %.2g" % (MM, MM, ran, numbers["max_rel_err"]),
            "numbers": numbers, "info": info}


STEPS = {
    "import": ort_import,
    "devices": ort_devices,
    "session": ort_session,
}

if __name__ == "__main__":
    main(STEPS, "onnxruntime")
