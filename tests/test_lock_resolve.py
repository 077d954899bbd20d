"""envdoctor.lock.resolve: pure resolution of constraints against the matrices (no machine, no network)."""
from __future__ import annotations

import time

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.errors import BadInput
from envdoctor.facts.cuda_mix import mixed_majors
from envdoctor.knowledge import load_matrices
from envdoctor.lock.resolve import (
    Constraints,
    FrameworkRequest,
    GpuTarget,
    PinnedRequirement,
    check,
    intersect,
    merged_spec,
    normalize_spec,
    resolve,
)


@pytest.fixture(scope="module")
def m(tmp_path_factory):
    # bundled data only: a refreshed user cache must not change what the tests see
    return load_matrices(cache_dir=tmp_path_factory.mktemp("empty-cache"))


def fw(*names, **specs):
    out = [FrameworkRequest(n) for n in names]
    out += [FrameworkRequest(n, s) for n, s in specs.items()]
    return out


def V(x):
    return Version(x)


# --------------------------------------------------------------------------- helpers asserting against the data


def assert_pick_in_data(m, p, platform="linux-x86_64"):
    """The pick is a build the data lists, and its requirement line says exactly that build."""
    if p.framework == "torch":
        rel = m.torch_release(p.version)
        assert rel is not None and rel.has_patch(p.version)
        var = m.torch_variant(p.version, p.build)
        assert var is not None, f"{p.label} was never published"
        assert platform in var.platforms
        default = m.torch_default_variant(p.version, platform)
        if default is not None and default.name == var.name:
            assert p.requirement == f"torch=={p.version}" and p.index_url is None
        else:
            assert p.requirement == f"torch=={p.version}{var.local_label}"
            assert p.index_url == var.index_url
        assert p.cuda == var.cuda
    elif p.framework == "tensorflow":
        rel = m.tf_release(p.version)
        assert rel is not None and rel.tested == p.version
        if p.kind == "cuda":
            assert p.cuda == rel.cuda
            expected = f"tensorflow[and-cuda]=={p.version}" if rel.and_cuda else f"tensorflow=={p.version}"
            assert p.requirement == expected
    else:
        rel = m.jax_release(p.version)
        assert rel is not None and rel.version == p.version
        if p.kind == "cuda":
            assert p.build in rel.plugins
            assert p.requirement == f"jax[{p.build}]=={p.version}"
        else:
            assert p.requirement == f"jax=={p.version}"


def assert_pins_agree(lock):
    """Every package two builds require has the agreed spec inside every build's own specifier."""
    owners = {}
    for p in lock.picks:
        for name, spec in p.pins.items():
            owners.setdefault(name, []).append(spec)
    shared = {s.name: s for s in lock.shared_pins}
    for name, specs in owners.items():
        if len(specs) < 2:
            assert name not in shared
            continue
        agreed = shared[name].spec
        witness = intersect(tuple(specs))
        assert witness is not None
        if agreed.startswith("=="):
            for s in specs:
                assert SpecifierSet(s).contains(agreed[2:], prereleases=True)


def fitting_torch(m, c):
    """Independent oracle: (patch, variant) pairs the data holds that satisfy the single-build constraints."""
    out = []
    for rel in m.pytorch_releases:
        for patch in rel.patches:
            spec = rel.python_spec(patch)
            if c.python and spec is not None and not spec.contains(c.python):
                continue
            for var in rel.variants:
                if var.kind != "cuda" or c.platform not in var.platforms:
                    continue
                cv = V(var.cuda)
                if c.cuda:
                    line = V(c.cuda)
                    if cv.major != line.major or (cv.major, cv.minor) > (line.major, line.minor):
                        continue
                if c.driver and not m.driver_runs_cuda(c.driver, var.cuda):
                    continue
                if any(var.runs_on_cc(g.cc) is not True for g in c.gpus):
                    continue
                cudnn = m.cudnn_release(var.cudnn) if var.cudnn else None
                if cudnn is not None and any(V(g.cc) < V(cudnn.min_cc(cv.major)) for g in c.gpus):
                    continue  # the cuDNN it brings does not support that GPU
                out.append((V(patch), V(var.cuda), var))
    return out


# --------------------------------------------------------------------------- targets


@pytest.mark.parametrize("line", ["11.8", "12.1", "12.4", "12.6", "12.8", "13.0", "13.2"])
def test_cuda_line_gives_newest_build_within_the_line(m, line):
    c = Constraints(cuda=line, python="3.11")
    lock = resolve(c, m)
    assert lock.ok
    t = lock.pick("torch")
    assert_pick_in_data(m, t)
    assert V(t.cuda).major == V(line).major and V(t.cuda) <= V(line)
    oracle = fitting_torch(m, c)
    newest_patch = max(p for p, _, _ in oracle)
    assert V(t.version) == newest_patch
    assert V(t.cuda) == max(cu for p, cu, _ in oracle if p == newest_patch)


def test_cuda_major_only_means_any_minor(m):
    lock = resolve(Constraints(cuda="12", python="3.11"), m)
    assert lock.ok and V(lock.pick("torch").cuda).major == 12


@pytest.mark.parametrize("driver", ["470.57.02", "535.104.05", "570.86.10", "580.65.06"])
def test_driver_target_uses_minor_version_compatibility(m, driver):
    c = Constraints(driver=driver, python="3.11")
    lock = resolve(c, m)
    assert lock.ok
    t = lock.pick("torch")
    assert m.driver_runs_cuda(driver, t.cuda)
    # the newest build any driver-runnable variant allows
    oracle = fitting_torch(m, c)
    assert V(t.version) == max(p for p, _, _ in oracle)
    assert lock.driver_floor is not None and V(lock.driver_floor) <= V(driver)


def test_old_driver_gets_cuda11_build_not_a_cpu_one(m):
    lock = resolve(Constraints(driver="470.57.02", python="3.11"), m)
    t = lock.pick("torch")
    assert t.kind == "cuda" and V(t.cuda).major == 11
    assert lock.driver_floor == m.mvc_floor(11)


@pytest.mark.parametrize("cc", ["3.7", "6.1", "7.0", "8.6", "8.9", "9.0", "12.0"])
def test_every_gpu_has_kernels_in_the_pick(m, cc):
    c = Constraints(gpus=[GpuTarget(cc)], python="3.11")
    lock = resolve(c, m)
    assert lock.ok, lock.message()
    t = lock.pick("torch")
    var = m.torch_variant(t.version, t.build)
    assert var.runs_on_cc(cc) is True
    assert V(t.version) == max(p for p, _, _ in fitting_torch(m, c))


def test_two_gpus_both_compiled_in(m):
    gpus = [GpuTarget("3.7", "Tesla K80"), GpuTarget("9.0", "H100")]
    lock = resolve(Constraints(gpus=gpus, python="3.10"), m)
    assert lock.ok
    var = m.torch_variant(lock.pick("torch").version, lock.pick("torch").build)
    assert var.runs_on_cc("3.7") and var.runs_on_cc("9.0")


@pytest.mark.parametrize("py", ["3.8", "3.9", "3.12", "3.13"])
def test_python_version_constrains_the_release(m, py):
    lock = resolve(Constraints(python=py), m)
    t = lock.pick("torch")
    rel = m.torch_release(t.version)
    assert rel.python_spec(t.version).contains(py)


@pytest.mark.parametrize("platform", ["linux-x86_64", "linux-aarch64", "win-amd64"])
def test_platform_constrains_the_variant(m, platform):
    lock = resolve(Constraints(platform=platform, python="3.12"), m)
    assert lock.ok
    assert_pick_in_data(m, lock.pick("torch"), platform)


def test_windows_cuda_build_needs_its_index(m):
    lock = resolve(Constraints(platform="win-amd64", cuda="12.4", python="3.11"), m)
    t = lock.pick("torch")
    assert t.index_url and t.requirement.endswith(m.torch_variant(t.version, t.build).local_label)


def test_pypi_default_build_has_no_index_line(m):
    rel = max(m.pytorch_releases, key=lambda r: V(r.version))
    default = rel.default_variant("linux-x86_64")
    lock = resolve(Constraints(cuda=default.cuda, frameworks=fw(torch=rel.newest_patch), python="3.12"), m)
    t = lock.pick("torch")
    assert t.build == default.name and t.index_url is None and t.requirement == f"torch=={rel.newest_patch}"
    assert lock.index_urls() == []


def test_cpu_only_when_asked(m):
    lock = resolve(Constraints(cpu=True, frameworks=fw("torch", "tensorflow", "jax"), python="3.11"), m)
    assert lock.ok and all(p.kind == "cpu" for p in lock.picks)
    assert lock.pick("torch").build == "cpu"
    for p in lock.picks:
        assert_pick_in_data(m, p)


def test_never_falls_back_to_cpu(m):
    # nothing CUDA fits: a clash, not a CPU build
    result = resolve(Constraints(driver="390.12", python="3.11"), m)
    assert not result.ok
    assert "driver" in result.message()


def test_variant_spec_picks_that_variant(m):
    lock = resolve(Constraints(frameworks=fw(torch="2.5.1+cu121"), python="3.11"), m)
    assert lock.pick("torch").requirement == "torch==2.5.1+cu121"


# --------------------------------------------------------------------------- framework combinations


COMBOS = [("torch",), ("torch", "tensorflow"), ("torch", "jax"), ("torch", "tensorflow", "jax"), ("tensorflow",), ("jax",)]


@pytest.mark.parametrize("names", COMBOS)
@pytest.mark.parametrize("target", [dict(), dict(cuda="12.6"), dict(driver="550.54.15", gpus=[GpuTarget("8.0")])])
def test_framework_combinations(m, names, target):
    c = Constraints(frameworks=fw(*names), python="3.11", **target)
    lock = resolve(c, m)
    assert lock.ok, lock.message()
    assert [p.framework for p in lock.picks] == list(names)
    for p in lock.picks:
        assert p.kind == "cuda"
        assert_pick_in_data(m, p)
        if c.driver:
            assert m.driver_runs_cuda(c.driver, p.cuda)
    majors = {p.cuda_major for p in lock.picks}
    assert len(majors) == 1, "one CUDA major per environment"
    assert_pins_agree(lock)


def test_shared_cudnn_pin_is_written(m):
    lock = resolve(Constraints(frameworks=fw("torch", "tensorflow"), python="3.11"), m)
    names = {s.name for s in lock.shared_pins}
    assert any(n.startswith("nvidia-cudnn") for n in names)


def test_torch_and_tensorflow_exact_pins_really_conflict(m):
    """TF 2.16 pins the whole nvidia-*-cu12 set exactly; no torch build of CUDA 12 pins the same ones. Without a CUDA
    line lock falls back to a torch of another CUDA major and warns (facts/cuda_mix.py, check's ED662); on the CUDA 12
    line it refuses."""
    mixed = resolve(Constraints(frameworks=fw("torch", tensorflow="2.16"), python="3.11"), m)
    assert mixed.ok
    assert len({p.cuda_major for p in mixed.picks}) == 2
    assert mixed_majors([(p.label, p.cuda_major, p.cudnn) for p in mixed.picks]) in mixed.warnings
    result = resolve(Constraints(frameworks=fw("torch", tensorflow="2.16"), python="3.11", cuda="12"), m)
    assert not result.ok
    msg = result.message()
    newest = m.tf_release("2.16").versions[-1]  # the newest 2.16 release the data knows (2.16.2)
    assert f"tensorflow {newest}" in msg
    two_envs = [r for r in result.relaxations if "two environments" in r.dropped and r.lock is not None]
    assert len(two_envs) == 1  # the same split is not suggested twice
    any_tf = [r for r in result.relaxations if r.dropped.startswith("tensorflow==2.16.*")]
    assert any_tf and any_tf[0].lock is not None
    for p in any_tf[0].lock.picks:
        assert_pick_in_data(m, p)
    assert_pins_agree(any_tf[0].lock)


def test_clash_names_each_constraint_and_relaxations_are_real(m):
    # R418 drives a Turing GPU but runs no CUDA 11+ build: dropping the driver gives a lock that runs on the GPU,
    # dropping the GPU does not help (no build runs on R418 at all)
    c = Constraints(driver="418.39", gpus=[GpuTarget("7.5", "Tesla T4")], python="3.11")
    result = resolve(c, m)
    assert not result.ok
    msg = result.message()
    assert "the driver 418.39" in msg
    no_driver = next(r for r in result.relaxations if "driver" in r.dropped)
    no_gpu = next(r for r in result.relaxations if r.dropped.startswith("GPU"))
    assert no_driver.lock is not None and m.torch_variant(no_driver.lock.pick("torch").version,
                                                          no_driver.lock.pick("torch").build).runs_on_cc("7.5")
    assert no_gpu.lock is None


def test_a_driver_branch_that_cannot_drive_the_gpu_is_refused_not_relaxed(m):
    # R470 does not bind an RTX 5090 at all (Blackwell needs R570+, matrices/gpu_support.toml): no build helps
    with pytest.raises(BadInput, match=r"R470.*Blackwell.*R570 or newer"):
        resolve(Constraints(driver="470.57.02", gpus=[GpuTarget("12.0", "NVIDIA GeForce RTX 5090")], python="3.11"), m)


def test_clash_with_a_version_spec_talks_about_that_version(m):
    result = resolve(Constraints(frameworks=fw(torch="2.5.1"), gpus=[GpuTarget("12.0")], python="3.11"), m)
    assert not result.ok
    reason = result.reasons[0]
    assert "torch==2.5.1" in reason and "sm_120" in reason
    assert "2.5.1+" in reason and "2.15" not in reason  # the example is a 2.5.1 build, not the newest torch


def test_k80_gets_a_cudnn_that_supports_it(m):
    lock = resolve(Constraints(gpus=[GpuTarget("3.7", "Tesla K80")], python="3.10"), m)
    t = lock.pick("torch")
    assert V(m.cudnn_release(t.cudnn).min_cc(t.cuda_major)) <= V("3.7")


def test_clash_with_cuda_line_suggests_dropping_it(m):
    result = resolve(Constraints(cuda="11.8", gpus=[GpuTarget("12.0")], python="3.11"), m)
    assert not result.ok
    drop = next(r for r in result.relaxations if r.dropped.startswith("--cuda"))
    assert drop.lock is not None and V(drop.lock.pick("torch").cuda) > V("11.8")


def test_ptx_only_fit_needs_toolkit_driver(m):
    # tensorflow with compute_90 PTX on a Blackwell GPU: JIT needs the toolkit driver of its CUDA. A driver between
    # the MVC floor and that toolkit driver is older than Blackwell's first branch (R570), so it is refused as such
    rel = next(r for r in sorted(m.tensorflow_releases, key=lambda r: V(r.tested), reverse=True)
               if any(a.startswith("compute_") for a in r.compute_capabilities))
    toolkit = m.min_driver_for_cuda(rel.cuda)
    floor = m.mvc_floor(V(rel.cuda).major)
    assert V(floor) < V(toolkit)
    c = Constraints(frameworks=fw(tensorflow=rel.tested), driver=floor, gpus=[GpuTarget("12.0")], python="3.11")
    with pytest.raises(BadInput, match="R570 or newer"):
        resolve(c, m)
    first = max(toolkit, m.min_driver_for_cuda("12.8"), key=V)  # the toolkit driver, and Blackwell's first branch
    # even then TensorFlow cannot use it: XLA must generate sm_120 code, which its CUDA cannot (check's ED200 and
    # gate say so; lock used to write it)
    refused = resolve(c.copy(driver=first), m)
    assert not refused.ok and "XLA cannot generate code" in " ".join(refused.reasons)


def test_relaxation_is_fast(m):
    start = time.process_time()
    resolve(Constraints(frameworks=fw("torch", "jax", tensorflow="2.16"), python="3.11",
                        gpus=[GpuTarget("12.0")], driver="570.26"), m)
    assert time.process_time() - start < 1.0


# --------------------------------------------------------------------------- bad targets


@pytest.mark.parametrize("changes, needle", [
    (dict(cuda="99"), "12.1"),
    (dict(cuda="12.7"), "12.8"),
    (dict(gpus=[GpuTarget("9.9")]), "sm_90"),
    (dict(python="3.4"), "supports Python"),  # no torch ever had a wheel for 3.4
    (dict(python="2.7"), "Python 3"),
    (dict(cpu=True, cuda="12.1"), "--cpu"),
    (dict(platform="macos-arm64"), "--cpu"),
    (dict(platform="solaris"), "linux-x86_64"),
    (dict(driver="abc"), "driver"),
    (dict(frameworks=fw(torch="9.9")), "known"),
    (dict(frameworks=fw(torch="not a version")), "specifier"),
    (dict(frameworks=[]), "--torch"),
])
def test_bad_targets(m, changes, needle):
    c = Constraints(python="3.11").copy(**changes)
    with pytest.raises(BadInput) as err:
        resolve(c, m)
    assert needle in str(err.value) and "\n" not in str(err.value)


# --------------------------------------------------------------------------- pins arithmetic


@pytest.mark.parametrize("specs, fits", [
    (("==9.10.2.21", "<10.0,>=9.3.0.75"), True),
    (("==8.9.7.29", "==9.1.0.70"), False),
    ((">=9.8,<10.0", "<10.0,>=9.12.0.46"), True),
    ((">9.1", "<9.1.1"), True),
    ((">=9.1,<10", "<9.0"), False),
    (("~=3.8.0", "==3.8.2"), True),
    (("==12.1.105", ">=12.5.82"), False),
])
def test_intersect(specs, fits):
    w = intersect(specs)
    assert (w is not None) is fits
    if w is not None:
        assert all(SpecifierSet(s).contains(w, prereleases=True) for s in specs)


def test_merged_spec_prefers_exact_pin():
    assert merged_spec(["<10.0,>=9.3", "==9.10.2.21"]) == "==9.10.2.21"
    assert SpecifierSet(merged_spec([">=9.8,<10.0", ">=9.3"])).contains("9.9")


@pytest.mark.parametrize("text, spec", [("2.5.1", "==2.5.1"), ("2.5", "==2.5.*"), ("=2.5.1", "==2.5.1"),
                                        (">=2.4,<2.6", ">=2.4,<2.6"), ("2.5.1+cu121", "==2.5.1+cu121"), ("", "")])
def test_normalize_spec(text, spec):
    assert normalize_spec(text) == spec


# --------------------------------------------------------------------------- check


def pins_of(lock):
    out = []
    for p in lock.picks:
        for r in p.requirements:
            name = r.text.split("[")[0].split("=")[0].split("<")[0].split(">")[0]
            version = r.text.split("==", 1)[1] if "==" in r.text else None
            extras = [r.text.split("[")[1].split("]")[0]] if "[" in r.text else []
            out.append(PinnedRequirement(name, extras, version, r.text))
    return out


def test_check_accepts_its_own_lock_and_names_a_too_old_driver(m):
    lock = resolve(Constraints(cuda="12.1", python="3.11"), m)
    reqs = pins_of(lock)
    ok = check(m, Constraints(python="3.11", driver="535.104.05"), reqs, index_urls=lock.index_urls())
    assert ok.ok, ok.problems
    bad = check(m, Constraints(python="3.11", driver="470.57.02"), reqs, index_urls=lock.index_urls())
    t = lock.pick("torch")
    assert not bad.ok
    assert f"the driver 470.57.02 cannot run {t.label} (needs >= {m.mvc_floor(12)})" in bad.problems


def test_check_flags_unpublished_variant_missing_index_and_wrong_companion(m):
    reqs = [PinnedRequirement("torch", [], "2.9.0+cu121", "torch==2.9.0+cu121")]
    res = check(m, Constraints(python="3.11"), reqs)
    assert not res.ok and any("never published" in p for p in res.problems)
    reqs = [PinnedRequirement("torch", [], "2.5.1+cu121", "torch==2.5.1+cu121"),
            PinnedRequirement("torchvision", [], "0.19.0", "torchvision==0.19.0")]
    res = check(m, Constraints(python="3.11"), reqs, index_urls=[])
    assert any("no index line" in p for p in res.problems)
    assert any("not the companion" in p for p in res.problems)
