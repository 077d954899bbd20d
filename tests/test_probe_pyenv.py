"""The Python environment probe: a real (tiny) target venv with hand-built distributions.

Every fake package's __init__.py writes a marker file and raises, so any import of it,
in the target interpreter or in envdoctor's own process, is caught.
"""
from __future__ import annotations

import ast
import os
import stat
import sys
import time
import venv
from pathlib import Path

import pytest
from packaging.version import Version

from envdoctor.errors import BadInput
from envdoctor.fsroot import Root
from envdoctor.probes import pyenv
from envdoctor.probes.base import ProbeContext, ProbeUnknown
from envdoctor.snapshot import Snapshot

FIX = Path(__file__).parent / "fixtures" / "frameworks"
FRAMEWORK_MODULES = ("torch", "torchvision", "tensorflow", "jax", "jaxlib", "cupy", "paddle", "onnxruntime", "triton")

RAISING_INIT = (
    "import os\n"
    "open(os.environ.get('ENVDOCTOR_TEST_IMPORT_LOG', os.devnull), 'a').write(__name__ + '\\n')\n"
    "raise RuntimeError('imported!')\n"
)


def fixture(name: str) -> str:
    return (FIX / name).read_text(encoding="utf-8")


class FakeVenv:
    def __init__(self, root: Path) -> None:
        venv.EnvBuilder(with_pip=False, symlinks=(os.name != "nt")).create(root)
        self.root = root
        self.python = root / "bin" / "python"
        self.site = root / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"
        assert self.site.is_dir()

    def dist(self, dist_dir: str, metadata: str, files: dict | None = None, packages=(), base: Path | None = None):
        site = base or self.site
        d = site / dist_dir
        d.mkdir(parents=True)
        (d / "METADATA").write_text(metadata, encoding="utf-8")
        (d / "INSTALLER").write_text("pip\n")
        for pkg in packages:
            p = site / pkg
            p.mkdir(parents=True, exist_ok=True)
            (p / "__init__.py").write_text(RAISING_INIT)
        for rel, text in (files or {}).items():
            path = site / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if not (path.parent / "__init__.py").exists():
                (path.parent / "__init__.py").write_text(RAISING_INIT)
            path.write_text(text, encoding="utf-8")
        return d


def simple_metadata(name: str, version: str, *requires: str, requires_python: str | None = None) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if requires_python:
        lines.append(f"Requires-Python: {requires_python}")
    lines += [f"Requires-Dist: {r}" for r in requires]
    return "\n".join(lines) + "\n\nlong description\n"


@pytest.fixture
def import_log(tmp_path, monkeypatch):
    log = tmp_path / "imports.log"
    monkeypatch.setenv("ENVDOCTOR_TEST_IMPORT_LOG", str(log))
    return log


def ctx_for(python=None, timeout=5.0, **env) -> ProbeContext:
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")}
    base.update(env)
    return ProbeContext(root=Root("/"), env=base, timeout=timeout, target_python=str(python) if python else None)


@pytest.fixture
def gpu_venv(tmp_path):
    """A venv holding a CUDA torch stack, tensorflow-cpu and jax with the CUDA 12 plugins."""
    v = FakeVenv(tmp_path / "venv")
    v.dist("torch-2.14.1.dist-info", fixture("METADATA_torch-2.14.1"),
           {"torch/version.py": fixture("torch_version_2.14.1+cu130.py")})
    v.dist("torchvision-0.29.1.dist-info", fixture("METADATA_torchvision-0.29.1"),
           {"torchvision/version.py": fixture("torchvision_version_0.29.1+cu130.py")})
    v.dist("triton-3.8.0.dist-info", fixture("METADATA_triton-3.8.0"), packages=["triton"])
    v.dist("nvidia_cudnn_cu13-9.24.0.43.dist-info", fixture("METADATA_nvidia-cudnn-cu13-9.24.0.43"))
    v.dist("tensorflow_cpu-2.21.0.dist-info", fixture("METADATA_tensorflow_cpu-2.21.0"),
           {"tensorflow/python/platform/build_info.py": fixture("tf_build_info_tensorflow_cpu_2.21.0.py")})
    v.dist("jax-0.10.2.dist-info", fixture("METADATA_jax-0.10.2"), {"jax/version.py": fixture("jaxlib_version_0.10.2.py")})
    v.dist("jaxlib-0.10.2.dist-info", fixture("METADATA_jaxlib-0.10.2"),
           {"jaxlib/version.py": fixture("jaxlib_version_0.10.2.py")})
    # requirement lines as jax_plugins/cuda/plugin_setup.py (jax-ml/jax) declares them
    v.dist("jax_cuda12_plugin-0.10.2.dist-info",
           simple_metadata("jax-cuda12-plugin", "0.10.2", "jax-cuda12-pjrt==0.10.2",
                           'nvidia-cudnn-cu12<10.0,>=9.8; extra == "with-cuda"', requires_python=">=3.10"),
           {"jax_cuda12_plugin/version.py": fixture("jaxlib_version_0.10.2.py")})
    v.dist("jax_cuda12_pjrt-0.10.2.dist-info", simple_metadata("jax-cuda12-pjrt", "0.10.2"),
           {"jax_plugins/xla_cuda12/version.py": fixture("jaxlib_version_0.10.2.py")})
    v.dist("requests-2.31.0.dist-info", simple_metadata("requests", "2.31.0"), packages=["requests"])
    return v


def run_probe(ctx: ProbeContext) -> Snapshot:
    snap = Snapshot()
    pyenv.probe(ctx, snap)
    return snap


def test_probe_reports_frameworks_of_an_explicit_target(gpu_venv, import_log):
    snap = run_probe(ctx_for(gpu_venv.python))
    env = snap.python
    assert env.kind == "venv"
    assert Path(env.prefix).resolve() == gpu_venv.root.resolve()
    assert env.version.startswith("%d.%d." % sys.version_info[:2])
    assert env.implementation == "cpython"
    assert env.platform_tag

    torch = snap.framework("torch")
    assert torch.distribution == "torch"
    assert torch.version == "2.14.1+cu130"  # from torch/version.py: the dist says 2.14.1 only
    assert (torch.build, torch.cuda_version, torch.rocm_version) == ("cuda", "13.0", None)
    assert torch.arch_list is None  # version.py does not state it
    assert torch.requires_python == ">=3.10"
    assert any(r.startswith("nvidia-cudnn-cu13==9.24.0.43") for r in torch.requires)
    assert any(r.startswith("cuda-toolkit[") for r in torch.requires)
    assert any(r.startswith("triton~=3.8.0") for r in torch.requires)
    assert not any(r.startswith(("filelock", "sympy", "optree")) for r in torch.requires)
    assert any(e.source.endswith("torch/version.py") and "cuda: Optional[str] = '13.0'" in e.excerpt for e in torch.evidence)
    assert Path(torch.location).resolve() == gpu_venv.site.resolve()

    tv = snap.framework("torchvision")
    assert (tv.version, tv.build, tv.cuda_version) == ("0.29.1+cu130", "cuda", "13.0")
    assert tv.requires == ["torch (>=2.14.0)"]

    assert snap.framework("triton").version == "3.8.0"

    tf = snap.framework("tensorflow")
    assert tf.distribution == "tensorflow-cpu"
    assert (tf.version, tf.build, tf.cuda_version) == ("2.21.0", "cpu", None)
    assert tf.requires and all(r.startswith("nvidia-") and 'extra == "and-cuda"' in r for r in tf.requires)

    jax = snap.framework("jax")
    assert (jax.version, jax.build, jax.cuda_version) == ("0.10.2", "cuda", "12")
    assert snap.framework("jaxlib").build == "cuda"
    plugin = snap.framework("jax-cuda12-plugin")
    assert (plugin.build, plugin.cuda_version) == ("cuda", "12")
    assert plugin.requires == ["jax-cuda12-pjrt==0.10.2", 'nvidia-cudnn-cu12<10.0,>=9.8; extra == "with-cuda"']
    assert snap.framework("jax-cuda12-pjrt").build == "cuda"

    assert env.packages["nvidia-cudnn-cu13"] == "9.24.0.43"
    assert env.packages["tensorflow-cpu"] == "2.21.0"
    assert env.packages["torch"] == "2.14.1"
    assert "requests" not in env.packages
    assert not import_log.exists(), import_log.read_text()

    # the snapshot round-trips with all this in it
    assert Snapshot.from_json(snap.to_json()) == snap


def test_probe_never_imports_frameworks_in_envdoctors_own_process(gpu_venv, import_log, monkeypatch):
    monkeypatch.syspath_prepend(str(gpu_venv.site))  # the fake frameworks are importable here too
    before = {m for m in sys.modules if m.split(".")[0] in FRAMEWORK_MODULES}
    snap = run_probe(ctx_for(gpu_venv.python))
    after = {m for m in sys.modules if m.split(".")[0] in FRAMEWORK_MODULES}
    assert snap.framework("torch") is not None
    assert after == before
    assert not import_log.exists()


def test_helper_ignores_modules_in_the_current_directory(gpu_venv, import_log, tmp_path, monkeypatch):
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    for mod in ("json", "re", "platform", "sysconfig"):
        (cwd / f"{mod}.py").write_text(RAISING_INIT)
    monkeypatch.chdir(cwd)
    snap = run_probe(ctx_for(gpu_venv.python))
    assert snap.framework("torch").build == "cuda"
    assert not import_log.exists()


def test_default_target_is_the_active_virtualenv(gpu_venv, import_log):
    snap = run_probe(ctx_for(None, VIRTUAL_ENV=str(gpu_venv.root)))
    assert Path(snap.python.prefix).resolve() == gpu_venv.root.resolve()
    assert snap.framework("torch").build == "cuda"
    assert "env:VIRTUAL_ENV" in snap.python.evidence[0].excerpt


def test_default_target_is_the_conda_env_and_kind_conda(tmp_path, import_log):
    env = FakeVenv(tmp_path / "conda-env")
    (env.root / "conda-meta").mkdir()
    env.dist("torch-2.13.0+cpu.dist-info", fixture("METADATA_torch-2.13.0+cpu"),
             {"torch/version.py": fixture("torch_version_2.13.0+cpu.py")})
    snap = run_probe(ctx_for(None, CONDA_PREFIX=str(env.root)))
    assert snap.python.kind == "conda"
    torch = snap.framework("torch")
    assert (torch.version, torch.build, torch.cuda_version) == ("2.13.0+cpu", "cpu", None)
    assert torch.requires == []


def test_without_an_active_env_the_target_is_envdoctors_interpreter():
    python, explicit, how = pyenv.resolve_target(ctx_for(None))
    assert python == sys.executable and not explicit
    python, explicit, how = pyenv.resolve_target(ctx_for(None, VIRTUAL_ENV="/nonexistent/venv"))
    assert python == sys.executable  # a stale VIRTUAL_ENV without bin/python is skipped
    python, explicit, how = pyenv.resolve_target(ctx_for("/some/python", VIRTUAL_ENV="/x"))
    assert (python, explicit) == ("/some/python", True)


def test_a_venv_directory_is_accepted_for_python(gpu_venv):
    data = pyenv.check_target_python(str(gpu_venv.root), pyenv.Runner(env=dict(os.environ)))
    assert Path(data["prefix"]).resolve() == gpu_venv.root.resolve()


def test_shadowed_duplicate_and_egg_info(tmp_path, import_log):
    v = FakeVenv(tmp_path / "venv")
    extra = tmp_path / "extra-path"
    extra.mkdir()
    (v.site / "extra.pth").write_text(str(extra) + "\n")
    # an older torch on a later sys.path entry is shadowed by the venv's own
    v.dist("torch-2.13.0+cpu.dist-info", fixture("METADATA_torch-2.13.0+cpu"),
           {"torch/version.py": fixture("torch_version_2.13.0+cpu.py")})
    v.dist("torch-1.13.1.dist-info", simple_metadata("torch", "1.13.1"),
           {"torch/version.py": fixture("torch_version_1.13.1_cuda11.6.py")}, base=extra)
    # a setuptools develop-style egg-info with requires.txt sections
    egg = v.site / "cupy_cuda11x.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: cupy-cuda11x\nVersion: 12.3.0\n")
    (egg / "requires.txt").write_text("numpy<1.29,>=1.20\nfastrlock>=0.5\n\n[all]\nnvidia-cuda-runtime-cu11\n")
    snap = run_probe(ctx_for(v.python))
    torch = snap.framework("torch")
    assert (torch.version, torch.build) == ("2.13.0+cpu", "cpu")
    assert any("torch 1.13.1 also installed" in e.excerpt for e in snap.python.evidence)
    cupy = snap.framework("cupy")
    assert (cupy.distribution, cupy.version, cupy.build, cupy.cuda_version) == ("cupy-cuda11x", "12.3.0", "cuda", "11")
    assert cupy.requires == ['nvidia-cuda-runtime-cu11; extra == "all"']
    assert not import_log.exists()


# -- python_env_from: the judgement, without a process ----------------------------------

def _dist(name, version, files=None, requires=(), location="/env/site-packages"):
    from envdoctor.probes import _pyenv_helper as helper

    return {
        "name": name, "normalized": helper.normalize(name), "version": version, "location": location,
        "metadata_path": f"{location}/{name}-{version}.dist-info/METADATA", "requires_dist": list(requires),
        "requires_python": None, "files": {k: {"path": f"{location}/{k}", "text": v} for k, v in (files or {}).items()},
        "shadowed": [],
    }


def _report(*dists, platform="linux-x86_64", prefix="/env", base_prefix="/usr"):
    return {"helper": 1, "executable": f"{prefix}/bin/python", "version": "3.11.7", "implementation": "cpython",
            "prefix": prefix, "base_prefix": base_prefix, "platform": platform, "sys_path": [], "site_dirs": [],
            "dists": list(dists)}


def test_tensorflow_gpu_build_info_gives_cuda_cudnn_and_archs():
    env = pyenv.python_env_from(_report(_dist("tensorflow", "2.13.0", {
        "tensorflow/python/platform/build_info.py":
            "import collections\n\nbuild_info = collections." + fixture("tf_get_build_info_linux_2.13_cuda12.1.txt")})))
    tf = env.frameworks[0]
    assert (tf.name, tf.distribution, tf.build, tf.cuda_version, tf.cudnn_version) == ("tensorflow", "tensorflow", "cuda", "12.1", "8")
    assert tf.arch_list[0] == "sm_52" and tf.arch_list[-1] == "compute_90"


def test_tensorflow_without_build_info_falls_back_to_the_dist_name():
    env = pyenv.python_env_from(_report(_dist("tensorflow-cpu", "2.15.0"), _dist("tensorflow-gpu", "2.10.0")))
    builds = {fw.distribution: fw.build for fw in env.frameworks}
    assert builds == {"tensorflow-cpu": "cpu", "tensorflow-gpu": "cuda"}


def test_tensorflow_macos_with_metal_plugin():
    env = pyenv.python_env_from(_report(
        _dist("tensorflow-macos", "2.15.0", {"tensorflow/python/platform/build_info.py": fixture("tf_build_info_tensorflow_cpu_2.21.0.py")}),
        _dist("tensorflow-metal", "1.1.0"), platform="macosx-11.0-arm64"))
    assert [fw.name for fw in env.frameworks] == ["tensorflow"]  # the plugin is a package, not a framework
    assert env.frameworks[0].build == "metal"
    assert env.packages["tensorflow-metal"] == "1.1.0"


def test_old_jaxlib_cuda_label():
    env = pyenv.python_env_from(_report(_dist("jax", "0.4.23"), _dist("jaxlib", "0.4.23+cuda12.cudnn89")))
    jax = next(fw for fw in env.frameworks if fw.name == "jax")
    assert (jax.build, jax.cuda_version, jax.cudnn_version) == ("cuda", "12", "8.9")


def test_rocm_torch_and_triton():
    env = pyenv.python_env_from(_report(
        _dist("torch", "2.3.0.dev20240308+rocm6.0", {"torch/version.py": fixture("torch_version_2.3.0.dev+rocm6.0.py")}),
        _dist("pytorch-triton-rocm", "3.0.0")))
    torch = next(fw for fw in env.frameworks if fw.name == "torch")
    triton = next(fw for fw in env.frameworks if fw.name == "triton")
    assert (torch.build, torch.rocm_version, torch.cuda_version) == ("rocm", "6.0", None)
    assert (triton.distribution, triton.build) == ("pytorch-triton-rocm", "rocm")


def test_torch_without_version_file_uses_the_dist_label():
    env = pyenv.python_env_from(_report(_dist("torch", "2.1.0+cu121")))
    assert (env.frameworks[0].build, env.frameworks[0].cuda_version) == ("cuda", "12.1")


@pytest.mark.parametrize(
    "dist, version, build, cuda, rocm",
    [
        ("cupy-cuda12x", "13.0.0", "cuda", "12", None),
        ("cupy-cuda117", "11.6.0", "cuda", "11.7", None),
        ("cupy-rocm-5-0", "12.0.0", "rocm", None, "5.0"),
        ("cupy", "13.0.0", "unknown", None, None),
        ("paddlepaddle-gpu", "2.5.1.post117", "cuda", "11.7", None),
        ("paddlepaddle-gpu", "2.6.1.post120", "cuda", "12.0", None),
        ("paddlepaddle", "2.6.1", "cpu", None, None),
        ("onnxruntime", "1.30.0", "cpu", None, None),
        ("onnxruntime-gpu", "1.17.0", "cuda", None, None),
        ("onnxruntime-directml", "1.17.0", "unknown", None, None),
    ],
)
def test_other_frameworks_from_dist_names(dist, version, build, cuda, rocm):
    env = pyenv.python_env_from(_report(_dist(dist, version)))
    fw = env.frameworks[0]
    assert (fw.build, fw.cuda_version, fw.rocm_version) == (build, cuda, rocm)
    assert fw.distribution == dist


def test_onnxruntime_reads_build_and_package_info():
    env = pyenv.python_env_from(_report(_dist("onnxruntime", "1.30.0", {
        "onnxruntime/capi/build_and_package_info.py": fixture("onnxruntime_build_and_package_info_1.30.0.py")})))
    fw = env.frameworks[0]
    assert fw.build == "cpu"
    assert any("package_name = 'onnxruntime'" in e.excerpt for e in fw.evidence)


def test_nvidia_and_cuda_dists_are_packages_not_frameworks():
    env = pyenv.python_env_from(_report(
        _dist("nvidia-cuda-runtime", "13.0.96"), _dist("cuda-bindings", "13.0.3"), _dist("nvidia-ml-py", "12.560.30"),
        _dist("tf-keras", "2.15.0")))
    assert env.frameworks == []
    assert env.packages == {"nvidia-cuda-runtime": "13.0.96", "cuda-bindings": "13.0.3",
                            "nvidia-ml-py": "12.560.30", "tf-keras": "2.15.0"}


def test_kind_system_when_prefix_is_base_prefix():
    env = pyenv.python_env_from(_report(prefix="/usr", base_prefix="/usr"))
    assert env.kind == "system"


# -- --python that is not a Python --------------------------------------------------------

def _script(path: Path, body: str, executable: bool = True) -> Path:
    path.write_text(body)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda d: _script(d / "garbage.sh", "#!/bin/sh\necho 'hello, I am not python'\n"), "did not answer like a Python"),
        (lambda d: _script(d / "binary.sh", "#!/bin/sh\nprintf '\\000\\377\\376garbage'\n"), "did not answer like a Python"),
        (lambda d: _script(d / "fails.sh", "#!/bin/sh\necho 'boom\nsecond line' >&2\nexit 3\n"), "exit status 3"),
        (lambda d: _script(d / "notes.txt", "just some text\n", executable=False), "not executable"),
        (lambda d: _script(d / "noshebang", "just some text\n"), "cannot run it"),
        (lambda d: d / "does-not-exist", "no such file"),
        (lambda d: d, "is a directory"),
    ],
)
def test_bad_python_is_bad_input_with_a_one_line_message(tmp_path, make, words):
    path = make(tmp_path)
    with pytest.raises(BadInput) as err:
        pyenv.check_target_python(str(path), pyenv.Runner(env=dict(os.environ), timeout=5))
    message = str(err.value)
    assert words in message
    assert str(path) in message
    assert "\n" not in message
    assert err.value.exit_code == 2


def test_hanging_python_is_bad_input_within_the_timeout(tmp_path):
    path = _script(tmp_path / "hangs.sh", "#!/bin/sh\nsleep 30\n")
    start = time.monotonic()
    with pytest.raises(BadInput) as err:
        run_probe(ctx_for(path, timeout=0.5))
    assert time.monotonic() - start < 5
    assert "no answer within" in str(err.value) and "\n" not in str(err.value)


def test_bad_python_not_named_by_the_user_is_probe_unknown(tmp_path):
    env_dir = tmp_path / "broken-venv"
    (env_dir / "bin").mkdir(parents=True)
    _script(env_dir / "bin" / "python", "#!/bin/sh\nexit 1\n")
    with pytest.raises(ProbeUnknown) as err:
        run_probe(ctx_for(None, VIRTUAL_ENV=str(env_dir)))
    assert "env:VIRTUAL_ENV" in str(err.value)


def test_image_root_without_python_is_unknown(tmp_path):
    ctx = ctx_for(None)
    ctx.root = Root(tmp_path)
    with pytest.raises(ProbeUnknown):
        run_probe(ctx)


# -- the helper itself ----------------------------------------------------------------

def test_helper_is_python36_syntax_and_stdlib_only():
    source = pyenv.HELPER_PATH.read_text(encoding="utf-8")
    tree = ast.parse(source, feature_version=(3, 6))
    allowed = {"sys", "json", "os", "re", "site", "platform", "sysconfig"}
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported <= allowed, imported - allowed
    assert "__future__" not in imported


# -- a real venv with real CPU builds (CI sets it up) -----------------------------------

@pytest.mark.slow
def test_real_cpu_frameworks():
    python = os.environ.get("ENVDOCTOR_TEST_FW_PYTHON")
    if not python:
        pytest.skip("ENVDOCTOR_TEST_FW_PYTHON is not set")
    before = {m for m in sys.modules if m.split(".")[0] in FRAMEWORK_MODULES}
    snap = run_probe(ctx_for(python, timeout=30))
    torch = snap.framework("torch")
    assert torch is not None and Version(torch.version).public.startswith("2.13.0")
    assert Version(torch.version).base_version == "2.13.0"
    assert torch.build == "cpu" and torch.cuda_version is None
    tf = snap.framework("tensorflow")
    assert tf is not None and tf.distribution == "tensorflow-cpu" and tf.build == "cpu"
    jax = snap.framework("jax")
    assert jax is not None and jax.build == "cpu"
    assert snap.framework("jaxlib").build == "cpu"
    assert {m for m in sys.modules if m.split(".")[0] in FRAMEWORK_MODULES} == before


def test_in_process_walk_matches_the_helper_process():
    """For envdoctor's own environment the walk runs in-process; it must report what the helper process reports."""
    import sys as _sys

    from envdoctor.probes import pyenv as _pyenv
    from envdoctor.probes.base import ProbeContext as _Ctx

    ctx = _Ctx(env={k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "CONDA_PREFIX")})
    inproc = _pyenv._collect_in_process(_sys.executable, "envdoctor's own interpreter", ctx)
    assert inproc is not None
    spawned, reason = _pyenv.run_helper(_sys.executable, ctx.runner)
    assert spawned is not None, reason
    key = lambda d: sorted((x["normalized"], x["version"]) for x in d["dists"])  # noqa: E731
    assert key(inproc) == key(spawned)
    assert inproc["prefix"] == spawned["prefix"] and inproc["version"] == spawned["version"]


def test_in_process_walk_is_not_used_for_another_interpreter(tmp_path):
    from envdoctor.probes import pyenv as _pyenv
    from envdoctor.probes.base import ProbeContext as _Ctx

    ctx = _Ctx(env={"VIRTUAL_ENV": str(tmp_path)})
    assert _pyenv._collect_in_process(str(tmp_path / "bin" / "python"), "env:VIRTUAL_ENV", ctx) is None
