"""`envdoctor lock` as a user meets it: targets, formats read back against the matrices, -o, --check, errors."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import time

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from envdoctor import __version__
from envdoctor.entry import main
from envdoctor.knowledge import load_matrices
from envdoctor.lock.resolve import intersect
from tests.snapfactory import machine, tensorflow

EPOCH = "1764460800"  # 2025-11-30


@pytest.fixture(autouse=True)
def _env(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path_factory.mktemp("empty-cache")))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    return load_matrices(cache_dir=tmp_path_factory.mktemp("empty-cache-m"))


def lock(capsys, *args):
    """Run `envdoctor lock ARGS` in-process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exc:
        main(["lock", *args])
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def one_line_error(code, err):
    assert code == 2, err
    assert "Traceback" not in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    return lines[0]


def save(tmp_path, snap, name="snap.json"):
    p = tmp_path / name
    p.write_text(snap.to_json())
    return str(p)


# --------------------------------------------------------------------------- reading an output back


def pip_lines(text, fmt):
    if fmt == "json":
        return json.loads(text)["requirements"]
    if fmt == "conda":
        yaml = pytest.importorskip("yaml")
        data = yaml.safe_load(text)
        pips = [d["pip"] for d in data["dependencies"] if isinstance(d, dict) and "pip" in d]
        assert len(pips) == 1
        return pips[0]
    out = []
    for raw in text.splitlines():
        line = re.split(r"\s+#", raw, maxsplit=1)[0].strip()
        if line and not line.startswith("#"):
            out.append(line)
    return out


def data_pins(m, framework, version, build, platform="linux-x86_64"):
    """The nvidia-* specifiers the data holds for one build."""
    if framework == "torch":
        var = m.torch_variant(version, build)
        default = m.torch_default_variant(version, platform)
        if var.nvidia_pins and default is not None and default.name == var.name:
            return {canonicalize_name(k): v for k, v in var.nvidia_pins.items()}
        return {f"nvidia-cudnn-cu{var.cuda_major}": f"=={var.cudnn}"} if var.cudnn else {}
    if framework == "tensorflow":
        return {canonicalize_name(k): v for k, v in m.tf_release(version).and_cuda.items()}
    plugin = m.jax_release(version).plugins[build]
    out = {f"nvidia-cudnn-cu{plugin.cuda_major}": plugin.cudnn}
    if plugin.cuda_major == 12:
        out["nvidia-cuda-runtime-cu12"] = plugin.cuda_runtime
    return out


def assert_output_in_data(m, text, fmt, platform="linux-x86_64"):
    """Every index URL, variant, version and pin in the output is one the matrices hold. Returns the builds."""
    from envdoctor.default_index import default_index_hosts

    assert default_index_hosts(), "pip must be importable in the test environment"
    assert not [h for h in default_index_hosts() if h in text.lower()]
    all_urls = {v.index_url for r in m.pytorch_releases for v in r.variants if v.index_url}
    builds = {}
    urls = []
    reqs = []
    for line in pip_lines(text, fmt):
        if line.startswith("--extra-index-url"):
            url = line.split(None, 1)[1]
            assert url in all_urls, url
            urls.append(url)
            continue
        assert not line.startswith("-"), line
        reqs.append(Requirement(line))
    names = [canonicalize_name(r.name) for r in reqs]
    pins = {}
    for r in reqs:
        name = canonicalize_name(r.name)
        exact = [s.version for s in r.specifier if s.operator == "=="]
        if name == "torch":
            v = Version(exact[0])
            rel = m.torch_release(exact[0])
            assert rel is not None and rel.has_patch(exact[0])
            var = m.torch_variant(exact[0], v.local) if v.local else m.torch_default_variant(exact[0], platform)
            assert var is not None, f"{r} was never published"
            assert platform in var.platforms
            if v.local:
                assert var.local_label == "+" + v.local and var.index_url in urls
            builds["torch"] = (v.base_version, var.name, var)
        elif name == "tensorflow" or name == "tensorflow-cpu":
            rel = m.tf_release(exact[0])
            assert rel is not None and rel.tested == exact[0]
            builds["tensorflow"] = (exact[0], "and-cuda" if "and-cuda" in r.extras else "plain", rel)
        elif name == "jax":
            rel = m.jax_release(exact[0])
            assert rel is not None and rel.version == exact[0]
            plugin = sorted(r.extras)[0] if r.extras else None
            if plugin:
                assert plugin in rel.plugins
            builds["jax"] = (exact[0], plugin, rel)
        else:
            pins[name] = str(r.specifier)
    if "torch" in builds:
        patch = m.torch_release(builds["torch"][0]).patch(builds["torch"][0])
        for comp in ("torchvision", "torchaudio"):
            if comp in pins:
                assert pins.pop(comp) == f"=={getattr(patch, comp)}"
    if "jax" in builds and "jaxlib" in pins:
        assert SpecifierSet(pins.pop("jaxlib")) == SpecifierSet(builds["jax"][2].jaxlib)
    # the remaining lines are nvidia-* pins shared by the builds, each inside every build's own specifier
    sources = []
    if "torch" in builds and builds["torch"][2].kind == "cuda":
        sources.append(data_pins(m, "torch", builds["torch"][0], builds["torch"][1], platform))
    if "tensorflow" in builds and builds["tensorflow"][1] == "and-cuda":
        sources.append(data_pins(m, "tensorflow", builds["tensorflow"][0], None))
    if "jax" in builds and builds["jax"][1]:
        sources.append(data_pins(m, "jax", builds["jax"][0], builds["jax"][1]))
    for name, spec in pins.items():
        owners = [s[name] for s in sources if name in s]
        assert len(owners) >= 2, f"{name}{spec} is not a pin two builds share"
        assert intersect(tuple(owners) + (spec,)) is not None
        if spec.startswith("=="):
            assert all(SpecifierSet(o).contains(spec[2:], prereleases=True) for o in owners)
    assert len(names) == len(set(names)), "a package is pinned twice"
    return builds


def header(text):
    return [ln[1:].strip() for ln in text.splitlines() if ln.startswith("#")]


def assert_header(text, m, **expect):
    h = "\n".join(header(text))
    assert "command: envdoctor lock" in h
    assert f"envdoctor {__version__}" in h and f"data collected {m.collected}" in h
    assert "date: 2025-11-30" in h
    for key in ("driver floor:", "CUDA line:", "GPU archs:", "Python:", "platform:"):
        assert key in h
    for key, value in expect.items():
        line = next(ln for ln in h.splitlines() if ln.strip().startswith(key.replace("_", " ") + ":"))
        assert value in line, (key, line)


# --------------------------------------------------------------------------- targets


def test_cuda_target(capsys, m):
    code, out, err = lock(capsys, "--cuda", "12.1", "--gpu", "sm_86", "--python-version", "3.11")
    assert code == 0, err
    builds = assert_output_in_data(m, out, "requirements")
    version, name, var = builds["torch"]
    assert Version(var.cuda) <= Version("12.1") and Version(var.cuda).major == 12 and var.runs_on_cc("8.6")
    assert_header(out, m, CUDA_line="12.1", GPU_archs="sm_86", Python="3.11", platform="linux-x86_64",
                  driver_floor=m.mvc_floor(12))


def test_driver_target(capsys, m):
    code, out, err = lock(capsys, "--driver", "535.104.05", "--python-version", "3.11")
    assert code == 0, err
    version, name, var = assert_output_in_data(m, out, "requirements")["torch"]
    assert m.driver_runs_cuda("535.104.05", var.cuda) and var.cuda_major == 12
    assert_header(out, m, driver_floor="535.104.05")


def test_snapshot_target_uses_its_driver_gpus_python_and_installed_frameworks(capsys, m, tmp_path):
    snap = machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA GeForce RTX 4090:8.9"], python="3.11.7",
                   frameworks=[tensorflow("2.15.0", cuda="12.2", cudnn="8.9")])
    code, out, err = lock(capsys, "--snapshot", save(tmp_path, snap))
    assert code == 0, err
    builds = assert_output_in_data(m, out, "requirements")
    assert set(builds) == {"torch", "tensorflow"}  # torch by default, tensorflow because it is installed
    assert builds["torch"][2].runs_on_cc("8.9") and m.driver_runs_cuda("550.54.15", builds["torch"][2].cuda)
    assert_header(out, m, GPU_archs="sm_89 (NVIDIA GeForce RTX 4090)", Python="3.11")
    assert "from snapshot" in "\n".join(header(out))


def test_snapshot_gpu_known_only_by_name(capsys, m, tmp_path):
    snap = machine(driver="535.104.05", gpus=["NVIDIA A100-SXM4-80GB"], python="3.10.12")
    code, out, err = lock(capsys, "--snapshot", save(tmp_path, snap), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["record"]["gpus"][0]["cc"] == m.cc_for_gpu_name("NVIDIA A100-SXM4-80GB")
    assert data["record"]["python"] == "3.10"
    assert_output_in_data(m, out, "json")


def test_snapshot_with_cuda_line_caps_the_machine(capsys, m, tmp_path):
    snap = machine(driver="580.65.06", gpus=["NVIDIA H100 80GB HBM3:9.0"], python="3.11.7")
    code, out, _ = lock(capsys, "--snapshot", save(tmp_path, snap), "--cuda", "12.4")
    var = assert_output_in_data(m, out, "requirements")["torch"][2]
    assert code == 0 and Version(var.cuda) <= Version("12.4") and var.cuda_major == 12


def test_stated_gpu_by_name(capsys, m):
    code, out, err = lock(capsys, "--gpu", "NVIDIA GeForce RTX 5090", "--driver", "575.51.03", "--python-version", "3.12")
    assert code == 0, err
    var = assert_output_in_data(m, out, "requirements")["torch"][2]
    assert var.runs_on_cc("12.0") is True
    assert "Python: 3.12" in "\n".join(header(out))


def test_cpu_lock_for_macos_has_no_index_line(capsys, m):
    code, out, err = lock(capsys, "--cpu", "--platform", "macos-arm64", "--python-version", "3.12", "--torch")
    assert code == 0, err
    builds = assert_output_in_data(m, out, "requirements", platform="macos-arm64")
    assert builds["torch"][2].kind == "cpu" and "--extra-index-url" not in out


COMBOS = [["--torch"], ["--torch", "--tensorflow"], ["--torch", "--jax"], ["--torch", "--tensorflow", "--jax"],
          ["--tensorflow"], ["--jax"]]


@pytest.mark.parametrize("fmt", ["requirements", "conda", "json"])
@pytest.mark.parametrize("fws", COMBOS, ids=lambda f: "+".join(x[2:] for x in f))
def test_framework_combinations_every_format(capsys, m, fws, fmt):
    code, out, err = lock(capsys, "--driver", "570.86.10", "--gpu", "sm_80", "--python-version", "3.11",
                          "--format", fmt, *fws)
    assert code == 0, err
    builds = assert_output_in_data(m, out, fmt)
    assert set(builds) == {f[2:] for f in fws}
    if fmt == "conda":
        yaml = pytest.importorskip("yaml")
        deps = yaml.safe_load(out)["dependencies"]
        assert "python=3.11" in deps and "conda-forge" in yaml.safe_load(out)["channels"]
        cuda = [d for d in deps if isinstance(d, str) and d.startswith("cuda-version=")]
        cudas = [b[2].cuda for k, b in builds.items() if k == "torch"] + \
                [b[2].cuda for k, b in builds.items() if k == "tensorflow"]
        assert len(cuda) == 1
        if cudas:
            assert Version(cuda[0].split("=", 1)[1]) >= max(Version(c) for c in cudas)


@pytest.mark.parametrize("args", [
    ["--cuda", "11.8"], ["--cuda", "12.4"], ["--cuda", "12.6"], ["--cuda", "12.8"], ["--cuda", "13.0"],
    ["--cuda", "12.1", "--platform", "win-amd64"], ["--driver", "580.65.06", "--platform", "linux-aarch64"],
    ["--cpu", "--platform", "linux-x86_64"], ["--cpu", "--platform", "win-amd64"],
    ["--cuda", "12.4", "--torch=2.4"], ["--cuda", "11.8", "--torch=>=2.0,<2.2", "--python-version", "3.10"],
    ["--platform", "wsl2", "--driver", "560.94", "--torch", "--tensorflow"],
])
def test_every_variant_index_and_version_exists(capsys, m, args):
    extra = [] if "--python-version" in args else ["--python-version", "3.11"]
    code, out, err = lock(capsys, *args, *extra)
    assert code == 0, err
    platform = next((args[i + 1] for i, a in enumerate(args) if a == "--platform"), "linux-x86_64")
    assert_output_in_data(m, out, "requirements", platform="linux-x86_64" if platform == "wsl2" else platform)


def test_runs_well_under_a_second(capsys):
    start = time.process_time()
    code, _, _ = lock(capsys, "--driver", "570.86.10", "--gpu", "sm_90", "--torch", "--tensorflow", "--jax",
                      "--python-version", "3.11", "--format", "conda")
    assert code == 0 and time.process_time() - start < 1.0


# --------------------------------------------------------------------------- clashes


def test_clash_exits_1_and_explains(capsys):
    # on the CUDA 12 line (without one, lock takes a torch for CUDA 11.8 and warns: tests/test_cuda_mix.py)
    code, out, err = lock(capsys, "--driver", "535.104.05", "--torch", "--tensorflow=2.16", "--python-version", "3.11",
                          "--cuda", "12")
    assert code == 1 and out == ""
    from envdoctor.knowledge import load_matrices

    newest = load_matrices().tf_release("2.16").versions[-1]  # the newest 2.16 release the data knows
    assert f"tensorflow {newest}" in err and "two environments" in err and "without" in err


def test_clash_json(capsys):
    # R418 drives a Turing GPU but runs no CUDA 11+ build (R470 with sm_120 is refused outright: tests/test_gpu_support.py)
    code, out, _ = lock(capsys, "--driver", "418.39", "--gpu", "sm_75", "--python-version", "3.11",
                        "--format", "json")
    data = json.loads(out)["clash"]
    assert code == 1 and data["ok"] is False and data["reasons"]
    assert any(r["fits"] and "driver" in r["dropped"] for r in data["relaxations"])


# --------------------------------------------------------------------------- bad targets: one line, exit 2


@pytest.mark.parametrize("args, needle", [
    (["--cuda", "99"], "12.1"),
    (["--cuda", "12.4", "--gpu", "sm_99"], "sm_90"),
    (["--cuda", "12.4", "--gpu", "Voodoo 5 6000"], "sm_86"),
    (["--cuda", "12.4", "--python-version", "3.4"], "supports Python"),  # torch 1.0-1.5 had cp35 wheels
    (["--cpu", "--cuda", "12.1"], "--cpu"),
    (["--cuda", "12.1", "--platform", "macos-arm64"], "--cpu"),
    (["--cuda", "12.1", "--python", "3.11", "--python-version", "3.12"], "disagree"),
    (["--cuda", "12.1", "--torch", "9.9"], "known"),
    (["--driver", "banana"], "driver"),
    (["--cuda", "12.1", "--companions", "torchtext"], "torchvision"),
    (["--check", "x.txt", "-o", "y.txt"], "--check"),
    (["--check", "/nonexistent/lock.txt", "--cuda", "12.1"], "no such file"),
    (["--cuda", "12.1", "--force"], "-o"),
])
def test_bad_targets_one_line(capsys, args, needle):
    code, _, err = lock(capsys, *args)
    assert needle in one_line_error(code, err)


def test_machine_without_driver_is_not_locked_to_cpu(capsys, tmp_path):
    code, out, err = lock(capsys, "--snapshot", save(tmp_path, machine(python="3.11.7")))
    line = one_line_error(code, err)
    assert "no usable NVIDIA driver" in line and "--cpu" in line and out == ""


def test_unknown_gpu_in_snapshot(capsys, tmp_path):
    snap = machine(driver="535.104.05", gpus=["Mystery Accelerator 9000"])
    assert "--gpu" in one_line_error(*lock(capsys, "--snapshot", save(tmp_path, snap))[::2])


# --------------------------------------------------------------------------- -o


def test_output_refuses_a_different_file(capsys, tmp_path):
    target = tmp_path / "requirements-cuda.txt"
    code, _, err = lock(capsys, "--cuda", "12.1", "--python-version", "3.11", "-o", str(target))
    assert code == 0, err
    first = target.read_bytes()
    mtime = target.stat().st_mtime_ns
    # identical content: a no-op success
    code, _, err = lock(capsys, "--cuda", "12.1", "--python-version", "3.11", "-o", str(target))
    assert code == 0 and "unchanged" in err and target.stat().st_mtime_ns == mtime
    # a different lock: refused, file untouched
    code, _, err = lock(capsys, "--cuda", "12.4", "--python-version", "3.11", "-o", str(target))
    assert "--force" in one_line_error(code, err)
    assert target.read_bytes() == first
    code, _, err = lock(capsys, "--cuda", "12.4", "--python-version", "3.11", "-o", str(target), "--force")
    assert code == 0 and target.read_bytes() != first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["requirements-cuda.txt"]  # no temp files left


def test_clash_writes_nothing(capsys, tmp_path):
    target = tmp_path / "env.yml"
    code, _, _ = lock(capsys, "--driver", "390.12", "--python-version", "3.11", "-o", str(target))
    assert code == 1 and not target.exists()


# --------------------------------------------------------------------------- --check


@pytest.mark.parametrize("fmt", ["requirements", "conda", "json"])
def test_check_roundtrip_and_old_driver(capsys, m, tmp_path, fmt):
    path = tmp_path / f"lock.{fmt}"
    code, _, err = lock(capsys, "--cuda", "12.1", "--gpu", "sm_80", "--python-version", "3.11", "--format", fmt,
                        "-o", str(path))
    assert code == 0, err
    text = path.read_text()
    torch_line = next(x for x in pip_lines(text, fmt) if x.startswith("torch=="))
    label = "torch " + torch_line.split("==", 1)[1]
    # a machine that fits
    good = machine(driver="535.104.05", gpus=["NVIDIA A100-SXM4-80GB:8.0"], python="3.11.7")
    code, out, err = lock(capsys, "--check", str(path), "--snapshot", save(tmp_path, good))
    assert code == 0 and "fits" in out, out + err
    # a driver too old for CUDA 12
    code, out, _ = lock(capsys, "--check", str(path), "--driver", "470.57.02")
    assert code == 1
    assert f"the driver 470.57.02 cannot run {label} (needs >= {m.mvc_floor(12)})" in out
    # a GPU the build has no kernels for, a Python it has no wheels for
    blackwell = machine(driver="575.51.03", gpus=["NVIDIA GeForce RTX 5090:12.0"], python="3.14.0")
    code, out, _ = lock(capsys, "--check", str(path), "--snapshot", save(tmp_path, blackwell, "b.json"))
    assert code == 1 and "sm_120" in out and "Python 3.14" in out
    # a machine with no driver at all
    code, out, _ = lock(capsys, "--check", str(path), "--snapshot", save(tmp_path, machine(python="3.11.7"), "n.json"))
    assert code == 1 and "no usable NVIDIA driver" in out


def test_check_edited_file(capsys, tmp_path):
    path = tmp_path / "requirements-cuda.txt"
    code, _, _ = lock(capsys, "--cuda", "12.1", "--python-version", "3.11", "-o", str(path))
    text = path.read_text()
    new = re.sub(r"^torch==\S+", "torch==2.9.0+cu121", text, flags=re.MULTILINE)
    assert new != text
    path.write_text(new)
    code, out, _ = lock(capsys, "--check", str(path), "--driver", "550.54.15")
    assert code == 1 and "never published" in out


def test_check_names_the_first_release_with_and_cuda_from_the_data(capsys, m, tmp_path, monkeypatch):
    """An [and-cuda] pin on a release without that extra: the message quotes the data's fact (tf-and-cuda-first),
    so a cache overlay that changes the fact changes the message (the code holds no release number)."""
    old = next(r.tested for r in m.tensorflow_releases if not r.and_cuda and r.gpu_platforms)
    path = tmp_path / "tf.txt"
    path.write_text(f"tensorflow[and-cuda]=={old}\n")
    code, out, _ = lock(capsys, "--check", str(path), "--driver", "550.54.15")
    assert code == 1
    assert f"tensorflow {old} has no [and-cuda] extra (first in {m.fact_value('tf-and-cuda-first')})" in out, out
    cache = tmp_path / "cache"
    (cache / "matrices").mkdir(parents=True)
    (cache / "matrices" / "incompatibilities.toml").write_text(
        'schema = "incompatibilities/v1"\ncollected = "2027-02-02"\n\n[[fact]]\nkey = "tf-and-cuda-first"\n'
        'value = "2.99"\nsummary = "s"\nsource = "test"\nverified = "test"\n', encoding="utf-8")
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(cache))
    code, out, _ = lock(capsys, "--check", str(path), "--driver", "550.54.15")
    assert code == 1 and "(first in 2.99)" in out, out


def test_check_json_output(capsys, tmp_path):
    path = tmp_path / "r.txt"
    lock(capsys, "--cuda", "12.4", "--python-version", "3.11", "-o", str(path))
    code, out, _ = lock(capsys, "--check", str(path), "--driver", "470.57.02", "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["ok"] is False and data["problems"]


def test_check_rejects_a_file_without_pins(capsys, tmp_path):
    p = tmp_path / "empty.txt"
    p.write_text("# nothing here\n")
    assert "no pinned requirements" in one_line_error(*lock(capsys, "--check", str(p), "--cuda", "12.1")[::2])


def test_help_lists_lock():
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "lock", "--help"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "--check" in proc.stdout and "--python-version" in proc.stdout


# --------------------------------------------------------------------------- the real package index


def _pip(args, timeout=300):
    return subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})


def _dry_run(req_file, no_deps=False):
    args = ["install", "--dry-run", "--ignore-installed", "--report", "-", "--quiet", "--retries", "0",
            "--timeout", "15", "-r", str(req_file)]
    if no_deps:
        args.insert(3, "--no-deps")
    return _pip(args)


def _served_or_skip(req_file):
    proc = _dry_run(req_file, no_deps=True)
    if proc.returncode != 0:
        pytest.skip("the configured package index does not serve these pins: " + proc.stderr.strip()[-300:])


def _installed(report_text):
    report = json.loads(report_text)
    return {canonicalize_name(i["metadata"]["name"]): i["metadata"]["version"] for i in report["install"]}


@pytest.mark.network
@pytest.mark.slow
def test_cpu_lock_resolves_with_pip(capsys, tmp_path):
    """A CPU lock of torch 2.13.0 + tensorflow + jax, resolved by pip against the configured index."""
    py = f"{sys.version_info[0]}.{sys.version_info[1]}"
    req = tmp_path / "requirements.txt"
    code, _, err = lock(capsys, "--cpu", "--platform", "linux-x86_64", "--python-version", py, "--torch=2.13.0",
                        "--tensorflow", "--jax", "--companions", "torchvision", "-o", str(req))
    if code != 0:
        pytest.skip(f"no CPU lock for Python {py}: {err.strip()}")
    _served_or_skip(req)
    proc = _dry_run(req)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = _installed(proc.stdout)
    for line in pip_lines(req.read_text(), "requirements"):
        if line.startswith("-"):
            continue
        r = Requirement(line)
        name = canonicalize_name(r.name)
        assert name in got, f"pip did not install {name}"
        assert r.specifier.contains(got[name], prereleases=True), (line, got[name])


@pytest.mark.network
@pytest.mark.slow
def test_gpu_lock_resolves_with_pip_and_pins_agree_with_the_data(capsys, m, tmp_path):
    """The PyPI default CUDA build of torch: pip's resolution installs exactly the nvidia-* pins the data holds."""
    py = f"{sys.version_info[0]}.{sys.version_info[1]}"
    req = tmp_path / "requirements-cuda.txt"
    code, _, err = lock(capsys, "--cuda", "13.0", "--gpu", "sm_90", "--python-version", py, "--torch=2.14.1",
                        "--companions", "torchvision", "-o", str(req))
    if code != 0:
        pytest.skip(f"no lock for Python {py}: {err.strip()}")
    _served_or_skip(req)
    proc = _dry_run(req)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = _installed(proc.stdout)
    builds = assert_output_in_data(m, req.read_text(), "requirements")
    version, name, var = builds["torch"]
    assert got["torch"] == version
    for pkg, spec in var.nvidia_pins.items():
        pkg = canonicalize_name(pkg)
        assert pkg in got, pkg
        assert SpecifierSet(spec).contains(got[pkg], prereleases=True), (pkg, spec, got[pkg])


@pytest.mark.parametrize("fmt", ["requirements", "conda", "json"])
@pytest.mark.parametrize("source", ["stated", "snapshot"])
def test_check_offers_the_relock_command_and_it_fits(capsys, tmp_path, fmt, source):
    """The re-lock command lock --check prints is lock's own answer: run as printed it writes a lock that --check of
    the same target then accepts, pinning what the message said."""
    path = tmp_path / f"lock.{fmt}"
    code, _, err = lock(capsys, "--driver", "580.65.06", "--gpu", "sm_90", "--python-version", "3.11",
                        "--format", fmt, "-o", str(path))
    assert code == 0, err
    if source == "stated":
        target = ["--driver", "535.104.05"]  # GPU and Python: as the lock assumed them
    else:
        target = ["--snapshot", save(tmp_path, machine(driver="535.104.05", gpus=["NVIDIA H100 80GB HBM3:9.0"],
                                                       python="3.11.7"))]
    code, out, _ = lock(capsys, "--check", str(path), *target)
    assert code == 1 and "no longer fits" in out, out
    said = re.search(r"re-lock for this target \(it pins (.+)\):\n  \$ (envdoctor lock .+)", out)
    assert said, out
    argv = shlex.split(said.group(2))
    assert argv[:2] == ["envdoctor", "lock"] and argv[-3:] == ["-o", str(path), "--force"]
    code, _, err = lock(capsys, *argv[2:])
    assert code == 0, err
    code, out, _ = lock(capsys, "--check", str(path), *target)
    assert code == 0 and out.strip() == f"{path} fits: {said.group(1)}", out
    # JSON says the same
    code, out, _ = lock(capsys, "--check", str(path), *target, "--format", "json")
    assert code == 0 and json.loads(out)["relock"] is None


def test_check_says_when_no_relock_fits(capsys, tmp_path):
    path = tmp_path / "l.txt"
    assert lock(capsys, "--driver", "580.65.06", "--python-version", "3.11", "-o", str(path))[0] == 0
    old = ["--driver", "418.40.04", "--gpu", "sm_70"]  # no CUDA build of torch runs on R418 (CUDA 10.1)
    code, out, _ = lock(capsys, "--check", str(path), *old)
    assert code == 1 and "no lock of these frameworks fits this target" in out, out
    cmd = out.rsplit("$ ", 1)[1].strip()
    assert "--driver 418.40.04" in cmd and " -o " not in cmd
    code, _, err = lock(capsys, *shlex.split(cmd)[2:])
    assert code == 1 and err, err  # lock itself says which constraints clash
    code, out, _ = lock(capsys, "--check", str(path), *old, "--format", "json")
    assert json.loads(out)["relock"]["fits"] is False


def test_a_pin_behind_a_python_marker_applies_only_where_the_marker_holds(capsys):
    """torch 2.13-2.15's wheels require cuda-bindings only for `python_version < "3.15"` (their Requires-Dist,
    read from the cp311 and cp315 wheels of 2.15.0): a lock for Python 3.14 carries the pin, one for 3.15 does not,
    as pip would install it."""
    pins = {}
    for py in ("3.14", "3.15"):
        code, out, err = lock(capsys, "--python-version", py, "--driver", "595.71.05", "--gpu", "sm_90", "--torch",
                              "2.15.0", "--platform", "linux-x86_64", "--format", "json")
        assert code == 0, err
        picks = [p for p in json.loads(out)["lock"]["picks"] if p.get("framework") == "torch"]
        assert len(picks) == 1, picks
        pins[py] = picks[0]["pins"]
    assert "cuda-bindings" in pins["3.14"] and "cuda-bindings" not in pins["3.15"], pins
    assert {k: v for k, v in pins["3.14"].items() if k != "cuda-bindings"} == pins["3.15"]
