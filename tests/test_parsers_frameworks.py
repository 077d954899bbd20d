"""Parsers of the version files frameworks ship (torch/version.py, build_info.py, jaxlib/version.py)."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from packaging.version import Version

from envdoctor.parsers import jax_build, tf_build_info, torch_version

FIX = Path(__file__).parent / "fixtures" / "frameworks"


def fixture(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


# -- torch/version.py -------------------------------------------------------------

@pytest.mark.parametrize(
    "name, version, build, cuda, rocm, label",
    [
        ("torch_version_2.13.0+cpu.py", "2.13.0+cpu", "cpu", None, None, "cpu"),
        ("torch_version_2.14.1+cu130.py", "2.14.1+cu130", "cuda", "13.0", None, "cu130"),
        ("torch_version_2.10.0a0_source_cuda13.0.py", "2.10.0a0+gite67e3d9", "cuda", "13.0", None, "gite67e3d9"),
        ("torch_version_1.13.1_cuda11.6.py", "1.13.1", "cuda", "11.6", None, None),
        ("torch_version_1.3.1_cuda10.1.py", "1.3.1", "cuda", "10.1", None, None),
        ("torch_version_1.5.0+cpu.py", "1.5.0+cpu", "cpu", None, None, "cpu"),
        ("torch_version_2.3.0.dev+rocm6.0.py", "2.3.0.dev20240308+rocm6.0", "rocm", None, "6.0", "rocm6.0"),
    ],
)
def test_torch_version_fixtures(name, version, build, cuda, rocm, label):
    info = torch_version.parse_torch_version(fixture(name))
    assert info is not None
    assert info.version == version
    Version(info.version)  # a valid PEP 440 version
    assert info.local_label == label
    assert info.cuda == cuda
    assert torch_version.torch_build(info) == (build, cuda, rocm)


def test_torch_version_fields_of_a_rocm_build():
    info = torch_version.parse_torch_version(fixture("torch_version_2.3.0.dev+rocm6.0.py"))
    assert info.hip == "6.0.32830-d62f6a171"
    assert info.git_version == "55e93013211e3d9a52e259aee5df4f6198a3cdcc"
    assert info.debug is False


def test_torch_version_newest_layout_has_rocm_and_xpu_fields():
    info = torch_version.parse_torch_version(fixture("torch_version_2.13.0+cpu.py"))
    assert (info.cuda, info.hip, info.rocm, info.xpu) == (None, None, None, None)
    text = fixture("torch_version_2.13.0+cpu.py").replace("xpu: Optional[str] = None", "xpu: Optional[str] = '2025.2'")
    xpu = torch_version.parse_torch_version(text)
    assert xpu.xpu == "2025.2"
    assert torch_version.torch_build(xpu)[0] == "unknown"  # an Intel GPU build is neither cpu nor cuda


def test_torch_version_falls_back_to_line_parsing_when_the_file_does_not_compile():
    text = fixture("torch_version_2.14.1+cu130.py") + "\nthis is not python (\n"
    info = torch_version.parse_torch_version(text)
    assert info is not None and info.version == "2.14.1+cu130" and info.cuda == "13.0"


@pytest.mark.parametrize(
    "label, expected",
    [
        ("cu121", ("cuda", "12.1", None)),
        ("cu118", ("cuda", "11.8", None)),
        ("cu92", ("cuda", "9.2", None)),
        ("cu102", ("cuda", "10.2", None)),
        ("cu130", ("cuda", "13.0", None)),
        ("cpu", ("cpu", None, None)),
        ("cpu.cxx11.abi", ("cpu", None, None)),
        ("rocm6.0", ("rocm", None, "6.0")),
        ("rocm5.4.2", ("rocm", None, "5.4.2")),
        ("xpu", ("unknown", None, None)),
        ("gite67e3d9", ("unknown", None, None)),
        (None, ("unknown", None, None)),
        ("", ("unknown", None, None)),
    ],
)
def test_build_from_local_label(label, expected):
    assert torch_version.build_from_label(label) == expected


def test_torchvision_version_file_is_read_not_executed():
    text = fixture("torchvision_version_0.29.1+cu130.py")
    assert "import" in text  # the real file imports torchvision.extension: reading it must not
    version = torch_version.parse_simple_version_py(text)
    assert version == "0.29.1+cu130"
    assert torch_version.build_from_label(torch_version.local_label(version)) == ("cuda", "13.0", None)


# -- tensorflow/python/platform/build_info.py ---------------------------------------

@pytest.mark.parametrize(
    "name, build, cuda, cudnn, first_cap, last_cap, trt",
    [
        ("tf_build_info_tensorflow_cpu_2.21.0.py", "cpu", None, None, None, None, False),
        ("tf_build_info_2.3_win_cuda10.1.py", "cuda", "10.1", "7", "sm_35", "compute_70", None),
        ("tf_build_info_2.x_win_cuda11.2.py", "cuda", "11.2", "8", "sm_35", "compute_80", False),
        ("tf_build_info_tf_gpu_2.9.1_win_cuda11.6.py", "cuda", "11.6", "8", "compute_50", "compute_86", False),
        ("tf_get_build_info_linux_2.13_cuda12.1.txt", "cuda", "12.1", "8", "sm_52", "compute_90", True),
        ("tf_get_build_info_linux_cuda12.5.1.txt", "cuda", "12.5.1", "9", "sm_60", "compute_90", False),
    ],
)
def test_tf_build_info_fixtures(name, build, cuda, cudnn, first_cap, last_cap, trt):
    info = tf_build_info.parse_build_info(fixture(name))
    assert info is not None
    assert info.build == build
    assert info.cuda_version == cuda
    assert info.cudnn_version == cudnn
    assert info.is_tensorrt_build is trt
    if first_cap is None:
        assert info.compute_capabilities is None
    else:
        assert info.compute_capabilities[0] == first_cap and info.compute_capabilities[-1] == last_cap
    if cuda is not None:
        Version(cuda)


def test_tf_cpu_build_info_has_flags_only():
    info = tf_build_info.parse_build_info(fixture("tf_build_info_tensorflow_cpu_2.21.0.py"))
    assert info.is_cuda_build is False and info.is_rocm_build is False
    assert info.cpu_compiler is None


def test_tf_windows_build_keeps_raw_values():
    info = tf_build_info.parse_build_info(fixture("tf_build_info_2.x_win_cuda11.2.py"))
    assert info.raw["cuda_version"] == "64_112"
    assert info.raw["cudart_dll_name"] == "cudart64_112.dll"


def test_tf_old_module_level_layout():
    # TF 1.13-2.2 layout (module-level names), as a stored copy of such a build_info.py shows it
    text = (
        "cuda_version_number = '10.0'\n"
        "cudnn_version_number = '7'\n"
        "msvcp_dll_name = 'msvcp140.dll'\n"
        "nvcuda_dll_name = 'nvcuda.dll'\n"
        "cudart_dll_name = 'cudart64_100.dll'\n"
    )
    info = tf_build_info.parse_build_info(text)
    assert info is not None
    assert (info.build, info.cuda_version, info.cudnn_version) == ("cuda", "10.0", "7")


@pytest.mark.parametrize(
    "raw, expected",
    [("64_112", "11.2"), ("64_101", "10.1"), ("64_90", "9.0"), ("12.3", "12.3"), ("12.5.1", "12.5.1"),
     ("", None), ("garbage", None), (None, None), (12, None)],
)
def test_tf_cuda_version_normalisation(raw, expected):
    assert tf_build_info.normalize_cuda_version(raw) == expected


@pytest.mark.parametrize(
    "raw, expected",
    [("64_8", "8"), ("64_7", "7"), ("8", "8"), ("8.9", "8.9"), ("", None), ("garbage", None), (None, None)],
)
def test_tf_cudnn_version_normalisation(raw, expected):
    assert tf_build_info.normalize_cudnn_version(raw) == expected


def test_tf_parser_does_not_take_other_files():
    assert tf_build_info.parse_build_info(fixture("torch_version_2.14.1+cu130.py")) is None
    assert tf_build_info.parse_build_info(fixture("jaxlib_version_0.10.2.py")) is None


# -- jaxlib/version.py and jax builds ------------------------------------------------

def test_jaxlib_version_new_layout():
    info = jax_build.parse_jax_version_file(fixture("jaxlib_version_0.10.2.py"))
    assert info is not None
    assert (info.version, info.base_version, info.release_version) == ("0.10.2", "0.10.2", "0.10.2")
    assert info.git_hash == "990e6a0b84138346e6a38785412f36356e0e5dc3"


def test_jaxlib_version_old_layout():
    info = jax_build.parse_jax_version_file(fixture("jaxlib_version_0.3.0.py"))
    assert info is not None and info.version == "0.3.0" and info.release_version is None


def test_jaxlib_version_source_tree_without_release_version():
    text = fixture("jaxlib_version_0.10.2.py").replace("_release_version: str = '0.10.2'", "_release_version: str | None = None")
    info = jax_build.parse_jax_version_file(text)
    assert info.version == "0.10.2" and info.release_version is None


@pytest.mark.parametrize(
    "version, expected",
    [
        ("0.4.23+cuda12.cudnn89", ("cuda", "12", "8.9", None)),
        ("0.3.25+cuda11.cudnn805", ("cuda", "11", "8.0.5", None)),
        ("0.4.7+cuda11.cudnn86", ("cuda", "11", "8.6", None)),
        ("0.1.75+cuda111", ("cuda", "11.1", None, None)),
        ("0.1.57+cuda102", ("cuda", "10.2", None, None)),
        ("0.1.51+cuda92", ("cuda", "9.2", None, None)),
        ("0.4.23", ("unknown", None, None, None)),
        ("0.4.23+weird", ("unknown", None, None, None)),
        (None, ("unknown", None, None, None)),
    ],
)
def test_jaxlib_local_labels(version, expected):
    assert jax_build.jaxlib_label_build(version) == expected


@pytest.mark.parametrize(
    "name, expected, path",
    [
        ("jax-cuda12-plugin", ("cuda", "12", "plugin"), "jax_cuda12_plugin/version.py"),
        ("jax-cuda12-pjrt", ("cuda", "12", "pjrt"), "jax_plugins/xla_cuda12/version.py"),
        ("jax-cuda13-plugin", ("cuda", "13", "plugin"), "jax_cuda13_plugin/version.py"),
        ("jax-rocm60-plugin", ("rocm", "6.0", "plugin"), "jax_rocm60_plugin/version.py"),
        ("jax-rocm7-pjrt", ("rocm", "7", "pjrt"), "jax_plugins/xla_rocm7/version.py"),
    ],
)
def test_plugin_dists(name, expected, path):
    assert jax_build.plugin_dist(name) == expected
    assert jax_build.plugin_module_paths(name) == (path,)


def test_plugin_dist_rejects_other_names():
    for name in ("jax", "jaxlib", "jax-cuda-plugin", "jax-cuda12-thing", "cupy-cuda12x"):
        assert jax_build.plugin_dist(name) is None
        assert jax_build.plugin_module_paths(name) == ()


def test_jax_build_judgement():
    assert jax_build.jax_build("0.10.2", ["jax", "jaxlib"]) == ("cpu", None, None, None)
    assert jax_build.jax_build("0.10.2", ["jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt"])[:2] == ("cuda", "12")
    assert jax_build.jax_build("0.10.2", ["jax-cuda12-plugin", "jax-cuda13-plugin"])[:2] == ("cuda", "13")
    assert jax_build.jax_build("0.4.23+cuda12.cudnn89", ["jax", "jaxlib"]) == ("cuda", "12", "8.9", None)
    assert jax_build.jax_build("0.10.2", ["jaxlib", "jax-rocm7-plugin"]) == ("rocm", None, None, "7")
    assert jax_build.jax_build(None, ["jax"]) == ("unknown", None, None, None)


# -- garbage in, nothing out, never an exception ---------------------------------------

GARBAGE = [
    "", "   \n", "\x00\x01\x02", "garbage", "__version__ =", "cuda = '12.1'", "build_info = ",
    "build_info = collections.OrderedDict(42)", "build_info = {1: 2}", "def f(:\n", "{" * 200,
    "__version__ = 12", "OrderedDict([('is_cuda_build', True), ('x',)])", "[" * 5000,
]


def _random_texts(n: int = 40):
    rng = random.Random(1234)
    alphabet = "abc_=:'\"()[]{},.0123456789 \n#+-OrderedDict"
    for _ in range(n):
        yield "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 200)))


@pytest.mark.parametrize("text", GARBAGE + list(_random_texts()) + [None, 42, b"bytes"])
def test_parsers_never_raise_on_garbage(text):
    assert torch_version.parse_torch_version(text) is None
    assert tf_build_info.parse_build_info(text) is None
    assert jax_build.parse_jax_version_file(text) is None
    assert torch_version.parse_simple_version_py(text) is None
    assert torch_version.build_from_label(text if isinstance(text, str) else None)[0] in ("cpu", "cuda", "rocm", "unknown")
    assert jax_build.jaxlib_label_build(text if isinstance(text, str) else None)[0] in ("cuda", "rocm", "unknown")


def test_garbage_build_info_that_looks_like_a_dict_is_rejected():
    assert tf_build_info.parse_build_info("build_info = {1: 2}") is None
    assert tf_build_info.parse_build_info("OrderedDict([('is_cuda_build', True), ('x',)])") is None
    assert tf_build_info.parse_build_info("is_cuda_build = 'yes'\n") is not None  # known key, unknown value
    assert tf_build_info.parse_build_info("is_cuda_build = 'yes'\n").build == "unknown"


def test_jax_version_file_parsed_once_per_text_answers_as_parsing_it():
    """jax and jaxlib ship the same version.py, parsed once: every call answers what parsing that text
    answers, as its own copy, so a caller changing its answer changes no other."""
    for name in ("jaxlib_version_0.10.2.py", "jaxlib_version_0.3.0.py"):
        text = fixture(name)
        uncached = jax_build._parse_version_text.__wrapped__(text)
        first, second = jax_build.parse_jax_version_file(text), jax_build.parse_jax_version_file(str(text))
        assert first == second == uncached and first is not second
        first.version = "changed"
        assert jax_build.parse_jax_version_file(text) == uncached
    assert jax_build.parse_jax_version_file("x = 1\n") is None and jax_build.parse_jax_version_file("") is None
