"""The target Python environment and the GPU frameworks installed in it.

The target is `--python PATH` if given, else the active virtualenv ($VIRTUAL_ENV)
or conda env ($CONDA_PREFIX), else the interpreter running envdoctor.

Nothing is imported, here or there: envdoctor runs `_pyenv_helper.py` (stdlib only)
in the target interpreter with `python -c`, and the helper walks sys.path, reads
dist-info / egg-info headers and the version files the frameworks ship
(torch/version.py, tensorflow/python/platform/build_info.py, jaxlib/version.py ...)
as text. This module turns that JSON into PythonEnv and Framework entries with the
pure parsers of envdoctor.parsers.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

from envdoctor import cache
from envdoctor.errors import BadInput
from envdoctor.parsers import jax_build, tf_build_info, torch_version
from envdoctor.parsers import assignments
from envdoctor.probes import _pyenv_helper as helper
from envdoctor.probes.base import ProbeContext, ProbeSkipped, ProbeUnknown
from envdoctor.parsers.libname import split_libname
from envdoctor.snapshot import Evidence, Framework, Library, PythonEnv, Snapshot
from envdoctor.subproc import Runner
from envdoctor.lazyre import lazy_re

HELPER_PATH = Path(__file__).with_name("_pyenv_helper.py")
MARKER = helper.MARKER.strip()
EXCERPT_MAX = 600

_TF_FRAMEWORK_DISTS = lazy_re(r"^(tensorflow(-(cpu|gpu|intel|macos|rocm|aarch64))?|tf-nightly(-(cpu|gpu))?)$")


# -- finding and running the target interpreter ------------------------------------

def _interpreter_in(prefix: str) -> Optional[str]:
    """bin/python (or Scripts/python.exe) of an environment prefix, if it is there."""
    for rel in (("bin", "python"), ("bin", "python3"), ("Scripts", "python.exe"), ("python.exe",)):
        candidate = os.path.join(prefix, *rel)
        if os.path.isfile(candidate):
            return candidate
    return None


def resolve_target(ctx: ProbeContext) -> Tuple[str, bool, str]:
    """(interpreter, explicit, how it was chosen)."""
    if ctx.target_python:
        return ctx.target_python, True, "--python"
    found, how = default_interpreter(ctx.env)
    return found, False, how


def default_interpreter(env: Mapping[str, str]) -> Tuple[str, str]:
    """(interpreter, how it was chosen) when none is named: the active environment's ($VIRTUAL_ENV, then
    $CONDA_PREFIX), else this interpreter."""
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        prefix = env.get(var)
        if prefix:
            found = _interpreter_in(prefix)
            if found:
                return found, f"env:{var}"
    return sys.executable, "envdoctor's own interpreter"


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line[:limit]


def _helper_env(env: Any) -> Dict[str, str]:
    out = {str(k): str(v) for k, v in dict(env).items()}
    out["PYTHONDONTWRITEBYTECODE"] = "1"
    out.pop("PYTHONINSPECT", None)  # would keep the interpreter waiting at a prompt
    out.pop("PYTHONSTARTUP", None)
    return out


# What `python -c` runs: the helper imported from its folder, not its source given whole. An interpreter of
# envdoctor's own version then loads the helper's .pyc (written when envdoctor imported it, or by pip) instead of
# compiling 14 KB of source at every check (~3.5 ms of the target's CPU); another version compiles it, as
# -c did (PYTHONDONTWRITEBYTECODE: it writes nothing). sys.path stays the interpreter's own: '' goes first (as the
# helper does itself under -c), and the folder goes again before the helper reads sys.path.
_BOOTSTRAP = """import sys
sys.path[:] = [p for p in sys.path if p not in ("", ".")]
sys.path.insert(0, %s)
try:
    import _pyenv_helper
finally:
    del sys.path[0]
_pyenv_helper.main(%s)
"""


def _helper_command(python: str, runner: Runner, timeout: Optional[float]) -> Tuple[List[str], float, Dict[str, str]]:
    # --timeout bounds every external command as a whole, the helper included (it was twice that, unasked)
    limit = runner.timeout if timeout is None else timeout
    env = _helper_env(runner.env)
    witness = "True" if cache.enabled(runner.env) else ""
    return [python, "-c", _BOOTSTRAP % (ascii(str(HELPER_PATH.parent)), witness)], limit, env


# -- the helper's answer, kept ---------------------------------------------------------
# The walk's answer depends on the interpreter as invoked (two venvs link to one base interpreter and are two
# environments: the folder the link lies in, its pyvenv.cfg and site folders decide sys.prefix and sys.path), its
# files and the libraries it loads, its environment and working folder, and the folders and files the walk looked
# at: the helper lists those as its witness (main(witness=True)), and the answer is given again, the interpreter not
# run, while every one of them is unchanged (envdoctor.cache). Only an interpreter that answers as itself is
# remembered (sys.executable is the file that was run): a wrapper script or a shim (pyenv's picks a version by the
# folder) may run another one next time.

def _cache_slot(python: str, runner: Runner, argv: List[str], env: Dict[str, str]):
    """(store, key, the interpreter as invoked, its resolved path) for the helper's answer, or None when it is not
    kept."""
    if not cache.enabled(runner.env):
        return None
    exe = runner.which(python)
    if exe is None:
        return None
    invoked = os.path.abspath(exe)
    real = os.path.realpath(exe)
    key = cache.make_key("pyenv", [python, invoked, real, *argv[1:]], env)
    return cache.store("pyenv", runner.env), key, invoked, real


def _cached_answer(slot, copy: bool = True) -> Optional[dict]:
    """The kept answer (a copy unless not `copy`: the snapshot's builder changes what it is given), or None."""
    if slot is None:
        return None
    hit = slot[0].get(slot[1])
    if not isinstance(hit, dict) or hit.get("helper") != 1 or not isinstance(hit.get("dists"), list) \
            or helper_answer_problem(hit):
        return None  # none, or a damaged entry: the helper runs
    return json.loads(json.dumps(hit)) if copy else hit


def _remember(slot, data: dict) -> None:
    witness = data.pop("witness", None)
    if slot is None or not isinstance(witness, list) or len(witness) >= helper.MAX_WITNESS:
        return
    store, key, invoked, real = slot
    executable = data.get("executable")
    if not isinstance(executable, str) or os.path.realpath(executable) != real:
        return  # a wrapper or a shim answered for another interpreter
    try:
        pairs: list = [(str(p), sig) for p, sig in witness]
    except (TypeError, ValueError):
        return
    here = os.path.dirname(invoked)
    own = [(real, cache.signature(real)), *cache.link_chain(invoked),
           (os.path.join(here, "pyvenv.cfg"), cache.signature(os.path.join(here, "pyvenv.cfg"))),
           (os.path.join(os.path.dirname(here), "pyvenv.cfg"),
            cache.signature(os.path.join(os.path.dirname(here), "pyvenv.cfg"))),
           (str(HELPER_PATH), cache.signature(str(HELPER_PATH)))]
    pairs[:0] = own
    store.put(key, pairs, dict(data, from_cache=len(pairs)))  # a later run's answer says it is an earlier run's


def prefetch(ctx: ProbeContext) -> None:
    """Start the helper now (Runner.start) for the interpreter probe() will ask, unless its walk runs in this process
    or the cache answers it: probe() collects it. BadInput for a --python that is no interpreter is left to probe()."""
    python, explicit, chosen_by = resolve_target(ctx)
    if explicit:
        python = _check_path(python)
    elif not ctx.root.is_live or _walks_here(python, chosen_by, ctx):
        return
    argv, limit, env = _helper_command(python, ctx.runner, None)
    if _cached_answer(_cache_slot(python, ctx.runner, argv, env), copy=False) is None:
        ctx.runner.start(argv, timeout=limit, env=env)


def run_helper(python: str, runner: Runner, timeout: Optional[float] = None) -> Tuple[Optional[dict], str]:
    """Run the helper in `python` (or take its earlier answer, see _cache_slot). Returns (data, "") or (None,
    one-line reason)."""
    argv, limit, env = _helper_command(python, runner, timeout)
    slot = _cache_slot(python, runner, argv, env)
    cached = _cached_answer(slot)
    if cached is not None:
        return cached, ""
    result = runner.run(argv, timeout=limit, env=env)
    if result.status == "missing":
        return None, "not found" + (" on PATH" if os.sep not in python else "")
    if result.status == "timeout":
        return None, f"no answer within {limit:g} s (killed); is it a Python interpreter?"
    if result.status == "error":
        detail = result.reason.split(": ", 1)[-1] if result.reason else "cannot run it"
        return None, f"cannot run it ({_one_line(detail)}); is it a Python interpreter?"
    if result.status == "failed":
        first = (result.stderr.strip() or result.stdout.strip()).splitlines()
        last = first[-1] if first else ""
        return None, (f"not a working Python 3 interpreter (exit status {result.returncode}"
                      + (f": {_one_line(last, 160)}" if last else "") + ")")
    for line in result.stdout.splitlines():
        if line.startswith(MARKER):
            try:
                data = json.loads(line[len(MARKER):])
            except ValueError:
                break
            if isinstance(data, dict) and data.get("helper") == 1 and isinstance(data.get("dists"), list):
                _remember(slot, data)
                return data, ""
            break
    return None, "did not answer like a Python interpreter"


def _check_path(path: str) -> str:
    """Turn --python PATH into an interpreter path, or raise BadInput."""
    if os.sep not in path and not (os.altsep and os.altsep in path):
        return path  # a bare name, looked up on PATH by the runner
    if not os.path.lexists(path):
        raise BadInput(f"--python {path}: no such file or directory")
    if os.path.isdir(path):
        found = _interpreter_in(path)
        if found is None:
            raise BadInput(f"--python {path}: is a directory without bin/python, not a Python interpreter")
        return found
    if not os.path.exists(path):
        raise BadInput(f"--python {path}: a broken symbolic link")
    if not os.access(path, os.X_OK):
        raise BadInput(f"--python {path}: not executable, not a Python interpreter")
    return path


def check_target_python(path: str, runner: Runner, timeout: Optional[float] = None) -> dict:
    """Check that `path` (from --python) is a working Python; return what the helper reported.

    Raises BadInput with a one-line message otherwise (the CLI turns it into exit code 2).
    """
    python = _check_path(path)
    data, reason = run_helper(python, runner, timeout)
    if data is None:
        raise BadInput(f"--python {path}: {reason}")
    return data


# -- checking the helper's answer ---------------------------------------------------

_TOP_TEXT = ("executable", "version", "implementation", "prefix", "base_prefix", "real_prefix", "platform")
_DIST_TEXT = ("name", "normalized", "version", "location", "metadata_path", "requires_python", "installer")


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)


def _texts(where: str, obj: dict, keys) -> Optional[str]:
    for k in keys:
        if obj.get(k) is not None and not isinstance(obj.get(k), str):
            return f"{where}{k} is {_type_name(obj[k])}, not a string"
    return None


def _text_list(where: str, value: Any) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, list):
        return f"{where} is {_type_name(value)}, not a list"
    bad = next((x for x in value if not isinstance(x, str)), None)
    return f"{where} holds {_type_name(bad)}, not strings" if bad is not None or None in value else None


def helper_answer_problem(data: dict) -> Optional[str]:
    """What is wrong with the shape of the helper's answer (a field of the wrong type), or None.

    The helper is ours, but it runs in an interpreter we do not control (a sitecustomize, a patched
    json module, a wrapper script): a malformed answer is a probe error, never a silently empty section."""
    problem = _texts("", data, _TOP_TEXT) or _text_list("sys_path", data.get("sys_path")) \
        or _text_list("site_dirs", data.get("site_dirs"))
    if problem:
        return problem
    for i, d in enumerate(data.get("dists") or []):
        where = f"dists[{i}]"
        if not isinstance(d, dict):
            return f"{where} is {_type_name(d)}, not an object"
        problem = _texts(where + ".", d, _DIST_TEXT) or _text_list(where + ".requires_dist", d.get("requires_dist")) \
            or _text_list(where + ".bundled", d.get("bundled"))
        if problem:
            return problem
        for j, other in enumerate(d.get("shadowed") or []):
            if not isinstance(other, dict):
                return f"{where}.shadowed[{j}] is {_type_name(other)}, not an object"
            problem = _texts(f"{where}.shadowed[{j}].", other, ("version", "location", "metadata_path"))
            if problem:
                return problem
        files = d.get("files")
        if files is not None and not isinstance(files, dict):
            return f"{where}.files is {_type_name(files)}, not an object"
        for rel, entry in (files or {}).items():
            if not isinstance(entry, dict):
                return f"{where}.files[{rel!r}] is {_type_name(entry)}, not an object"
            problem = _texts(f"{where}.files[{rel!r}].", entry, ("path", "text"))
            if problem:
                return problem
    return None


# -- turning the helper's report into the snapshot -----------------------------------

def _excerpt(text: str) -> str:
    """The meaningful lines of a version file: no comments, blank lines or license header."""
    lines = [ln.rstrip() for ln in text.splitlines()
             if ln[:1].strip() and not ln.startswith("#") and "=" in ln]  # top-level assignments
    out = "\n".join(lines)
    return out if len(out) <= EXCERPT_MAX else out[:EXCERPT_MAX] + " ..."


def _relevant_requires(lines: List[str]) -> List[str]:
    return [ln for ln in lines if helper.relevant(helper.requirement_name(ln))]


MAX_RUNTIME_REQUIRES = 64


def is_runtime_dist(norm: str) -> bool:
    """A deployment runtime's dist whose Requires-Dist the snapshot keeps (the ED680-ED689 rules read them)."""
    return norm in ("onnx", "onnxscript") or norm.startswith(("tensorrt", "onnxruntime"))


def framework_name(norm: str) -> Optional[str]:
    """The framework a distribution stands for, or None if it is not a framework."""
    if norm in ("torch", "torchvision", "torchaudio", "jax", "jaxlib"):
        return norm
    if norm in ("triton", "pytorch-triton", "pytorch-triton-rocm", "pytorch-triton-xpu"):
        return "triton"
    if _TF_FRAMEWORK_DISTS.match(norm):
        return "tensorflow"
    if jax_build.plugin_dist(norm):
        return norm
    if norm == "cupy" or (norm.startswith("cupy-") and norm != "cupy-"):
        return "cupy"
    if norm in ("paddlepaddle", "paddlepaddle-gpu"):
        return "paddlepaddle"
    if norm == "onnxruntime" or norm.startswith("onnxruntime-"):
        return "onnxruntime"
    return None


def _file(dist: dict, rel: str) -> Tuple[Optional[str], Optional[str]]:
    entry = (dist.get("files") or {}).get(rel)
    if isinstance(entry, dict) and isinstance(entry.get("text"), str):
        return entry.get("path"), entry["text"]
    return None, None


def _cupy_build(norm: str) -> Tuple[str, Optional[str], Optional[str]]:
    m = re.match(r"^cupy-cuda([0-9]{1,4})(x?)$", norm)
    if m:
        digits = m.group(1)
        if m.group(2) == "x" or len(digits) <= 2:  # cupy-cuda12x: any 12.x
            return "cuda", str(int(digits)), None
        return "cuda", f"{int(digits[:-1])}.{digits[-1]}", None  # cupy-cuda117 -> 11.7
    m = re.match(r"^cupy-rocm-([0-9]{1,4})-([0-9]{1,4})$", norm)
    if m:
        return "rocm", None, f"{m.group(1)}.{m.group(2)}"
    return "unknown", None, None


_HASHED = re.compile(r"-[0-9a-f]{8}$")  # libcudart-d0da41ae.so.11.0: the wheel build's hash tag


def bundled_libraries(paths: List[str]) -> List[Library]:
    """The CUDA libraries a framework wheel bundles (the helper's `bundled` paths), named like the loader probe names
    them ("libcudart" for libcudart-d0da41ae.so.11.0), with the version the file name states (None when none)."""
    out: List[Library] = []
    for path in paths:
        parts = split_libname(path)
        if parts is None:
            continue
        out.append(Library(_HASHED.sub("", parts[0]), path, parts[1], "bundled"))
    return out


def _framework(dist: dict, installed: Dict[str, dict], platform_tag: str) -> Optional[Framework]:
    norm = dist.get("normalized") or helper.normalize(str(dist.get("name", "")))
    name = framework_name(norm)
    if name is None:
        return None
    fw = Framework(
        name=name,
        distribution=norm,
        version=str(dist.get("version") or ""),
        requires=_relevant_requires([str(x) for x in dist.get("requires_dist") or []]),
        requires_python=dist.get("requires_python") or None,
        location=str(dist.get("location") or ""),
    )
    if dist.get("metadata_path"):
        fw.evidence.append(Evidence(f"file:{dist['metadata_path']}", f"Name: {dist.get('name')}\nVersion: {fw.version}"))
    fw.bundled = bundled_libraries([str(x) for x in dist.get("bundled") or []])

    def read(rel: str) -> Optional[str]:
        path, text = _file(dist, rel)
        if text is not None:
            fw.evidence.append(Evidence(f"file:{path}", _excerpt(text)))
        return text

    if name == "torch":
        info = torch_version.parse_torch_version(read("torch/version.py"))
        if info is not None:
            fw.version = info.version or fw.version
            fw.build, fw.cuda_version, fw.rocm_version = torch_version.torch_build(info)
        else:
            fw.build, fw.cuda_version, fw.rocm_version = torch_version.build_from_label(torch_version.local_label(fw.version))
    elif name in ("torchvision", "torchaudio"):
        file_version = torch_version.parse_simple_version_py(read(f"{name}/version.py"))
        if file_version:
            fw.version = file_version
        fw.build, fw.cuda_version, fw.rocm_version = torch_version.build_from_label(torch_version.local_label(fw.version))
    elif name == "triton":
        fw.build = "rocm" if norm == "pytorch-triton-rocm" else "unknown"
    elif name == "tensorflow":
        own, core = read("tensorflow/python/platform/build_info.py"), read("tensorflow_core/python/platform/build_info.py")
        tf_info = tf_build_info.parse_build_info(own) or tf_build_info.parse_build_info(core)
        if tf_info is not None:
            fw.build = tf_info.build
            fw.cuda_version = tf_info.cuda_version
            fw.cudnn_version = tf_info.cudnn_version
            fw.rocm_version = tf_info.rocm_version
            fw.arch_list = tf_info.compute_capabilities
        elif norm.endswith("-cpu"):
            fw.build = "cpu"
        elif norm.endswith("-gpu"):
            fw.build = "cuda"
        if fw.build in ("cpu", "unknown") and "tensorflow-metal" in installed and platform_tag.startswith("macosx"):
            fw.build = "metal"
    elif name in ("jax", "jaxlib"):
        jax_info = jax_build.parse_jax_version_file(read(f"{name}/version.py"))
        if jax_info is not None and not fw.version:
            fw.version = jax_info.version or ""
        jaxlib = installed.get("jaxlib")
        jaxlib_version = str(jaxlib.get("version") or "") if jaxlib else None
        build, cuda, cudnn, rocm = jax_build.jax_build(jaxlib_version, installed.keys())
        fw.build, fw.cuda_version, fw.cudnn_version, fw.rocm_version = build, cuda, cudnn, rocm
    elif (plugin := jax_build.plugin_dist(norm)) is not None:
        kind, version, _ = plugin
        for rel in jax_build.plugin_module_paths(norm):
            read(rel)
        fw.build = kind
        if kind == "cuda":
            fw.cuda_version = version
        else:
            fw.rocm_version = version
    elif name == "cupy":
        file_version = torch_version.parse_simple_version_py(read("cupy/_version.py"))
        if file_version and not fw.version:
            fw.version = file_version
        fw.build, fw.cuda_version, fw.rocm_version = _cupy_build(norm)
    elif name == "paddlepaddle":
        # paddle/version/__init__.py: cuda_version = '11.8', cudnn_version = '8.6.0' ('False' in a CPU build)
        text = read("paddle/version/__init__.py")
        values = {k: v for k, v in assignments.simple_assignments(text).items() if v not in ("", "False")}
        if norm == "paddlepaddle-gpu" or values.get("cuda_version"):
            fw.build = "cuda"
            m = re.search(r"\.post([0-9])([0-9])([0-9])?$", fw.version)  # 2.5.1.post117 -> CUDA 11.7
            if m:
                fw.cuda_version = f"{m.group(1)}{m.group(2)}.{m.group(3)}" if m.group(3) else f"{m.group(1)}.{m.group(2)}"
            fw.cuda_version = values.get("cuda_version") or fw.cuda_version
            fw.cudnn_version = values.get("cudnn_version") or None
        else:
            fw.build = "cpu"
    elif name == "onnxruntime":
        text = read("onnxruntime/capi/build_and_package_info.py")
        values = assignments.simple_assignments(text)
        package = helper.normalize(values.get("package_name", norm))
        if package in ("onnxruntime-gpu", "ort-gpu-nightly") or norm == "onnxruntime-gpu":
            fw.build = "cuda"
        elif package == "onnxruntime-rocm" or norm == "onnxruntime-rocm":
            fw.build = "rocm"
        elif package == "onnxruntime" and norm == "onnxruntime":
            fw.build = "cpu"
        fw.cuda_version = values.get("cuda_version") or None
        fw.cudnn_version = values.get("cudnn_version") or None
    return fw


def _kind(prefix: str, base_prefix: str, real_prefix: Optional[str]) -> str:
    # the target runs on this machine, so its prefix is a live path
    if prefix and os.path.isdir(os.path.join(prefix, "conda-meta")):
        return "conda"
    if (prefix and base_prefix and os.path.normpath(prefix) != os.path.normpath(base_prefix)) or real_prefix:
        return "venv"
    if prefix and os.path.isfile(os.path.join(prefix, "pyvenv.cfg")):
        return "venv"
    return "system"


def python_env_from(data: dict, chosen_by: str = "") -> PythonEnv:
    """Build the PythonEnv from the helper's JSON report (pure: no process, no import)."""
    dists = [d for d in data.get("dists") or [] if isinstance(d, dict)]
    installed: Dict[str, dict] = {}
    for d in dists:
        norm = d.get("normalized") or helper.normalize(str(d.get("name", "")))
        d["normalized"] = norm
        installed.setdefault(norm, d)
    env = PythonEnv(
        executable=str(data.get("executable") or ""),
        version=str(data.get("version") or ""),
        implementation=str(data.get("implementation") or ""),
        prefix=str(data.get("prefix") or ""),
        kind=_kind(str(data.get("prefix") or ""), str(data.get("base_prefix") or ""), data.get("real_prefix")),
        platform_tag=str(data.get("platform") or ""),
        sys_path=[p for p in data.get("sys_path") or [] if isinstance(p, str) and p],
    )
    source = "cmd:" + (env.executable or "python") + " -c <envdoctor pyenv helper>"
    env.evidence.append(Evidence(source, _one_line(
        f"chosen by {chosen_by}; prefix={env.prefix} base_prefix={data.get('base_prefix')} sys.path={data.get('sys_path')}",
        600)))
    cached = data.get("from_cache")
    if isinstance(cached, int) and not isinstance(cached, bool):
        env.evidence.append(Evidence(source, f"the answer of an earlier run, not run again: the interpreter, its "
                                             f"environment and the {cached} paths the walk read are unchanged"))
    for norm, d in installed.items():
        env.packages[norm] = str(d.get("version") or "")
        if is_runtime_dist(norm):
            env.runtime_requires[norm] = [str(x)[:300] for x in (d.get("requires_dist") or [])[:MAX_RUNTIME_REQUIRES]]
        for other in d.get("shadowed") or []:
            if isinstance(other, dict):
                env.evidence.append(Evidence(
                    f"file:{other.get('metadata_path', '')}",
                    f"{norm} {other.get('version')} also installed at {other.get('location')}, "
                    f"shadowed by {d.get('version')} at {d.get('location')}",
                ))
    for d in installed.values():
        fw = _framework(d, installed, env.platform_tag)
        if fw is not None:
            env.frameworks.append(fw)
    return env


def _walks_here(python: str, chosen_by: str, ctx: ProbeContext) -> bool:
    """Whether the target (not named by --python) is the environment envdoctor itself runs in, with its sys.path."""
    prefix = (ctx.env.get("VIRTUAL_ENV") or ctx.env.get("CONDA_PREFIX")) if chosen_by.startswith("env:") else sys.prefix
    if python != sys.executable and not (prefix and os.path.realpath(prefix) == os.path.realpath(sys.prefix)):
        return False
    return ctx.env.get("PYTHONPATH", "") == os.environ.get("PYTHONPATH", "")  # else it would see another path


def _collect_in_process(python: str, chosen_by: str, ctx: ProbeContext) -> Optional[dict]:
    """When the target is the environment envdoctor itself runs in, the helper's walk runs here
    instead of in a new interpreter (the same files are read; nothing is imported either way).
    sys.path[0] is left out: it is envdoctor's script folder or cwd, which `python -c` would not see."""
    if not _walks_here(python, chosen_by, ctx):
        return None
    data = helper.collect(list(sys.path[1:]))
    data["executable"] = python
    return data


def probe(ctx: ProbeContext, snap: Snapshot) -> None:
    python, explicit, chosen_by = resolve_target(ctx)
    data: Optional[dict]
    if explicit:
        data = check_target_python(python, ctx.runner)
    else:
        if not ctx.root.is_live:
            raise ProbeSkipped("the Python environment of an image root is not probed (give --python to name one)")
        data = _collect_in_process(python, chosen_by, ctx)
        if data is None:
            data, reason = run_helper(python, ctx.runner)
            if data is None:
                raise ProbeUnknown(f"{python} ({chosen_by}): {reason}")
    problem = helper_answer_problem(data)
    if problem:
        snap.python = PythonEnv(executable=str(python))  # the section names the interpreter it could not read
        raise ProbeUnknown(f"{python} ({chosen_by}) answered in an unexpected shape: {problem}")
    snap.python = python_env_from(data, chosen_by)
    from envdoctor.probes.installers import installer_facts

    snap.installers.dists, snap.installers.copies = installer_facts(data)
