"""Parsers for CUDA toolkit versions, cuDNN headers, ldconfig, library names and ROCm tools."""
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.version import Version

from envdoctor.parsers.cuda_version import (
    major_minor,
    parse_conda_meta_name,
    parse_cuda_h,
    parse_dist_info_name,
    parse_nvcc_version,
    parse_version_json,
    parse_version_txt,
    sdk_version,
)
from envdoctor.parsers.cudnn_header import parse_cudnn_header
from envdoctor.parsers.ldconfig import parse_ld_so_conf, parse_ldconfig_p
from envdoctor.parsers.libname import lib_version, more_precise, split_libname
from envdoctor.parsers.rocm import (
    parse_amd_smi_static,
    parse_rocm_info_version,
    parse_rocm_smi_productname,
    parse_rocm_version_h,
)

FIX = Path(__file__).parent / "fixtures"


def fx(area: str, name: str) -> str:
    return (FIX / area / name).read_text()


GARBAGE = [
    None, "", "   \n", "hello world", "\x00\x01\x02binary\xff", "{not json", "[1, 2, 3]", "null",
    "Cuda compilation tools, release", "#define CUDA_VERSION abc", "CUDA Version x.y", "{}" * 5000,
    "\ud800", 42,
]

# ---------------------------------------------------------------- nvcc --version

NVCC = {
    "nvcc_10.1.txt": ("10.1", "10.1.243"),
    "nvcc_10.2.txt": ("10.2", "10.2.89"),
    "nvcc_11.0.txt": ("11.0", "11.0.194"),
    "nvcc_11.1.txt": ("11.1", "11.1.105"),
    "nvcc_11.5.txt": ("11.5", "11.5.119"),
    "nvcc_12.5.txt": ("12.5", "12.5.82"),
    "nvcc_13.0_this_machine.txt": ("13.0", "13.0.88"),
}


@pytest.mark.parametrize("name", sorted(NVCC))
def test_nvcc_fixtures(name):
    parsed = parse_nvcc_version(fx("cuda", name))
    assert parsed is not None
    release, version = NVCC[name]
    assert (parsed.release, parsed.version) == (release, version)
    # the V... version always refines the release
    assert major_minor(parsed.version) == parsed.release


def test_every_nvcc_fixture_is_covered():
    on_disk = {p.name for p in (FIX / "cuda").glob("nvcc_*.txt")}
    assert on_disk == set(NVCC)


def test_nvcc_release_without_v_part():
    # a release line cut before the V... part still gives the release
    parsed = parse_nvcc_version("Cuda compilation tools, release 10.1")
    assert parsed is not None and parsed.version == "10.1"


def test_nvcc_versions_order_with_packaging():
    versions = [Version(parse_nvcc_version(fx("cuda", n)).version) for n in sorted(NVCC, key=lambda n: NVCC[n][1])]
    assert versions == sorted(versions)


# ---------------------------------------------------------------- version.json / version.txt / cuda.h


def test_version_json_fixture():
    vj = parse_version_json(fx("cuda", "version_12.8.2.json"))
    assert vj is not None
    assert vj.sdk == "12.8.2" and vj.sdk_raw == "12.8.2"
    assert vj.nvcc == "12.8.93"
    assert vj.cudart == "12.8.90"
    assert vj.components["libcublas"] == "12.8.5.5"


def test_version_json_date_stamped_sdk_is_not_a_patch_level():
    # CUDA 11.8 and 12.1 installers wrote "11.8.20220929" / "12.1.20230222" as the SDK version
    assert sdk_version("11.8.20220929") == "11.8"
    assert sdk_version("12.1.20230222") == "12.1"
    assert sdk_version("12.4.1") == "12.4.1"
    vj = parse_version_json('{"cuda": {"name": "CUDA SDK", "version": "11.8.20220929"}}')
    assert vj.sdk == "11.8" and vj.sdk_raw == "11.8.20220929"


def test_version_txt_fixture():
    assert parse_version_txt(fx("cuda", "version_11.0.txt")) == "11.0.207"


def test_cuda_h_fixture():
    assert parse_cuda_h(fx("cuda", "cuda_h_13.0_this_machine_excerpt.h")) == "13.0"


@pytest.mark.parametrize("number,expected", [(12040, "12.4"), (11080, "11.8"), (10020, "10.2"), (9020, "9.2"), (13000, "13.0")])
def test_cuda_h_encoding(number, expected):
    assert parse_cuda_h(f"#define CUDA_VERSION {number}\n") == expected


def test_cuda_h_ignores_cudart_version_and_comments():
    assert parse_cuda_h("#define CUDART_VERSION 12040\n") is None
    assert parse_cuda_h(" * \\defgroup CUDA_VERSION Version Management\n") is None


def test_dist_info_names():
    assert parse_dist_info_name("nvidia_cuda_nvcc-13.0.88.dist-info") == ("nvidia-cuda-nvcc", "13.0.88")
    assert parse_dist_info_name("nvidia_cuda_nvcc_cu12-12.8.93.dist-info") == ("nvidia-cuda-nvcc-cu12", "12.8.93")
    assert parse_dist_info_name("nvidia_cudnn_cu12-9.1.0.70.dist-info") == ("nvidia-cudnn-cu12", "9.1.0.70")
    assert parse_dist_info_name("torch-2.5.1+cu121.dist-info") == ("torch", "2.5.1")
    assert parse_dist_info_name("not-a-dist-info") is None


def test_dist_info_names_of_this_machine_toolkit():
    d = Path("/usr/local/cuda-13.0/dist-info")
    if not d.is_dir():
        pytest.skip("no wheel-assembled toolkit here")
    parsed = [parse_dist_info_name(p.name) for p in d.iterdir()]
    assert all(parsed), "every dist-info dir name parses"
    assert ("nvidia-cuda-nvcc", "13.0.88") in parsed


def test_conda_meta_names():
    assert parse_conda_meta_name("cuda-nvcc-12.4.131-0.json") == ("cuda-nvcc", "12.4.131")
    assert parse_conda_meta_name("cuda-version-12.4-h3060b56_3.json") == ("cuda-version", "12.4")
    assert parse_conda_meta_name("history") is None


@pytest.mark.parametrize("junk", GARBAGE)
def test_cuda_parsers_on_garbage(junk):
    assert parse_nvcc_version(junk) is None
    assert parse_version_txt(junk) is None
    assert parse_cuda_h(junk) is None
    assert parse_version_json(junk) is None
    assert parse_dist_info_name(junk) is None
    assert parse_conda_meta_name(junk) is None
    assert major_minor(junk) is None
    assert sdk_version(junk) is None


def test_version_json_wrong_shapes():
    assert parse_version_json('{"cuda": "12.4"}') is None
    assert parse_version_json('{"cuda": {"version": 12.4}}') is None
    assert parse_version_json('{"cuda": {"version": "twelve"}}') is None
    assert parse_version_json("[" * 100000) is None  # deep nesting is not a crash


# ---------------------------------------------------------------- cuDNN headers


@pytest.mark.parametrize(
    "name,expected",
    [("cudnn_version_9.6.0.h", "9.6.0"), ("cudnn_version_8.2.1.h", "8.2.1"), ("cudnn_7.2.1_excerpt.h", "7.2.1")],
)
def test_cudnn_header_fixtures(name, expected):
    assert parse_cudnn_header(fx("cudnn", name)) == expected


def test_cudnn_version_never_decoded_from_cudnn_version_number():
    # cuDNN 9.1.0: CUDNN_VERSION 90100 would read as "90.1" with the cuDNN 8 formula
    text = "#define CUDNN_MAJOR 9\n#define CUDNN_MINOR 1\n#define CUDNN_PATCHLEVEL 0\n#define CUDNN_VERSION 90100\n"
    assert parse_cudnn_header(text) == "9.1.0"
    assert parse_cudnn_header("#define CUDNN_VERSION 8902\n") is None


def test_cudnn8_cudnn_h_without_macros_is_none():
    assert parse_cudnn_header('#include "cudnn_version.h"\n#include "cudnn_ops_infer.h"\n') is None


@pytest.mark.parametrize("junk", GARBAGE)
def test_cudnn_header_garbage(junk):
    assert parse_cudnn_header(junk) is None


# ---------------------------------------------------------------- ldconfig


def test_ldconfig_this_machine_fixture():
    entries = parse_ldconfig_p(fx("ldconfig", "ldconfig_p_this_machine_excerpt.txt"))
    names = {e.soname: e for e in entries}
    assert "libcudart.so.13" in names
    cudart = names["libcudart.so.13"]
    assert cudart.path == "/usr/local/cuda-13.0/lib/libcudart.so.13"
    assert cudart.flags == "libc6,x86-64" and cudart.arch == "x86-64"
    # the header line is not an entry
    assert all(e.path.startswith("/") for e in entries)
    assert len(entries) == fx("ldconfig", "ldconfig_p_this_machine_excerpt.txt").count("=>")


def test_ldconfig_docker_fixture():
    entries = parse_ldconfig_p(fx("ldconfig", "ldconfig_p_cudnn4_nvidia_docker_53.txt"))
    assert [(e.soname, e.path) for e in entries] == [("libcudnn.so.4", "/usr/lib/x86_64-linux-gnu/libcudnn.so.4")]


def test_ldconfig_os_abi_and_32bit_flags():
    text = ("\tlibc.so.6 (libc6,x86-64, OS ABI: Linux 3.2.0) => /lib/x86_64-linux-gnu/libc.so.6\n"
            "\tlibc.so.6 (libc6) => /lib/i386-linux-gnu/libc.so.6\n")
    entries = parse_ldconfig_p(text)
    assert [e.arch for e in entries] == ["x86-64", ""]


@pytest.mark.parametrize("junk", GARBAGE)
def test_ldconfig_garbage(junk):
    assert parse_ldconfig_p(junk) == []
    assert parse_ld_so_conf(junk) == ([], [])


def test_ld_so_conf_fixtures():
    dirs, includes = parse_ld_so_conf(fx("ldconfig", "ld.so.conf_this_machine"))
    assert dirs == [] and includes == ["/etc/ld.so.conf.d/*.conf"]
    dirs, _ = parse_ld_so_conf(fx("ldconfig", "ld.so.conf.d_x86_64-linux-gnu_this_machine.conf"))
    assert "/usr/lib/x86_64-linux-gnu" in dirs and not any(d.startswith("#") for d in dirs)
    dirs, _ = parse_ld_so_conf(fx("ldconfig", "ld.so.conf.d_zz-cuda-13-0_this_machine.conf"))
    assert dirs == ["/usr/local/cuda-13.0/lib"]


# ---------------------------------------------------------------- library names


@pytest.mark.parametrize(
    "fname,expected",
    [
        ("libcudart.so.12.4.127", ("libcudart", "12.4.127")),
        ("libcudnn.so.9.1.0", ("libcudnn", "9.1.0")),
        ("libcudnn.so.8", ("libcudnn", "8")),
        ("libcudart.so", ("libcudart", None)),
        ("/usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05", ("libcuda", "535.104.05")),
        ("libcudnn_ops.so.9", ("libcudnn_ops", "9")),
        ("libnvrtc-builtins.so.12.4", ("libnvrtc-builtins", "12.4")),
    ],
)
def test_libname(fname, expected):
    assert split_libname(fname) == expected
    assert lib_version(fname) == expected[1]


@pytest.mark.parametrize("junk", GARBAGE + ["libcudart.a", "cudart.so.12", "libcudart.so.12.bak", "libcudart.so.x"])
def test_libname_garbage(junk):
    assert split_libname(junk) is None
    assert lib_version(junk) is None


def test_more_precise():
    assert more_precise("12", "12.4.127") == "12.4.127"
    assert more_precise("12.4.127", "12") == "12.4.127"
    assert more_precise(None, "8") == "8"
    assert more_precise("9.1", None) == "9.1"


# ---------------------------------------------------------------- ROCm


def test_rocm_smi_text_fixture():
    assert parse_rocm_smi_productname(fx("rocm", "rocm_smi_showproductname_fiji.txt")) == ["Radeon R9 FURY X"]


def test_rocm_smi_csv_fixture():
    gpus = parse_rocm_smi_productname(fx("rocm", "rocm_smi_showproductname_mi100_csv.txt"))
    assert gpus == ["Arcturus GL-XL [AMD Instinct MI100]"] * 2  # the model is only a PCI id


def test_rocm_smi_json_fixture():
    gpus = parse_rocm_smi_productname(fx("rocm", "rocm_smi_showproductname_mi250x.json"))
    assert gpus == ["AMD INSTINCT MI200 (MCM) OAM LC MBA HPE C2"]


def test_rocm_smi_rocm4_pci_ids_only():
    gpus = parse_rocm_smi_productname(fx("rocm", "rocm_smi_showproductname_rocm4_mi100.txt"))
    assert len(gpus) == 1 and gpus[0].startswith("0x")


def test_amd_smi_static_fixture():
    assert parse_amd_smi_static(fx("rocm", "amd_smi_static_mi350x.txt")) == ["AMD Instinct MI350X"]


def test_rocm_version_files():
    assert parse_rocm_info_version("6.1.0-82\n") == "6.1.0"
    assert parse_rocm_info_version("5.7.1\n") == "5.7.1"
    h = "#define ROCM_VERSION_MAJOR 6\n#define ROCM_VERSION_MINOR 1\n#define ROCM_VERSION_PATCH 2\n"
    assert parse_rocm_version_h(h) == "6.1.2"


@pytest.mark.parametrize("junk", GARBAGE)
def test_rocm_garbage(junk):
    assert parse_rocm_smi_productname(junk) == []
    assert parse_amd_smi_static(junk) == []
    assert parse_rocm_info_version(junk) is None
    assert parse_rocm_version_h(junk) is None


@settings(max_examples=400, deadline=None)
@given(st.lists(st.text(alphabet="0123456789", min_size=1, max_size=6), min_size=1, max_size=5),
       st.sampled_from(["", " ", "\n", "x", "+cu121", ".", "-1"]))
def test_major_minor_is_the_series_facts_versions_gives(parts, tail):
    """cuda_version.major_minor computes the series itself (no packaging at the probes' import):
    the same answer as envdoctor.facts.versions.major_minor for every version it accepts, None otherwise."""
    from envdoctor.facts import versions

    text = ".".join(parts) + tail
    got = major_minor(text)
    if 2 <= len(parts) <= 4 and tail.strip() == "":
        assert got == versions.major_minor(text.strip())
    else:
        assert got is None


def test_major_minor_on_real_versions():
    from envdoctor.facts import versions

    for text in ("13.0.88", "12.4", "11.8.20220929", "12.04.1", "013.0", "9.2.148.1"):
        assert major_minor(text) == versions.major_minor(text) and major_minor(text) is not None


def test_ldconfig_entry_init_is_the_generic_one():
    """LdconfigEntry writes its own __init__: it takes what the generic records __init__ takes and makes
    an equal entry (same fields, repr, equality) for every row of real `ldconfig -p` output."""
    from dataclasses import asdict, fields

    from envdoctor.parsers.ldconfig import LdconfigEntry
    from envdoctor.records import dataclass

    @dataclass
    class Generic:
        soname: str
        flags: str
        path: str

    rows = [e for name in ("ldconfig_p_this_machine_excerpt.txt", "ldconfig_p_cudnn4_nvidia_docker_53.txt")
            for e in parse_ldconfig_p((FIX / "ldconfig" / name).read_text())]
    assert len(rows) > 10
    for e in rows:
        g = Generic(e.soname, e.flags, e.path)
        assert asdict(e) == asdict(g) and repr(e) == repr(g).replace(Generic.__qualname__, "LdconfigEntry")
        assert LdconfigEntry(path=e.path, soname=e.soname, flags=e.flags) == e
    assert [f.name for f in fields(LdconfigEntry)] == ["soname", "flags", "path"]
    with pytest.raises(TypeError):
        LdconfigEntry("libx.so", "libc6")  # type: ignore[call-arg]
