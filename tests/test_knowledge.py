"""The knowledge API: known facts (expected values come from the cited upstream sources, not from our data files),
tolerant GPU-name matching, the cache overlay and broken-data handling."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from packaging.version import Version

from envdoctor.knowledge import (
    TABLES,
    build_runs_on_cc,
    bundled_dir,
    cache_file,
    default_cache_dir,
    load_matrices,
    normalize_cc,
)


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return load_matrices(cache_dir=tmp_path_factory.mktemp("no-cache"))


# --------------------------------------------------------------------------- CUDA / driver
# NVIDIA CUDA release notes Table 3 / minor-version-compatibility page.


def test_mvc_floors(m):
    assert m.mvc_floor(12) == "525.60.13"
    assert m.mvc_floor(11) == "450.80.02"
    assert m.mvc_floor(11, "windows") == "452.39"
    assert m.mvc_floor(13) == "580.65.06"
    assert m.mvc_floor(10) is None  # no minor-version compatibility before CUDA 11


def test_driver_runs_cuda_via_mvc(m):
    # 525.60.13 is below the 12.1 toolkit driver (530.30.02) but runs 12.1 builds through MVC
    assert m.min_driver_for_cuda("12.1") == "530.30.02"
    assert m.driver_runs_cuda("525.60.13", "12.1") is True
    assert m.driver_runs_cuda("520.61.05", "12.1") is False
    assert m.driver_runs_cuda("535.104.05", "12.8.1") is True
    assert m.driver_runs_cuda("575.57.08", "13.0") is False
    assert m.driver_runs_cuda("580.65.06", "13.2") is True
    assert m.driver_runs_cuda("580.65.06", "11.8") is True  # backward compatibility
    assert m.driver_runs_cuda("garbage", "12.1") is False
    assert m.driver_runs_cuda("550.54.14", "12.4", os="darwin") is False


def test_driver_runs_cuda_10x_uses_toolkit_driver(m):
    assert m.driver_runs_cuda("418.39", "10.1") is True
    assert m.driver_runs_cuda("410.48", "10.1") is False
    assert m.driver_runs_cuda("440.33", "10.2.89") is True


def test_cuda_10_rows(m):
    # CUDA 10.2 release notes table: 10.2.89 >=440.33/441.22, 10.1 (and updates) >=418.39/418.96, 10.0.130 >=410.48/411.31
    assert m.cuda_release("10.0").version == "10.0.130"
    assert m.min_driver_for_cuda("10.0") == "410.48"
    assert m.min_driver_for_cuda("10.0", "windows") == "411.31"
    assert m.min_driver_for_cuda("10.1") == "418.39"
    assert m.min_driver_for_cuda("10.2") == "440.33"
    assert m.min_driver_for_cuda("10.2", "windows") == "441.22"
    # runfile names: cuda_10.1.168_418.67_linux.run, cuda_10.1.243_418.87.00_linux.run
    assert m.cuda_release("10.1.168").bundled_driver_linux == "418.67"
    assert m.cuda_release("10.1.243").bundled_driver_linux == "418.87.00"


def test_max_cuda_for_driver(m):
    assert m.max_cuda_for_driver("535.104.05") == "12.2"
    assert m.max_cuda_for_driver("535.54.03") == "12.2"
    assert m.max_cuda_for_driver("530.30.02") == "12.1"
    assert m.max_cuda_for_driver("525.60.13") == "12.0"
    assert m.max_cuda_for_driver("520.61.05") == "11.8"
    assert m.max_cuda_for_driver("580.65.06") == "13.0"
    assert m.max_cuda_for_driver("410.48") == "10.0"
    assert m.max_cuda_for_driver("400.1") == "9.2"  # 9.2.88 needs >= 396.26, 10.0 >= 410.48
    assert m.max_cuda_for_driver("370.28") is None  # older than every CUDA in the table (9.0 needs >= 384.81)
    assert m.max_cuda_for_driver("551.78", "windows") == "12.4"
    # Table 3 has no Windows driver for 13.x; a 580-branch Windows driver still runs 13.0 (MVC branch)
    assert m.max_cuda_for_driver("581.15", "windows") == "13.0"
    assert m.max_cuda_for_driver("not-a-version") is None


def test_cuda_release_lookup(m):
    assert m.cuda_release("12.4").version == "12.4.0"
    assert m.cuda_release("12.4.1").driver_linux == "550.54.15"
    assert m.cuda_release("11.0").version == "11.0.2"  # 11.0.1 was the RC
    assert m.cuda_release("13.4").version == "13.4.1"  # 13.4 GA is build-versioned 13.4.1
    assert m.cuda_release("12.4.131").version == "12.4.0"  # nvcc build number -> the GA row
    assert m.cuda_release("12.3.2").version == "12.3.1"  # unknown update -> newest older row
    assert m.cuda_release("10.1.200").version == "10.1.168"
    assert m.cuda_release("12.7") is None
    assert m.cuda_release("x") is None
    assert m.min_driver_for_cuda("13.0", "windows") is None  # N/A in Table 3


# --------------------------------------------------------------------------- GPUs


@pytest.mark.parametrize(
    "name,cc",
    [
        ("NVIDIA GeForce RTX 5090", "12.0"),
        ("nvidia geforce rtx 4090", "8.9"),
        ("GeForce RTX 3060 Laptop GPU", "8.6"),
        ("NVIDIA GeForce RTX 3080 Ti Laptop GPU", "8.6"),
        ("NVIDIA GeForce RTX 2080 with Max-Q Design", "7.5"),
        ("Tesla T4", "7.5"),
        ("NVIDIA T4", "7.5"),
        ("NVIDIA A100-SXM4-80GB", "8.0"),
        ("NVIDIA A100 80GB PCIe", "8.0"),
        ("NVIDIA A10", "8.6"),
        ("NVIDIA H100 80GB HBM3", "9.0"),
        ("NVIDIA H100 PCIe", "9.0"),
        ("NVIDIA GH200 480GB", "9.0"),
        ("NVIDIA L4", "8.9"),
        ("NVIDIA L40S", "8.9"),
        ("NVIDIA B200", "10.0"),
        ("NVIDIA GB10", "12.1"),
        ("Tesla V100-SXM2-16GB", "7.0"),
        ("Tesla P100-PCIE-16GB", "6.0"),
        ("Tesla K80", "3.7"),
        ("NVIDIA TITAN Xp", "6.1"),
        ("NVIDIA GeForce GTX TITAN X", "5.2"),  # Maxwell Titan X, not the Pascal one
        ("NVIDIA RTX 4000 SFF Ada Generation", "8.9"),
        ("Quadro RTX 4000", "7.5"),
        ("NVIDIA RTX A6000", "8.6"),
        ("Orin (nvgpu)", "8.7"),
        ("  NVIDIA  GeForce   GTX 1080 Ti ", "6.1"),
    ],
)
def test_cc_for_gpu_name(m, name, cc):
    assert m.cc_for_gpu_name(name) == cc


@pytest.mark.parametrize("name", ["", "NVIDIA", "AMD Radeon RX 7900 XTX", "NVIDIA GeForce RTX 9999", "NVIDIA A10X"])
def test_cc_for_unknown_gpu_name(m, name):
    assert m.cc_for_gpu_name(name) is None


def test_arch_rows(m):
    assert m.arch("sm_86").name == "Ampere"
    assert m.arch("8.9").name.startswith("Ada")
    assert m.arch("compute_90a").cc == "9.0"
    assert m.arch("3.5").last_cuda == "11.8"
    assert m.arch("5.0").last_cuda == "12.9"
    assert m.arch("10.1").renamed_to == "11.0"
    assert m.arch("99.9") is None


def test_cuda_supports_cc(m):
    assert m.cuda_supports_cc("13.0", "7.0") is False  # Volta gone in 13.0
    assert m.cuda_supports_cc("12.9.1", "7.0") is True
    assert m.cuda_supports_cc("13.0", "7.5") is True
    assert m.cuda_supports_cc("12.8", "12.0") is True
    assert m.cuda_supports_cc("12.6", "12.0") is False  # Blackwell needs 12.8
    assert m.cuda_supports_cc("12.0", "3.7") is False
    assert m.cuda_supports_cc("11.8", "3.7") is True
    assert m.cuda_supports_cc("11.0", "3.0") is False
    assert m.cuda_supports_cc("13.0", "10.1") is False  # renumbered sm_110
    assert m.cuda_supports_cc("13.0", "11.0") is True
    assert m.cuda_supports_cc("12.9", "12.1") is True
    assert m.cuda_supports_cc("12.4", "99.9") is None


def test_normalize_cc():
    assert normalize_cc("sm_86") == "8.6"
    assert normalize_cc("sm_120a") == "12.0"
    assert normalize_cc("compute_90") == "9.0"
    assert normalize_cc((8, 9)) == "8.9"
    assert normalize_cc("8.6") == "8.6"
    assert normalize_cc("garbage") is None
    assert normalize_cc(None) is None


def test_build_runs_on_cc():
    lst = ["sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90"]
    assert build_runs_on_cc(lst, "8.9") is True  # sm_86 cubin runs on 8.9 (same major)
    assert build_runs_on_cc(lst, "12.0") is False  # no sm_12x cubin, no PTX
    assert build_runs_on_cc(lst + ["compute_90"], "12.0") is True  # PTX JIT
    assert build_runs_on_cc(lst, "3.7") is False
    assert build_runs_on_cc(["sm_90a"], "9.0") is True
    assert build_runs_on_cc(["sm_90a"], "10.0") is False
    assert build_runs_on_cc([], "8.0") is None


# --------------------------------------------------------------------------- PyTorch
# PyPI metadata of torch / torchvision; pytorch/builder build_cuda.sh; RELEASE.md.


def test_torch_release_lookup(m):
    rel = m.torch_release("2.1.2+cu121")
    assert rel.version == "2.1"
    assert rel.has_patch("2.1.2") and not rel.has_patch("2.1.7")
    assert m.torch_release("2.1").version == "2.1"
    assert m.torch_release("3.0.0") is None
    assert m.torch_release("not a version") is None
    versions = [Version(r.version) for r in m.pytorch_releases]
    assert versions == sorted(versions) and m.torch_release(str(versions[0])) is m.pytorch_releases[0]


def test_torch_variants(m):
    assert m.torch_variant("2.9.0", "cu121") is None
    v = m.torch_variant("2.5.1", "cu121")
    assert "sm_90" in v.arch_list and "sm_120" not in v.arch_list
    assert v.index_url == "https://download.pytorch.org/whl/cu121"
    assert v.local_label == "+cu121"
    assert v.cuda == "12.1"
    assert m.torch_variant("2.5.1", "+CU121") == v
    assert "sm_120" in m.torch_variant("2.7.0", "cu128").arch_list
    assert m.torch_variant("2.1.0", "cu118").arch_list[0] == "sm_37"
    assert m.torch_variant("2.5.1", "rocm6.2").kind == "rocm"
    assert m.torch_variant("2.5.1", "cpu").kind == "cpu"
    assert m.torch_variant("9.9", "cpu") is None


def test_torch_pypi_default_from_metadata(m):
    # torch 2.5.1 Requires-Dist: nvidia-cuda-runtime-cu12==12.4.127, nvidia-cudnn-cu12==9.1.0.70
    d = m.torch_default_variant("2.5.1")
    assert d.name == "cu124" and d.cudnn == "9.1.0.70"
    assert d.nvidia_pins["nvidia-cudnn-cu12"] == "==9.1.0.70"
    assert d.nvidia_pins["nvidia-cuda-runtime-cu12"] == "==12.4.127"
    # torch 1.13.x pins nvidia-cuda-runtime-cu11==11.7.99 -> cu117
    assert m.torch_default_variant("1.13.1").cuda == "11.7"
    # 2.11.0 pins cuda-toolkit[...]==13.0.2 and nvidia-cudnn-cu13==9.19.0.56
    d = m.torch_default_variant("2.11.0")
    assert d.cuda == "13.0" and d.cudnn == "9.19.0.56"
    assert d.nvidia_pins["cuda-toolkit"] == "==13.0.2"
    # 2.14.x pins cuda-toolkit==13.0.3 (not 13.2); 2.15.0 pins 13.2.2
    assert m.torch_default_variant("2.14.1").cuda == "13.0"
    assert m.torch_default_variant("2.15.0").cuda == "13.2"
    assert m.torch_default_variant("2.5.1", "win-amd64").kind == "cpu"
    assert m.torch_installed_variant("2.5.1+cu121").name == "cu121"
    assert m.torch_installed_variant("2.5.1").name == "cu124"


def test_torch_patch_companions(m):
    rel = m.torch_release("2.5.1")
    p = rel.patch("2.5.1+cu124")
    assert p.torchvision == "0.20.1" and p.torchvision_requires == "==2.5.1"
    assert p.triton == "==3.1.0"
    assert m.torch_release("2.14.1").patch("2.14.1").torchvision_requires == ">=2.14.0"


def test_torch_python_support(m):
    assert not m.torch_release("2.15.0").python_spec().contains("3.10")
    assert m.torch_release("2.15.0").python_spec().contains("3.11")
    assert not m.torch_release("2.5.1").python_spec().contains("3.8")  # no cp38 wheel although requires_python says so
    assert m.torch_release("2.5.1").requires_python == ">=3.8.0"
    assert m.torch_release("2.4.1").python_spec().contains("3.8")


def test_torch_variant_runs_on_cc(m):
    assert m.torch_variant("2.5.1", "cu121").runs_on_cc("12.0") is False  # RTX 50xx needs cu128
    assert m.torch_variant("2.5.1", "cu121").runs_on_cc("8.9") is True
    assert m.torch_variant("2.7.0", "cu128").runs_on_cc("12.0") is True
    assert m.torch_variant("2.1.0", "cu121").runs_on_cc("3.7") is False
    assert m.torch_variant("2.1.0", "cu118").runs_on_cc("3.7") is True
    assert m.torch_variant("2.5.1", "cpu").runs_on_cc("8.0") is None


def test_conda_story(m):
    pytorch = next(c for c in m.conda if c.channel == "pytorch")
    assert pytorch.last == "2.5"


# --------------------------------------------------------------------------- TensorFlow / JAX / cuDNN


def test_tensorflow(m):
    r = m.tf_release("2.15.1")
    assert (r.cuda, r.cudnn) == ("12.2", "8.9")
    assert r.cudnn_pin == "==8.9.4.25"
    r = m.tf_release("2.4.0")
    assert (r.cuda, r.cudnn) == ("11.0", "8.0")
    assert m.tf_release("2.10.1").gpu_on("win-amd64") is True
    assert m.tf_release("2.11.0").gpu_on("win-amd64") is False
    assert m.tf_release("2.13.0").and_cuda == {}
    assert m.tf_release("2.14.0").and_cuda["nvidia-cudnn-cu11"] == "==8.7.0.84"
    assert m.tf_release("2.21.0").and_cuda["nvidia-cudnn-cu12"] == "<10.0,>=9.3.0.75"
    assert not m.tf_release("2.21.0").gpu_on("macos-arm64")
    assert m.tf_release("2.99") is None


def test_jax(m):
    r = m.jax_release("0.4.30")
    assert r.plugins["cuda12"].cudnn_min == "9.0"
    assert "cuda13" not in m.jax_release("0.7.0").plugins
    p = m.jax_release("0.7.2").plugins["cuda13"]
    assert (p.cc_min, p.driver_min, p.cudnn_min) == ("7.5", "580", "9.12.0.46")
    assert m.jax_release("0.8.3").jaxlib_ok("0.8.2") is True
    assert m.jax_release("0.7.2").jaxlib_ok("0.7.1") is False
    assert m.jax_release("0.12.0.1").requires_python == ">=3.12"
    assert m.jax_release("0.3.0") is None


def test_cudnn(m):
    r = m.cudnn_release("8.9.7")
    assert r.version_multiplier == 1000 and r.version_macro("8.9.7") == 8907
    assert m.cudnn_release("9.1.0").version_macro("9.1.0") == 90100
    assert m.cudnn_release("9.17.0").cc_min == "7.5"
    assert 11 in m.cudnn_release("9.10.2").cuda_majors
    assert 13 in m.cudnn_release("9.12.0.46").cuda_majors
    assert m.cudnn_release("9.1.0.70").driver_min(12) == "525.60.13"
    assert m.cudnn_release("9.12.0").min_cc(13) == "7.5"
    assert m.cudnn_release("7.6.5").header == "cudnn.h"


def test_incompatibilities_and_misc(m):
    assert m.incompatibility("triton-min-cc").value == "7.0"
    assert m.incompatibility("tf-native-windows-gpu-last").value == "2.10"
    assert m.incompatibility("no-such-key") is None
    assert m.newest_known("torch") == "2.15.0"
    assert m.newest_known("tensorflow") == "2.21.0"
    assert m.newest_known("jax") == "0.12.0.1"
    assert m.newest_known("paddle") is None
    row = m.torch_variant("2.5.1", "cu121")
    text = m.row_source(row)
    assert row.source in text and row.verified in text
    assert re.search(r"pytorch\.toml:\d+$", row.origin)
    assert m.arch("10.7").unverified is True
    assert m.arch("8.0").unverified is False


# --------------------------------------------------------------------------- cache overlay


def _line_of(text: str, needle: str) -> int:
    for i, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return i
    raise AssertionError(needle)


def test_default_cache_dir_env(tmp_path):
    assert default_cache_dir({"ENVDOCTOR_CACHE_DIR": str(tmp_path)}) == tmp_path / "matrices"
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "envdoctor" / "matrices"
    assert default_cache_dir({"HOME": str(tmp_path)}) == tmp_path / ".cache" / "envdoctor" / "matrices"
    assert cache_file("gpus", tmp_path) == tmp_path / "gpus.toml"


def test_load_uses_env_cache_dir(tmp_path, monkeypatch):
    cache = tmp_path / "matrices"
    cache.mkdir()
    (cache / "incompatibilities.toml").write_text(
        'schema = "incompatibilities/v1"\ncollected = "2027-02-02"\n\n[[fact]]\nkey = "triton-min-cc"\nvalue = "7.5"\n'
        'summary = "s"\nsource = "test"\nverified = "test"\n', encoding="utf-8")
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path))
    m2 = load_matrices()
    assert m2.incompatibility("triton-min-cc").value == "7.5"


def test_valid_cache_overrides_and_extends(tmp_path, m):
    text = (
        'schema = "cuda_driver/v1"\n'
        'collected = "2027-01-01"\n\n'
        "[[release]]\n"
        'version = "12.4.1"\nlabel = "12.4 Update 1"\nga = false\ndriver_linux = "551.00.00"\n'
        'source = "test"\nverified = "test"\n\n'
        "[[release]]\n"
        'version = "13.6.0"\nlabel = "13.6 GA"\nga = true\ndriver_linux = "620.10"\n'
        'source = "test"\nverified = "UNVERIFIED: test"\n'
    )
    (tmp_path / "cuda_driver.toml").write_text(text, encoding="utf-8")
    m2 = load_matrices(cache_dir=tmp_path)
    assert m2.warnings == []
    assert m2.min_driver_for_cuda("12.4.1") == "551.00.00"
    assert m2.min_driver_for_cuda("12.4") == m.min_driver_for_cuda("12.4")  # other rows kept
    assert m2.cuda_release("13.6").driver_linux == "620.10"
    assert m2.max_cuda_for_driver("625") == "13.6"
    assert str(tmp_path / "cuda_driver.toml") in m2.sources["cuda_driver"]
    assert m2.table_collected["cuda_driver"] == "2027-01-01"
    assert m2.collected == m.collected  # the oldest table date
    header = _line_of(text, 'version = "13.6.0"') - 1
    assert m2.cuda_release("13.6").origin == f"{tmp_path / 'cuda_driver.toml'}:{header}"


@pytest.mark.parametrize(
    "content,needle",
    [
        ('schema = "gpus/v1"\ncollected = "2027-01-01"\n[[gpu]\nname = "x"\n', "[[gpu]"),  # bad TOML
        ('schema = "gpus/v1"\ncollected = "2027-01-01"\n\n[[gpu]]\nname = "Fake GPU"\ncc = 8.6\n'
         'source = "s"\nverified = "v"\n', "cc = 8.6"),  # schema violation: cc must be a string
        ('schema = "gpus/v1"\ncollected = "2027-01-01"\n\n[[gpu]]\nname = "Fake GPU"\n'
         'source = "s"\nverified = "v"\n', "[[gpu]]"),  # missing required field
        ('schema = "gpus/v2"\ncollected = "2027-01-01"\n', "schema ="),  # unknown schema version
    ],
)
def test_corrupt_cache_falls_back_to_bundled(tmp_path, m, content, needle):
    path = tmp_path / "gpus.toml"
    path.write_text(content, encoding="utf-8")
    m2 = load_matrices(cache_dir=tmp_path)
    line = _line_of(content, needle)
    assert any(w.startswith(f"{path}:{line}:") and "bundled" in w for w in m2.warnings), m2.warnings
    assert m2.sources["gpus"] == m.sources["gpus"]
    assert len(m2.gpus) == len(m.gpus)
    assert m2.cc_for_gpu_name("Fake GPU") is None


def test_cut_short_cache_falls_back(tmp_path, m):
    full = (bundled_dir() / "tensorflow.toml").read_text(encoding="utf-8")
    cut = full[: full.index('cuda = "11.2"') + 9]  # ends inside a string
    path = tmp_path / "tensorflow.toml"
    path.write_text(cut, encoding="utf-8")
    m2 = load_matrices(cache_dir=tmp_path)
    assert any(re.match(re.escape(str(path)) + r":\d+: invalid TOML", w) for w in m2.warnings), m2.warnings
    assert [r.version for r in m2.tensorflow_releases] == [r.version for r in m.tensorflow_releases]


def test_cache_with_one_bad_row_is_ignored_whole(tmp_path, m):
    text = (
        'schema = "tensorflow/v1"\ncollected = "2027-01-01"\n\n'
        '[[release]]\nversion = "2.22"\ntested = "2.22.0"\npython = ">=3.10,<3.15"\ncuda = "12.5"\ncudnn = "9.3"\n'
        'source = "s"\nverified = "v"\n\n'
        '[[release]]\nversion = "2.23"\ntested = "2.23.0"\npython = "three point ten"\ncuda = "12.5"\ncudnn = "9.3"\n'
        'source = "s"\nverified = "v"\n'
    )
    path = tmp_path / "tensorflow.toml"
    path.write_text(text, encoding="utf-8")
    m2 = load_matrices(cache_dir=tmp_path)
    assert any(w.startswith(f"{path}:{_line_of(text, 'three point ten')}:") for w in m2.warnings), m2.warnings
    assert m2.tf_release("2.22") is None  # the good row of a rejected cache file is not used either
    assert m2.tf_release("2.21") is not None


# --------------------------------------------------------------------------- broken bundled data


@pytest.fixture()
def bundled_copy(tmp_path):
    dst = tmp_path / "bundled"
    shutil.copytree(bundled_dir(), dst)
    return dst


def test_broken_bundled_row_is_skipped(bundled_copy, tmp_path, m):
    path = bundled_copy / "pytorch.toml"
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    # break the arch_list of the 2.5 cu121 variant
    start = next(i for i, l in enumerate(lines) if l == 'torch = "2.5"' and lines[i + 1] == 'name = "cu121"')
    j = next(i for i in range(start, len(lines)) if lines[i].startswith("arch_list = "))
    lines[j] = 'arch_list = "sm_50;sm_90"'
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    m2 = load_matrices(cache_dir=tmp_path / "none", bundled_dir=bundled_copy)
    assert len(m2.warnings) == 1
    assert m2.warnings[0].startswith(f"{path}:{j + 1}:") and "skipped" in m2.warnings[0]
    assert m2.torch_variant("2.5.1", "cu121") is None
    assert m2.torch_variant("2.5.1", "cu124") is not None  # the rest of the table is intact
    assert len(m2.gpus) == len(m.gpus)


def test_bundled_row_missing_field_and_orphan(bundled_copy, tmp_path):
    path = bundled_copy / "gpus.toml"
    text = path.read_text(encoding="utf-8").replace('name = "NVIDIA L40S"\ncc = "8.9"\n', 'name = "NVIDIA L40S"\n')
    path.write_text(text, encoding="utf-8")
    jpath = bundled_copy / "jax.toml"
    jpath.write_text(jpath.read_text(encoding="utf-8") + (
        '\n[[plugin]]\njax = "9.9.9"\nname = "cuda12"\npackage = "jax-cuda12-plugin"\npin = "==9.9.9"\ncuda_major = 12\n'
        'cudnn = ">=9.8"\ncudnn_min = "9.8"\ndriver_min = "525"\ncc_min = "5.2"\nsource = "s"\nverified = "v"\n'),
        encoding="utf-8")
    m2 = load_matrices(cache_dir=tmp_path / "none", bundled_dir=bundled_copy)
    line = _line_of(text, 'name = "NVIDIA L40S"') - 1  # the row's [[gpu]] header
    assert any(w.startswith(f"{path}:{line}:") and "'cc'" in w for w in m2.warnings), m2.warnings
    assert m2.cc_for_gpu_name("NVIDIA L40S") is None
    assert any(str(jpath) in w and "9.9.9" in w for w in m2.warnings)


def test_invalid_bundled_toml_never_raises(bundled_copy, tmp_path):
    (bundled_copy / "cudnn.toml").write_text("this is = = not toml\n", encoding="utf-8")
    (bundled_copy / "jax.toml").unlink()
    m2 = load_matrices(cache_dir=tmp_path / "none", bundled_dir=bundled_copy)
    assert any(w.startswith(f"{bundled_copy / 'cudnn.toml'}:1:") for w in m2.warnings)
    assert any("jax.toml" in w and "missing" in w for w in m2.warnings)
    assert m2.cudnn_release("9.1.0") is None
    assert m2.jax_release("0.4.30") is None
    assert m2.newest_known("jax") is None
    assert m2.tf_release("2.15") is not None


def test_empty_bundled_dir(tmp_path):
    m2 = load_matrices(cache_dir=tmp_path / "none", bundled_dir=tmp_path)
    assert len(m2.warnings) == len(TABLES)
    assert m2.collected == ""
    assert m2.cc_for_gpu_name("Tesla T4") is None
    assert m2.driver_runs_cuda("580.65.06", "12.4") is False
    assert m2.max_cuda_for_driver("580.65.06") is None
    assert m2.torch_default_variant("2.5.1") is None


def test_parse_cache_is_used_and_survives_corruption(tmp_path, monkeypatch):
    from envdoctor.knowledge import load as L

    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("ENVDOCTOR_NO_PARSE_CACHE", raising=False)
    text = 'schema = "x/v1"\ncollected = "2026-01-01"\n[[row]]\nversion = "1.0"\n'
    first = L.parse_toml_cached(text)
    files = list((tmp_path / "parsed").glob("*.json"))
    assert len(files) == 1 and first["row"][0]["version"] == "1.0"
    entry = json.loads(files[0].read_text())
    entry["data"]["schema"] = "tampered"
    files[0].write_text(json.dumps(entry))
    assert L.parse_toml_cached(text)["schema"] == "tampered"  # the cache is what is read back...
    files[0].write_text("{cut sho")
    warnings = []
    assert L.parse_toml_cached(text, warnings) == first  # ...and a corrupt one means parsing again
    assert len(warnings) == 1 and str(files[0]) in warnings[0] and "discarded" in warnings[0]
    assert L.parse_toml_cached(text + "\n# changed\n") == first  # other text, other key
    assert len(list((tmp_path / "parsed").glob("*.json"))) == 2
