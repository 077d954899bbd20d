"""Every parser keeps its contract on mutated real fixtures (envdoctor/parsers/__init__.py).

Each parser gets real inputs (tests/fixtures/**, or the real names and labels its unit tests
use) mutated by hypothesis: characters inserted, deleted, replaced; digit runs swapped for
`inf`, `nan`, `²`, Arabic-Indic digits, 5,000-digit numbers; truncation; duplicated lines.
The parser must return a value of its documented type (versions made of ASCII digits and
dots, bounded integers) or raise ParseError; nothing else.

Bounded: PROPERTY_EXAMPLES (default 60) inputs per parser. benchmarks/fuzz_parsers.py runs
the same specs much longer and prints the count of inputs.
"""
from __future__ import annotations

import dataclasses
import os
import re
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, List, NamedTuple, Sequence

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from envdoctor.parsers import MAX_DIGITS, ParseError, cuda_version, cudnn_header, jax_build  # noqa: E402
from envdoctor.parsers import ldconfig, libname, nvidia_smi, proc_driver, rocm, tf_build_info  # noqa: E402
from envdoctor.parsers import torch_version  # noqa: E402
from envdoctor.probes.nvidia import QUERY_FIELDS, QUERY_FIELDS_NO_CC  # noqa: E402

FIX = Path(__file__).parent / "fixtures"
EXAMPLES = int(os.environ.get("PROPERTY_EXAMPLES", "60"))

# What a fuzzer puts where a number was.
SPECIALS = ["inf", "-inf", "nan", "NaN", "1e999", "²", "¹²", "١٢١", "١", "٣.٤", "\u0663", "9" * 5000, "1" + "0" * 4400,
            "-1", "+7", "0x1F", "1_000", "", " ", "\x00", "\ufeff", "\u00a0", "𝟙𝟚", "١٢.١"]
# What a fuzzer inserts anywhere.
INSERTS = SPECIALS + [",", ".", ":", "|", "\n", "\t", "=", "'", '"', "[", "]", "{", "}", "(", ")", "#define", "+", "-",
                      "MiB", "N/A", "GPU-", "cu", "cuda", "rocm", "\\", "\r\n"]

_DOTTED_RE = re.compile(rf"[0-9]{{1,{MAX_DIGITS}}}(?:\.[0-9]{{1,{MAX_DIGITS}}})*")


def fixtures(*globs: str) -> List[str]:
    out = []
    for g in globs:
        out.extend(p.read_text(encoding="utf-8", errors="replace") for p in sorted(FIX.glob(g)) if p.is_file())
    assert out, f"no fixture matches {globs}"
    return out


def _mutate(draw, text: str) -> str:
    for _ in range(draw(st.integers(1, 5))):
        op = draw(st.sampled_from(["insert", "delete", "replace", "number", "numbers", "truncate", "dupline"]))
        n = len(text)
        if op == "insert":
            i = draw(st.integers(0, n))
            text = text[:i] + draw(st.sampled_from(INSERTS) | st.text(max_size=3)) + text[i:]
        elif op == "delete" and n:
            i = draw(st.integers(0, n - 1))
            text = text[:i] + text[i + draw(st.integers(1, 8)):]
        elif op == "replace" and n:
            i = draw(st.integers(0, n - 1))
            text = text[:i] + draw(st.characters()) + text[i + 1:]
        elif op in ("number", "numbers"):
            runs = list(re.finditer(r"[0-9]+", text))
            if not runs:
                continue
            chosen = runs if op == "numbers" else [draw(st.sampled_from(runs))]
            token = draw(st.sampled_from(SPECIALS))
            for m in reversed(chosen):
                text = text[:m.start()] + token + text[m.end():]
        elif op == "truncate" and n:
            text = text[:draw(st.integers(0, n - 1))]
        elif op == "dupline":
            lines = text.splitlines(keepends=True)
            if lines:
                i = draw(st.integers(0, len(lines) - 1))
                lines[i:i] = [lines[i]] * draw(st.integers(1, 3))
                text = "".join(lines)
    return text


@st.composite
def mutated(draw, seeds: Sequence[str]) -> str:
    return _mutate(draw, draw(st.sampled_from(list(seeds))))


# -- what "a value of the documented type" means -----------------------------------------


def dotted(value: Any) -> bool:
    """None, or a version of ASCII digits and dots with bounded parts."""
    return value is None or (isinstance(value, str) and bool(_DOTTED_RE.fullmatch(value)))


def bounded_int(value: Any) -> bool:
    return value is None or (isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 10 ** MAX_DIGITS)


def opt_str(value: Any) -> bool:
    return value is None or isinstance(value, str)


def opt(cls):
    return lambda v: v is None or isinstance(v, cls)


def str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _fields_ok(obj: Any, checks: Dict[str, Callable[[Any], bool]]) -> bool:
    for f in dataclasses.fields(obj):
        check = checks.get(f.name, opt_str)
        assert check(getattr(obj, f.name)), f"{type(obj).__name__}.{f.name} = {getattr(obj, f.name)!r:.200}"
    return True


def dataclass_of(cls, **checks):
    return lambda v: v is None or (isinstance(v, cls) and _fields_ok(v, checks))


def build_tuple(kinds: Sequence[str], n: int):
    def check(v: Any) -> bool:
        return isinstance(v, tuple) and len(v) == n and v[0] in kinds and all(dotted(x) for x in v[1:])
    return check


def _version_json(v):
    if v is None:
        return True
    assert isinstance(v, cuda_version.VersionJson) and dotted(v.sdk) and dotted(v.sdk_raw)
    return all(isinstance(k, str) and dotted(x) for k, x in v.components.items())


def _ldconfig(v):
    return isinstance(v, list) and all(isinstance(e, ldconfig.LdconfigEntry) and isinstance(e.arch, str)
                                       and all(isinstance(x, str) for x in (e.soname, e.flags, e.path)) for e in v)


def _torch(v):
    if v is None:
        return True
    _fields_ok(v, {"debug": opt(bool)})
    return build_tuple(("cuda", "rocm", "cpu", "unknown"), 3)(torch_version.torch_build(v))


def _tf(v):
    if v is None:
        return True
    assert isinstance(v, tf_build_info.TfBuildInfo)
    _fields_ok(v, {"is_cuda_build": opt(bool), "is_rocm_build": opt(bool), "is_tensorrt_build": opt(bool),
                   "cuda_version": dotted, "cudnn_version": dotted, "compute_capabilities": lambda x: x is None or str_list(x),
                   "raw": opt(dict)})
    return v.build in ("cuda", "rocm", "cpu", "unknown")


def _query_csv(v):
    return isinstance(v, list) and all(isinstance(r, dict) and all(opt_str(x) for x in r.values()) for r in v)


SMI_GPU_ROW = dataclass_of(nvidia_smi.SmiGpuRow, index=bounded_int, memory_total_mib=bounded_int,
                           name_truncated=opt(bool), name=opt(str), bus_id=opt(str))


def _banner(v):
    if v is None:
        return True
    _fields_ok(v, {"driver_version": dotted, "cuda_version": dotted, "smi_version": dotted, "gpus": opt(list)})
    return all(SMI_GPU_ROW(g) and g is not None for g in v.gpus)


# -- real inputs of the parsers that take names and labels, not files -----------------------

DIST_INFO_NAMES = ["nvidia_cuda_nvcc-13.0.88.dist-info", "nvidia_cudnn_cu12-9.1.0.70.dist-info", "torch-2.5.1+cu121.dist-info"]
CONDA_META_NAMES = ["cuda-nvcc-12.4.131-0.json", "cuda-cudart-12.1.105-0.json"]
VERSIONS = ["11.8.20220929", "12.4.1", "12.8.93", "13.0", "565.57.01"]
TORCH_LABELS = ["cu121", "cu118", "cu92", "cu130", "cpu", "cpu.cxx11.abi", "rocm6.0", "rocm5.4.2"]
JAXLIB_VERSIONS = ["0.4.23+cuda12.cudnn89", "0.3.25+cuda11.cudnn805", "0.1.75+cuda111", "0.1.69+cuda92", "0.4.30", "0.4.19+rocm57"]
JAX_PLUGINS = ["jax-cuda12-plugin", "jax-cuda12-pjrt", "jax-cuda13-plugin", "jax-rocm60-plugin", "jax-rocm60-pjrt"]
LIBNAMES = ["libcudart.so.12.4.127", "libcudnn.so.8", "libcudart.so", "libnvrtc-builtins.so.12.4",
            "/usr/local/cuda/lib64/libcudart.so.12"]
WIN_VERSIONS = ["64_112", "64_101", "64_90", "64_8", "12.1", "8.9"]
ROCM_INFO = ["6.1.0-82\n", "5.7.1\n"]
ROCM_H = ["#define ROCM_VERSION_MAJOR 6\n#define ROCM_VERSION_MINOR 1\n#define ROCM_VERSION_PATCH 2\n"]


class Spec(NamedTuple):
    name: str
    parse: Callable[[str], Any]
    seeds: Callable[[], List[str]]
    valid: Callable[[Any], bool]


def _jax_build(text: str):
    version, _, rest = text.partition("\n")
    return jax_build.jax_build(version, rest.splitlines())


SPECS = [
    Spec("cuda.parse_version_json", cuda_version.parse_version_json, lambda: fixtures("cuda/*.json"), _version_json),
    Spec("cuda.parse_version_txt", cuda_version.parse_version_txt, lambda: fixtures("cuda/version_*.txt"), dotted),
    Spec("cuda.parse_cuda_h", cuda_version.parse_cuda_h, lambda: fixtures("cuda/cuda_h*"), dotted),
    Spec("cuda.parse_nvcc_version", cuda_version.parse_nvcc_version, lambda: fixtures("cuda/nvcc_*"),
         dataclass_of(cuda_version.NvccVersion, release=dotted, version=dotted)),
    Spec("cuda.parse_dist_info_name", cuda_version.parse_dist_info_name, lambda: DIST_INFO_NAMES,
         lambda v: v is None or (isinstance(v, tuple) and isinstance(v[0], str) and dotted(v[1]))),
    Spec("cuda.parse_conda_meta_name", cuda_version.parse_conda_meta_name, lambda: CONDA_META_NAMES,
         lambda v: v is None or (isinstance(v, tuple) and isinstance(v[0], str) and dotted(v[1]))),
    Spec("cuda.sdk_version", cuda_version.sdk_version, lambda: VERSIONS, dotted),
    Spec("cuda.major_minor", cuda_version.major_minor, lambda: VERSIONS, dotted),
    Spec("cudnn.parse_cudnn_header", cudnn_header.parse_cudnn_header, lambda: fixtures("cudnn/*.h"), dotted),
    Spec("jax.parse_jax_version_file", jax_build.parse_jax_version_file, lambda: fixtures("frameworks/jaxlib_version_*"),
         dataclass_of(jax_build.JaxVersionInfo)),
    Spec("jax.jaxlib_label_build", jax_build.jaxlib_label_build, lambda: JAXLIB_VERSIONS,
         build_tuple(("cuda", "rocm", "unknown"), 4)),
    Spec("jax.plugin_dist", jax_build.plugin_dist, lambda: JAX_PLUGINS,
         lambda v: v is None or (v[0] in ("cuda", "rocm") and dotted(v[1]) and v[2] in ("plugin", "pjrt"))),
    Spec("jax.plugin_module_paths", jax_build.plugin_module_paths, lambda: JAX_PLUGINS,
         lambda v: isinstance(v, tuple) and all(isinstance(p, str) for p in v)),
    Spec("jax.jax_build", _jax_build, lambda: [v + "\n" + "\n".join(JAX_PLUGINS[:k]) for v in JAXLIB_VERSIONS for k in (0, 1, 3, 5)],
         build_tuple(("cuda", "rocm", "cpu", "unknown"), 4)),
    Spec("ldconfig.parse_ldconfig_p", ldconfig.parse_ldconfig_p, lambda: fixtures("ldconfig/ldconfig_p*"), _ldconfig),
    Spec("ldconfig.parse_ld_so_conf", ldconfig.parse_ld_so_conf, lambda: fixtures("ldconfig/ld.so.conf*"),
         lambda v: isinstance(v, tuple) and len(v) == 2 and str_list(v[0]) and str_list(v[1])),
    Spec("libname.split_libname", libname.split_libname, lambda: LIBNAMES,
         lambda v: v is None or (isinstance(v, tuple) and isinstance(v[0], str) and dotted(v[1]))),
    Spec("libname.more_precise", lambda t: libname.more_precise(*(t.split("|", 1) + [""])[:2]),
         lambda: ["12|12.4.127", "9.1|", "|8"], opt_str),
    Spec("smi.parse_banner", nvidia_smi.parse_banner, lambda: fixtures("nvidia/smi_*", "machine/smi_*"), _banner),
    Spec("smi.detect_failure", nvidia_smi.detect_failure, lambda: fixtures("nvidia/fail_*", "machine/smi_*"),
         dataclass_of(nvidia_smi.SmiFailure, lines=str_list, nvml_library_version=dotted, kind=opt(str))),
    Spec("smi.parse_query_csv", lambda t: nvidia_smi.parse_query_csv(t, QUERY_FIELDS), lambda: fixtures("nvidia/query_*"),
         _query_csv),
    Spec("smi.parse_query_gpus", lambda t: nvidia_smi.parse_query_gpus(t, QUERY_FIELDS) + nvidia_smi.parse_query_gpus(t, QUERY_FIELDS_NO_CC),
         lambda: fixtures("nvidia/query_*"),
         lambda v: isinstance(v, list) and all(
             v_ is not None and dataclass_of(nvidia_smi.SmiQueryGpu, index=bounded_int, memory_total_mib=bounded_int,
                                             compute_cap=dotted, driver_version=dotted)(v_) for v_ in v)),
    Spec("smi.normalize_bus_id", nvidia_smi.normalize_bus_id, lambda: ["00000000:17:00.0", "0000:17:00.0", "17:00.0"],
         lambda v: isinstance(v, str)),
    Spec("proc.parse_proc_version", proc_driver.parse_proc_version, lambda: fixtures("nvidia/proc_version_*", "machine/proc_version_*"),
         dataclass_of(proc_driver.ProcDriverVersion, version=dotted, gcc=dotted)),
    Spec("proc.parse_gpu_information", proc_driver.parse_gpu_information, lambda: fixtures("nvidia/proc_gpu_information_*"),
         dataclass_of(proc_driver.ProcGpuInfo, device_minor=bounded_int, excluded=opt(bool), fields=opt(dict))),
    Spec("proc.parse_module_version", proc_driver.parse_module_version, lambda: ["565.57.01\n", "384.98\n"], dotted),
    Spec("rocm.parse_rocm_info_version", rocm.parse_rocm_info_version, lambda: ROCM_INFO, dotted),
    Spec("rocm.parse_rocm_version_h", rocm.parse_rocm_version_h, lambda: ROCM_H, dotted),
    Spec("rocm.parse_rocm_smi_productname", rocm.parse_rocm_smi_productname, lambda: fixtures("rocm/rocm_smi_*"), str_list),
    Spec("rocm.parse_amd_smi_static", rocm.parse_amd_smi_static, lambda: fixtures("rocm/amd_smi_*"), str_list),
    Spec("tf.parse_build_info", tf_build_info.parse_build_info, lambda: fixtures("frameworks/tf_*"), _tf),
    Spec("tf.normalize_cuda_version", tf_build_info.normalize_cuda_version, lambda: WIN_VERSIONS, dotted),
    Spec("tf.normalize_cudnn_version", tf_build_info.normalize_cudnn_version, lambda: WIN_VERSIONS, dotted),
    Spec("torch.parse_torch_version", torch_version.parse_torch_version, lambda: fixtures("frameworks/torch_version_*"), _torch),
    Spec("torch.parse_simple_version_py", torch_version.parse_simple_version_py,
         lambda: fixtures("frameworks/torchvision_version_*", "frameworks/onnxruntime_*"), opt_str),
    Spec("torch.cuda_from_cu_tag", torch_version.cuda_from_cu_tag, lambda: TORCH_LABELS, dotted),
    Spec("torch.build_from_label", torch_version.build_from_label, lambda: TORCH_LABELS,
         build_tuple(("cuda", "rocm", "cpu", "unknown"), 3)),
]


def check_once(spec: Spec, text: str) -> None:
    """Run one input through one parser; an AssertionError, a warning or any exception but ParseError fails."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a damaged version.py must not print SyntaxWarnings either
            value = spec.parse(text)
    except ParseError as exc:
        assert str(exc) and "\n" not in str(exc)
        return
    assert spec.valid(value), f"{spec.name} returned {value!r:.300}"


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_parser_keeps_its_contract_on_mutated_fixtures(spec: Spec):
    seeds = spec.seeds()
    for seed in seeds:  # the unmutated fixtures first
        check_once(spec, seed)

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(mutated(seeds))
    def prop(text):
        check_once(spec, text)

    prop()


# -- the reported repros, each a fixed input ------------------------------------------------

def test_query_gpus_with_inf_memory_keeps_the_gpu_and_drops_the_field():
    text = "0, NVIDIA A10G, 8.6, inf, 00000000:00:1E.0, GPU-3b1c5f6e-5a0e-9c4d-8b7e-1f2a3b4c5d6e, 550.54.15\n"
    [gpu] = nvidia_smi.parse_query_gpus(text, QUERY_FIELDS)
    assert gpu.name == "NVIDIA A10G" and gpu.compute_cap == "8.6" and gpu.memory_total_mib is None


@pytest.mark.parametrize("bad", ["inf", "nan", "1e999", "²", "١٢٣", "9" * 5000])
def test_query_gpus_bad_numbers(bad):
    text = f"{bad}, NVIDIA A10G, {bad}, {bad}, 00000000:00:1E.0, GPU-x, {bad}\n"
    [gpu] = nvidia_smi.parse_query_gpus(text, QUERY_FIELDS)
    assert (gpu.index, gpu.compute_cap, gpu.memory_total_mib, gpu.driver_version) == (None, None, None, None)


def test_cu_tag_with_arabic_indic_digits_is_not_a_cuda_version():
    assert torch_version.cuda_from_cu_tag("cu١٢١") is None
    assert torch_version.build_from_label("cu١٢١") == ("unknown", None, None)
    assert torch_version.cuda_from_cu_tag("cu121") == "12.1"


@pytest.mark.parametrize("digits", ["9" * 5000, "²", "١٢"])
def test_huge_or_unicode_numbers_in_headers_and_labels(digits):
    assert cudnn_header.parse_cudnn_header(f"#define CUDNN_MAJOR {digits}\n#define CUDNN_MINOR 1\n") is None
    assert rocm.parse_rocm_version_h(f"#define ROCM_VERSION_MAJOR {digits}\n#define ROCM_VERSION_MINOR 1\n") is None
    assert jax_build.jaxlib_label_build(f"0.1.75+cuda{digits}") == ("unknown", None, None, None)
    assert jax_build.jax_build("0.4.30", [f"jax-cuda{digits}-plugin"]) == ("cpu", None, None, None)
    assert tf_build_info.normalize_cuda_version(f"64_{digits}") is None
    assert proc_driver.parse_gpu_information(f"Model: NVIDIA L4\nDevice Minor: {digits}\n").device_minor is None


def test_too_large_input_is_a_parse_error():
    from envdoctor.parsers import MAX_INPUT_CHARS
    with pytest.raises(ParseError, match="too large"):
        ldconfig.parse_ldconfig_p("x" * (MAX_INPUT_CHARS + 1))
