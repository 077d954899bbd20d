"""ONNX Runtime: ``onnxruntime-gpu`` (the CUDA execution provider) and the CPU-only ``onnxruntime`` (and the ROCm
and nightly wheels, which share the ``onnxruntime`` package folder).  Its builds are the rows of
matrices/onnxruntime.toml: the CUDA each release was built with, the cuDNN major it loads, Python, platforms and
the ``cuda`` / ``cudnn`` extras (1.21+) that install the nvidia-* wheels."""
from __future__ import annotations

from envdoctor.frameworks.table_spec import TableSpec


class OnnxruntimeSpec(TableSpec):
    name = "onnxruntime"
    lock_examples = ("1.22.0", "1.22", ">=1.20,<1.24")
    table = "onnxruntime.toml"
    gpu_distribution = "onnxruntime-gpu"
    distributions = {"onnxruntime-gpu": "gpu", "onnxruntime": "cpu", "onnxruntime-rocm": "cpu",
                     "ort-gpu-nightly": "gpu", "ort-nightly-gpu": "gpu", "ort-nightly": "cpu"}
    smoke_program = "onnxruntime_smoke.py"
    version_files = ("onnxruntime/capi/build_and_package_info.py",)
    version_parser = "envdoctor.parsers.assignments:simple_assignments"
    check_skips = ("driver",)  # ED681 (rules/runtimes.py) judges the driver with the CUDA libraries it loads


SPEC = OnnxruntimeSpec()
