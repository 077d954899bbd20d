"""The smoke rules (ED700-ED749): what `envdoctor smoke` found, as the doctor's findings.

They are registered here, with the other rule modules, so that `envdoctor rules` lists them and `explain ED7xx`
describes them without importing the smoke package; their findings are made from a smoke run by
envdoctor.smoke.findings (which step failed, explained by the probe's facts). The rule engine, judging a
snapshot, has no smoke run: for it they find nothing. Which command runs them: envdoctor.rules.engine.
"""
from __future__ import annotations

from typing import Any, List

from envdoctor.rules.base import Finding, Rule, rule

REFERENCES = ["docs/smoke.md"]


@rule(id="ED700", name="smoke-passed", severity="ok", area="environment", references=REFERENCES,
      title="The framework computed correctly in the smoke test",
      rationale=("envdoctor smoke ran the framework's import, device discovery, a matmul and a convolution (forward "
                 "and backward) checked against a CPU reference, mixed precision and its compiler path in a child "
                 "process."),
      example="torch 2.3.1+cu121: smoke test passed on NVIDIA A100 (sm_80).")
@rule(id="ED701", name="smoke-import", severity="error", area="environment", references=REFERENCES,
      title="The framework cannot be imported",
      rationale=("Importing the framework in the target interpreter failed, crashed or hung: nothing built on it can "
                 "run."),
      example="tensorflow: import crashed (signal 11, SIGSEGV).")
@rule(id="ED702", name="smoke-devices", severity="error", area="environment", references=REFERENCES,
      title="Device discovery failed",
      rationale="Asking the framework for its devices (torch.cuda, tf.config, jax.devices) raised, crashed or hung.",
      example="torch: devices crashed (signal 6, SIGABRT).")
@rule(id="ED703", name="smoke-matmul", severity="error", area="environment", references=REFERENCES,
      title="A matrix multiplication failed or gave a wrong result",
      rationale=("A 64x64 matmul with exactly representable inputs is compared with a pure-Python reference; a wrong "
                 "result means broken kernels (e.g. a GPU architecture the build has no code for) or broken hardware."),
      example="jax: matmul (gpu) failed: CUDA_ERROR_NO_BINARY_FOR_GPU.")
@rule(id="ED704", name="smoke-conv", severity="error", area="environment", references=REFERENCES,
      title="A convolution (the cuDNN path on a GPU) failed or gave a wrong result",
      rationale=("A conv2d forward and backward pass is compared with a pure-Python reference; on a GPU this is the "
                 "cuDNN path, which fails when the cuDNN the loader finds is not the one the framework was built for."),
      example="torch: conv (gpu) failed: CUDNN_STATUS_NOT_INITIALIZED - two cuDNN majors on the loader path.")
@rule(id="ED705", name="smoke-mixed-precision", severity="error", area="environment", references=REFERENCES,
      title="A mixed-precision step failed or gave a wrong result",
      rationale=("fp16 / bf16 matmul and convolution (autocast in torch) are checked against the reference with a "
                 "tolerance that fits the dtype."),
      example="torch: mixed precision (gpu) failed: float16 matmul has NaN values.")
@rule(id="ED706", name="smoke-compile", severity="error", area="environment", references=REFERENCES,
      title="The framework's compiler path failed",
      rationale=("torch.compile (Inductor: a C++ compiler on CPU, Triton on GPU), tf.function(jit_compile=True) and "
                 "jax.jit (XLA) compile a tiny function; XLA on a GPU needs ptxas and libdevice from a CUDA toolkit."),
      example="jax: compile (gpu) failed: libdevice not found at ./libdevice.10.bc.")
@rule(id="ED707", name="smoke-bench", severity="error", area="environment", references=REFERENCES,
      title="A benchmark step failed",
      rationale="With --bench, a matmul throughput (GFLOP/s) and a host-to-device bandwidth figure are measured.",
      example="torch: bench h2d (gpu) failed: CUDA error: out of memory.")
@rule(id="ED708", name="smoke-shutdown", severity="error", area="environment", references=REFERENCES,
      title="The framework crashed or hung while its process exited",
      rationale="Every step passed, then the process crashed or hung at exit (often two copies of a native library).",
      example="tensorflow: every step ran, then the process crashed (signal 11, SIGSEGV) while exiting.")
@rule(id="ED710", name="smoke-no-gpu", severity="warning", area="environment", references=REFERENCES,
      title="The framework sees no GPU",
      rationale=("The GPU steps could not run because the framework found no GPU. That is expected without a GPU or "
                 "with a CPU-only build; it is a problem when the machine has a GPU and the build is a GPU build."),
      example="torch (cuda 12.1 build) sees no GPU although the machine has 1: torch.cuda.is_available() is False.")
@rule(id="ED712", name="smoke-onnxruntime-session", severity="error", area="environment", references=REFERENCES,
      title="An ONNX Runtime session failed or did not run on the CUDA provider",
      rationale=("A one-node MatMul model (built with the onnx package) runs in an InferenceSession with providers "
                 "[\"CUDAExecutionProvider\", \"CPUExecutionProvider\"]; ORT silently falls back to the CPU when the CUDA"
                 " provider cannot load (missing CUDA / cuDNN of its build, an old driver), which this step reports "
                 "as a failure."),
      example="onnxruntime: session (gpu) failed: asked for CUDAExecutionProvider but runs on CPUExecutionProvider.")
@rule(id="ED713", name="smoke-allreduce", severity="error", area="environment", references=REFERENCES,
      title="An all-reduce over the GPUs failed or gave a wrong result",
      rationale=("With two or more visible GPUs each framework sums a small tensor over all of them "
                 "(torch.cuda.nccl.all_reduce, jax.lax.psum under pmap, TensorFlow's MirroredStrategy); a failure or "
                 "a hang points at NCCL, peer-to-peer access or NCCL_* settings. With one device the step is skipped."),
      example="torch: allreduce (gpu) failed: NCCL error: unhandled system error (NCCL_P2P_DISABLE unset, IOMMU on).")
@rule(id="ED711", name="smoke-not-available", severity="info", area="environment", references=REFERENCES,
      title="A smoke step could not run here",
      rationale=("A step was not available for a reason other than a missing GPU: no C++ compiler for torch.compile "
                 "on CPU, no Triton, a GPU too old for Triton or bf16, cupy without cuDNN."),
      example="torch: compile (cpu) not available: no C++ compiler.")
def from_a_smoke_run(ctx: Any, r: Rule) -> List[Finding]:
    """A snapshot holds no smoke run: envdoctor.smoke.findings.smoke_findings makes these rules' findings."""
    return []
