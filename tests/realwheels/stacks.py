#!/usr/bin/env python3
"""Build the real CUDA stacks people install, each into a venv of its own under one cache folder, once.

    python tests/realwheels/stacks.py [--dir DIR] [--only NAME ...]

DIR: $ENVDOCTOR_REALWHEELS_DIR, else ~/.cache/envdoctor-realwheels. Each stack is `pip install` of what its users
type, from the index pip is configured with (several GB each: torch's CUDA build and its nvidia-* wheels). A
finished stack has `DIR/NAME/.complete` (its `pip freeze`); one without it is built again from scratch. What a
stack imports (for the loader's record) is `imports`, each tried on its own: a CUDA build imports without a driver
(libcuda is opened at the first CUDA call, not at import).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple


class Stack(NamedTuple):
    name: str
    install: List[str]  # what a user types after `pip install`
    imports: List[str]  # imported in one process, in this order, each in its own try
    fits: str  # a GPU (name:cc) it should run on, on a driver that runs its CUDA
    misfits: str  # a GPU it should not run on ("" when none is known)


STACKS: Dict[str, Stack] = {s.name: s for s in [
    Stack("torch-xformers", ["torch", "xformers"], ["torch", "xformers", "xformers._C"],
          "NVIDIA A100-SXM4-80GB:8.0", "NVIDIA GeForce GTX 1080:6.1"),
    Stack("torch-bitsandbytes", ["torch", "bitsandbytes"], ["torch", "bitsandbytes"],
          "NVIDIA A100-SXM4-80GB:8.0", "NVIDIA GeForce GTX 1080:6.1"),
    Stack("jax-cuda12", ["jax[cuda12]"], ["jax", "jaxlib", "jax_plugins.xla_cuda12", "jax_cuda12_plugin"],
          "NVIDIA A100-SXM4-80GB:8.0", ""),
    Stack("jax-cuda13", ["jax[cuda13]"], ["jax", "jaxlib", "jax_plugins.xla_cuda13", "jax_cuda13_plugin"],
          "NVIDIA A100-SXM4-80GB:8.0", "NVIDIA GeForce GTX 1080:6.1"),
    Stack("tensorflow-cuda", ["tensorflow[and-cuda]"], ["tensorflow"], "NVIDIA A100-SXM4-80GB:8.0", ""),
    # the CUDA provider is dlopened by its path when a session asks for CUDAExecutionProvider, not at import
    Stack("onnxruntime-gpu", ["onnxruntime-gpu"], ["onnxruntime", "dlopen:onnxruntime/capi/libonnxruntime_providers_shared.so",
                                                    "dlopen:onnxruntime/capi/libonnxruntime_providers_cuda.so"],
          "NVIDIA A100-SXM4-80GB:8.0", ""),
    Stack("cupy-cuda12x", ["cupy-cuda12x"], ["cupy"], "NVIDIA A100-SXM4-80GB:8.0", ""),
    # torchcodec dlopens the build of its core for the FFmpeg it finds (core9 ... core4), at first use
    Stack("vllm", ["vllm"], ["torch", "vllm", "vllm._C_stable_libtorch", "vllm._moe_C_stable_libtorch", "torchvision",
                             "torchaudio", "dlopen:torchcodec/libtorchcodec_core4.so"], "NVIDIA A100-SXM4-80GB:8.0", ""),
    # the package index serves paddlepaddle-gpu only up to 2.6.2 (its newer builds are on Paddle's own index)
    Stack("paddlepaddle-gpu", ["paddlepaddle-gpu"], ["paddle"], "NVIDIA A100-SXM4-80GB:8.0", ""),
]}


def default_dir() -> Path:
    env = os.environ.get("ENVDOCTOR_REALWHEELS_DIR")
    return Path(env) if env else Path.home() / ".cache" / "envdoctor-realwheels"


def ready(root: Path) -> List[str]:
    """The stacks built under `root`."""
    return [n for n in STACKS if (root / n / ".complete").is_file()]


def build(root: Path, name: str, python: str = sys.executable) -> bool:
    stack = STACKS[name]
    where = root / name
    if (where / ".complete").is_file():
        return True
    if where.exists():
        shutil.rmtree(where)
    subprocess.run([python, "-m", "venv", str(where)], check=True)
    pip = [str(where / "bin" / "python"), "-m", "pip", "install", "-q", *stack.install]
    print(f"{name}: pip install {' '.join(stack.install)}", flush=True)
    if subprocess.run(pip).returncode != 0:
        print(f"{name}: not built (pip failed): the index may not serve it for this Python", flush=True)
        return False
    freeze = subprocess.run([str(where / "bin" / "python"), "-m", "pip", "freeze"], capture_output=True, text=True)
    (where / ".complete").write_text(freeze.stdout)
    return True


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, default=default_dir())
    ap.add_argument("--only", nargs="*", default=list(STACKS))
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    failed = [n for n in args.only if not build(args.dir, n)]
    print(f"built: {', '.join(ready(args.dir)) or 'none'}; not built: {', '.join(failed) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
