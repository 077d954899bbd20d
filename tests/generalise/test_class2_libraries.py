"""Issue 14, class 2 (part): which CUDA libraries a framework really loads. A pin under `extra == 'and-cuda'` is a
library TensorFlow uses only when that extra was installed (envdoctor.facts.libraries); a torch whose own cuDNN pin
is violated by an installed wheel of another major is flagged."""
from __future__ import annotations

from envdoctor.snapshot import Cudnn, Evidence, Toolkit
from tests import snapfactory as sf
from tests.generalise.common import _own_cache, by_id, check, serious  # noqa: F401
from tests.rules.test_cudnn_pins import TF_215, TORCH_241, TORCH_241_PKGS, _L

LIB = "/usr/lib/x86_64-linux-gnu"


def _system_cuda_tf_next_to_torch(extra_pkgs=None):
    pkgs = dict(TORCH_241_PKGS, **(extra_pkgs or {}))
    return sf.machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"], packages=pkgs,
                      frameworks=[sf.tensorflow("2.15.0", cuda="12.2", cudnn="8", requires=TF_215),
                                  sf.torch("2.4.1", cuda="12.1", requires=TORCH_241)],
                      cudnn=[Cudnn("8.9.7", "library", f"{LIB}/libcudnn.so.8.9.7",
                                   [Evidence("cmd:ldconfig -p", "libcudnn.so.8 (libc6,x86-64) => "
                                                                f"{LIB}/libcudnn.so.8")])],
                      toolkits=[Toolkit("/usr/local/cuda-12.2", "12.2.140", "version.json", is_default=True)],
                      python="3.10.12")


def test_plain_tensorflow_on_system_cuda_next_to_torch_has_no_pin_clash():
    """Plain `pip install tensorflow==2.15.0` (no [and-cuda]) using the system CUDA 12.2 + cuDNN 8.9.7, the set-up
    https://www.tensorflow.org/install/source#gpu tests, next to torch 2.4.1 whose own pins installed
    nvidia-cudnn-cu12 9.1.0.70. TF's and-cuda pins are not in effect (nvidia-cuda-nvcc-cu12 and tensorrt, which
    only that extra installs, are absent): no ED320 error (it was a false error)."""
    found = check(_system_cuda_tf_next_to_torch(), ["ED3"])
    assert not [f for f in found if f.id == "ED320"], [f.message for f in found]
    assert not [f for f in found if f.severity == "error"], [f.message for f in found]


def test_the_same_with_tensorflow_and_cuda_installed_is_the_real_clash():
    """Counterpart, https://github.com/TencentARC/Moto/issues/2 : tensorflow[and-cuda] next to torch 2.4.1 - the
    extra's own packages are there, so its cuDNN 8.9.4.25 pin is violated by torch's 9.1.0.70: ED320 error."""
    snap = _system_cuda_tf_next_to_torch({"nvidia-cuda-nvcc-cu12": "12.2.140", "tensorrt": "8.6.1.post1"})
    assert [f.severity for f in by_id(check(snap, ["ED320"]), "ED320")] == ["error"]


def test_torch_whose_cudnn_8_pin_meets_a_cudnn_9_wheel_is_flagged():
    """https://github.com/pytorch/pytorch/issues/119989 family: torch 2.3.1 pins nvidia-cudnn-cu12==8.9.2.26 but a
    9.x wheel is installed (pip upgraded it for another package): libcudnn.so.8 cannot be loaded - an error."""
    t231 = [f"nvidia-cudnn-cu12 (==8.9.2.26) {_L}", f"nvidia-cublas-cu12 (==12.1.3.1) {_L}"]
    snap = sf.machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                      packages={"nvidia-cudnn-cu12": "9.1.0.70", "nvidia-cublas-cu12": "12.1.3.1"},
                      frameworks=[sf.torch("2.3.1", cuda="12.1", requires=t231)])
    found = serious(check(snap, ["ED3"]))
    assert found and found[0].severity == "error" and "8.9.2.26" in found[0].message, [f.message for f in found]
