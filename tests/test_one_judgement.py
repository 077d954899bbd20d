"""One judgement, three uses: what ``lock`` writes, ``gate`` passes and ``check`` finds clean.

A property test over targets -- CUDA line, driver, GPUs, frameworks, platform, Python -- all drawn from the real
matrices (no target is special-cased): every lock the real lock code writes is judged without an error by the real
gate code on the same target (reading the written file) and by check's rules on a snapshot of that target with the
locked builds laid in; when lock refuses, gate fails every build of the refused framework it would have considered
(the newest of each release series, within the stated CUDA line: a user's choice, not a fact of the machine).
Builds of two CUDA majors (envdoctor/facts/cuda_mix.py) are one judgement too: lock writes them only when no
combination of one major fits, with a warning, and gate and check then warn with ED662; when lock's builds share a
major, neither warns.
When lock refuses frameworks that each fit alone (their exact nvidia-* pins disagree, e.g. torch 2.14.1+cu126 and
tensorflow[and-cuda]==2.16.2 on cuDNN), gate fails the newest fitting build of each, installed together.
"""
from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from packaging.version import Version

from envdoctor.errors import BadInput
from envdoctor.frameworks import registry
from envdoctor.frameworks.base import Candidate, FrameworkRequest, GpuTarget, Target
from envdoctor.knowledge import load_matrices
from envdoctor.lock.render import Meta, render
from envdoctor.lock.resolve import cuda_mix, intersect, resolve
from envdoctor.snapshot import Framework
from tests import snapfactory

M = load_matrices()
PLATFORMS = ("linux-x86_64", "linux-aarch64", "win-amd64")
PYTHONS = [f"3.{n}" for n in range(9, 15)]
LINES = [s for s in M.cuda_series() if Version("11.8") <= Version(s) < Version("14")]
GPU_CCS = sorted(M.archs, key=Version)


def _drivers(os_: str) -> List[str]:
    """Real driver versions from the data: each CUDA line's toolkit driver and each major's MVC floor, 450-590."""
    found = {M.min_driver_for_cuda(s, os_) for s in M.cuda_series()}
    found |= {M.mvc_floor(major, os_) for major in (11, 12, 13)}
    return sorted((d for d in found if d and 450 <= Version(d).major <= 590), key=Version)


DRIVERS = {"linux": _drivers("linux"), "windows": _drivers("windows")}


def _gpu_texts() -> List[str]:
    """sm_XY of every GPU arch the data knows, plus the arch-specific spellings NVIDIA defines from Hopper on
    (sm_90a, sm_100a, sm_120a ...): `--gpu sm_90a` names the same GPU as sm_90, and every judge must read it so."""
    out = ["sm_" + cc.replace(".", "") for cc in GPU_CCS]
    for cc in GPU_CCS:
        if Version(cc) >= Version("9.0"):
            out.append("sm_" + cc.replace(".", "") + "a")
    return out


def _mvc_window(os_: str) -> List[Tuple[str, str]]:
    """(CUDA line, driver) pairs of the data where the driver runs the line's builds only through minor-version
    compatibility: at or above the major's floor, below the line's own toolkit driver (470.42.01 and 11.8)."""
    out = []
    for line in LINES:
        floor = M.mvc_floor(Version(line).major, os_)
        toolkit = M.min_driver_for_cuda(line, os_)
        if floor and toolkit:
            out.extend((line, d) for d in DRIVERS[os_] if Version(floor) <= Version(d) < Version(toolkit))
    return out


MVC_WINDOW = {"linux": _mvc_window("linux"), "windows": _mvc_window("windows")}


@st.composite
def targets(draw: Any) -> Target:
    platform = draw(st.sampled_from(PLATFORMS))
    names = draw(st.lists(st.sampled_from(registry.names(lockable=True)), min_size=1, max_size=3, unique=True))
    os_ = "windows" if platform == "win-amd64" else "linux"
    from envdoctor.lock.core import parse_gpu

    gpus = [parse_gpu(M, g) for g in draw(st.lists(st.sampled_from(_gpu_texts()), max_size=2, unique=True))]
    gpus = [g for i, g in enumerate(gpus) if g.cc not in {x.cc for x in gpus[:i]}]
    if MVC_WINDOW[os_] and draw(st.booleans()):  # a --cuda line the driver runs only by minor-version compatibility
        cuda, driver = draw(st.sampled_from(MVC_WINDOW[os_]))
    else:
        cuda = draw(st.none() | st.sampled_from(LINES))
        driver = draw(st.none() | st.sampled_from(DRIVERS[os_]))
    return Target(frameworks=[FrameworkRequest(n) for n in names], cuda=cuda, driver=driver,
                  gpus=gpus, python=draw(st.sampled_from(PYTHONS)), platform=platform, companions=[])


# --------------------------------------------------------------------------- the three judges


MIX = "ED662"  # check's and gate's rule for builds of two CUDA majors in one environment


def _gate_errors(tmp: str, text: str, t: Target, kinds: Optional[Dict[str, str]] = None,
                 mixed: Optional[List[str]] = None) -> List[str]:
    """The real gate code on a requirements file, for the target stated the way `gate` states it: its errors
    (and, given ``kinds``, framework -> the build kind meant, any framework it would install as another kind;
    given ``mixed``, its ED662 findings are added to it)."""
    from envdoctor.gate.core import run_gate

    path = os.path.join(tmp, "requirements-cuda.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    result = run_gate([path], driver=t.driver, gpus=[g.label or g.sm for g in t.gpus], python_version=t.python,
                      platform=t.platform, cuda=t.cuda, offline=True, fresh=True, kind=None)
    errors = [f"{x.finding.id}: {x.finding.message}" for u in result.units for x in u.located
              if x.finding.severity == "error"]
    if mixed is not None:
        mixed.extend(x.finding.message for u in result.units for x in u.located if x.finding.id == MIX)
    if kinds is not None:  # a build gate plans as another kind (a CPU build for a CUDA one) is not the one judged
        for u in result.units:
            for fw in u.plan.frameworks:
                want = kinds.get(fw.name)
                if want is not None and fw.build != want:
                    errors.append(f"gate installs {fw.distribution} {fw.version} as a {fw.build} build, not {want}")
    return errors


def _laid_in(cands: Sequence[Candidate], pins: Dict[str, str]) -> Tuple[list, Dict[str, str]]:
    """Snapshot frameworks and packages of an environment holding ``cands`` (and a version of every pin)."""
    fws: list = []
    for c in cands:
        cuda = c.cuda if c.kind == "cuda" else None
        requires = [f"{n}{sp}" for n, sp in c.pins.items()]
        if c.framework == "torch":
            fws.append(snapfactory.torch(c.full_version, cuda=cuda, cudnn=c.cudnn, requires=requires))
        elif c.framework == "tensorflow":
            dist = c.requirement.split("[")[0].split("=")[0]
            fws.append(snapfactory.tensorflow(c.version, cuda=cuda, cudnn=c.cudnn, dist=dist,
                                              requires=[f'{r}; extra == "and-cuda"' for r in requires]))
        elif c.framework == "jax":
            plugin = f"jax-cuda{c.cuda_major}-plugin" if c.kind == "cuda" else None
            fws.extend(snapfactory.jax(c.version, plugin=plugin, requires=requires))
        else:  # a framework that is one module of envdoctor/frameworks/ (onnxruntime-gpu, paddlepaddle-gpu)
            dist = c.requirement.split("[")[0].split("=")[0]
            fws.append(Framework(name=c.framework, distribution=dist, version=c.version, build=c.kind,
                                 cuda_version=cuda, cudnn_version=c.cudnn, requires=requires))
    packages = {}
    for name, spec in pins.items():
        v = intersect((spec,))
        if v is not None:
            packages[name] = v
    return fws, packages


def _check_errors(t: Target, cands: Sequence[Candidate], pins: Dict[str, str],
                  mixed: Optional[List[str]] = None) -> List[str]:
    """check's rules on a snapshot of the target with the builds laid in (given ``mixed``, its ED662 findings are
    added to it)."""
    from envdoctor.doctor import prepare_judgement
    from envdoctor.context import Context
    from envdoctor.rules.engine import run_rules

    from envdoctor.gate.plan import stated_snapshot

    fws, packages = _laid_in(cands, pins)
    snap = stated_snapshot(M, driver=t.driver, gpus=[g.label or g.sm for g in t.gpus], python=t.python,
                           platform=t.platform)  # the target's facts, stated; what is not stated stays unknown
    snap.python.frameworks = fws
    snap.python.packages = dict(packages, **{fw.distribution: fw.version for fw in fws})
    rules, matrices, _ = prepare_judgement((), (), "check")
    findings = run_rules(Context(snap, matrices), rules)
    if mixed is not None:
        mixed.extend(f.message for f in findings if f.id == MIX)
    return [f"{f.id}: {f.message}" for f in findings if f.severity == "error"]


def _lock_pins(lock: Any) -> Dict[str, str]:
    pins: Dict[str, str] = {}
    for p in lock.picks:
        pins.update(p.pins)
    pins.update({s.name: s.spec for s in lock.shared_pins})
    return pins


def _requirements(cands: Sequence[Candidate]) -> str:
    lines: List[str] = []
    for c in cands:
        if c.index_url:
            lines.append(f"--extra-index-url {c.index_url}")
    for c in cands:
        lines.extend(registry.get(c.framework).install_requirements(c))
    return "\n".join(lines) + "\n"


def _one_target(t: Target, tmp: str) -> Optional[str]:
    """None when the three judges agree on ``t``, else what disagreed (a message)."""
    try:
        result = resolve(t, M, explain=False)
    except BadInput:
        return None  # a target no data can describe: refused before any judging (gate refuses it too)
    if result.ok:
        text = render(result, "requirements", Meta(command="envdoctor lock (property test)"))
        gate_mix: List[str] = []
        gate = _gate_errors(tmp, text, t, mixed=gate_mix)
        if gate:
            return f"lock wrote {result.summary()} for {t.to_dict()}; gate: {gate}"
        check_mix: List[str] = []
        check = _check_errors(t, result.picks, _lock_pins(result), mixed=check_mix)
        if check:
            return f"lock wrote {result.summary()} for {t.to_dict()}; check: {check}"
        mix = cuda_mix(result.picks)
        said = {"lock": bool(mix) and mix in result.warnings, "gate": bool(gate_mix), "check": bool(check_mix)}
        if len(set(said.values())) > 1:
            return f"lock wrote {result.summary()} for {t.to_dict()}; two CUDA majors, warned by: {said}"
        return None
    # refused: every build of a framework that fits nowhere alone is refused by gate too
    newest_fitting: List[Candidate] = []
    for f in t.frameworks:
        spec = registry.get(f.name)
        alone = t.copy(frameworks=[f])
        judged = [(c, spec.fits(M, c, alone)) for c in spec.candidates(M, t)]
        fitting = [c for c, probs in judged if not probs]
        if fitting:
            newest_fitting.append(fitting[0])
            continue  # it fits alone: the clash is between frameworks (judged below)
        # the CUDA line is the user's choice, not a fact of the machine: builds outside it are not considered
        cands = [c for c, probs in judged if not any(p.key == "cuda" for p in probs)]
        for c in _sample(cands):
            if not _gate_errors(tmp, _requirements([c]), alone, {c.framework: c.kind}):
                return f"lock refused {f.name} on {t.to_dict()}, gate passes {c.label}"
    if len(newest_fitting) == len(t.frameworks) > 1:
        # each fits alone, no combination fits together (their exact nvidia-* pins disagree): the newest build of
        # each, together, is one of the combinations lock refused, and gate fails it too
        kinds = {c.framework: c.kind for c in newest_fitting}
        if not _gate_errors(tmp, _requirements(newest_fitting), t, kinds):
            return (f"lock refused {'+'.join(f.name for f in t.frameworks)} together on {t.to_dict()}, gate passes "
                    + " + ".join(c.label for c in newest_fitting))
    return None


def _sample(cands: Sequence[Candidate]) -> List[Candidate]:
    """The newest build of every release series (what a user's ``==X.Y.*`` would get), newest first."""
    seen, out = set(), []
    for c in cands:
        key = (Version(c.version).release[:2], c.build)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out[:int(os.environ.get("ENVDOCTOR_ONE_JUDGEMENT_SAMPLE", "6"))]


def _t(names: str, gpus: Sequence[str] = (), **kw: Any) -> Target:
    return Target(frameworks=[FrameworkRequest(n) for n in names.split()], companions=[],
                  gpus=[GpuTarget(cc, "sm_" + cc.replace(".", "")) for cc in gpus], **kw)


# the disagreements this test found, kept as examples (each was a lock gate or check contradicted)
FOUND = [
    _t("tensorflow", ["12.0"], driver="580.65.06"),  # lock wrote TF 2.21 (compute_90 PTX, CUDA 12.5): ED200 rejects
    _t("torch", ["3.0"], python="3.10"),  # a GPU stated without a driver: ED200 was silent, lock refused
    _t("torch tensorflow", python="3.9", platform="linux-aarch64"),  # no TF CUDA build on aarch64: gate plans CPU
    _t("torch jax", python="3.11", platform="win-amd64"),  # jax[cuda13] on native Windows: gate passed it
    _t("jax", cuda="12.0", python="3.10"),  # gate planned plugin 0.5.1 next to jaxlib 0.5.2 (ED510)
    _t("torch", ["7.5", "11.0"], python="3.11"),  # a presumed arch list lacking sm_110: ED200 warns, lock refused
    _t("torch", ["7.0", "3.5"], python="3.9"),  # ...and the cuDNN such a build brings must still be judged (ED151)
    _t("torch jax tensorflow", ["8.9", "3.5"], cuda="11.8", python="3.13", platform="win-amd64"),  # torch's bundled
    # cuDNN 9.1 on Windows (no cuDNN wheel): lock refused it for sm_35, ED151 did not look at it
    _t("jax paddlepaddle", python="3.9"),  # jax[cuda12] + paddlepaddle-gpu 2.6.2 (CUDA 11.8): lock warned of two
    # CUDA majors, ED662 did not see the table frameworks
    _t("torch", driver="470.42.01", cuda="11.8", python="3.11"),  # lock wrote torch 2.7.1+cu118 (minor-version
    # compatibility); gate refused the target itself ("runs CUDA up to 11.4, older than --cuda 11.8")
    _t("torch", ["3.0"], cuda="11.8", python="3.9"),  # a GPU with only --cuda stated: ED200 was silent, lock refused
    _t("torch", driver="450.51.05", cuda="11.8", python="3.9"),  # a driver below the 11.x line's MVC floor
]


@settings(max_examples=100, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(t=targets())
def test_lock_gate_and_check_agree(t: Target, tmp_path: Any) -> None:
    assert _one_target(t, str(tmp_path)) is None


@pytest.mark.slow
@settings(max_examples=600, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(t=targets())
def test_lock_gate_and_check_agree_big(t: Target, tmp_path: Any) -> None:
    assert _one_target(t, str(tmp_path)) is None


@pytest.mark.parametrize("args", [
    ["--driver", "580.65.06", "--gpu", "sm_120", "--torch"],
    ["--driver", "535.104.05", "--gpu", "sm_86", "--tensorflow", "--jax"],
    ["--driver", "570.26", "--gpu", "sm_90a", "--jax", "--python-version", "3.12"],
    ["--driver", "470.42.01", "--cuda", "11.8", "--torch", "--python-version", "3.11"],
])
def test_through_the_cli(args: List[str], tmp_path: Any) -> None:
    """A few examples end to end: `envdoctor lock ... -o FILE`, then `envdoctor gate FILE` on the same target."""
    out = str(tmp_path / "env.txt")
    env = dict(os.environ, ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"))

    def cli(*argv: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run([sys.executable, "-m", "envdoctor", *argv], capture_output=True, text=True,
                              timeout=120, env=env, cwd=str(tmp_path))

    got = cli("lock", *args, "-o", out)
    assert got.returncode == 0, got.stderr
    target = [a for a in args if a not in ("--torch", "--tensorflow", "--jax")]
    gated = cli("gate", out, *target, "--offline")
    assert gated.returncode == 0, gated.stdout + gated.stderr


@pytest.mark.parametrize("t", FOUND, ids=lambda t: " ".join(f.name for f in t.frameworks) + " " +
                         ",".join(g.sm for g in t.gpus) + " " + t.platform)
def test_found_disagreements_stay_fixed(t: Target, tmp_path: Any) -> None:
    assert _one_target(t, str(tmp_path)) is None


MIXED = [  # targets on which lock can only combine builds of two CUDA majors (TF 2.16 pins cuDNN 8.9 exactly)
    Target(frameworks=[FrameworkRequest("torch"), FrameworkRequest("tensorflow", "==2.16.*")], python="3.11",
           driver="535.104.05", companions=[]),
    Target(frameworks=[FrameworkRequest("tensorflow", "==2.16.*"), FrameworkRequest("torch")], python="3.10",
           companions=[]),
]


@pytest.mark.parametrize("t", MIXED, ids=lambda t: " ".join(f.display() for f in t.frameworks))
def test_two_cuda_majors_are_warned_by_all_three(t: Target, tmp_path: Any) -> None:
    result = resolve(t, M, explain=False)
    assert result.ok and cuda_mix(result.picks)  # the case under test happens (lock warns: _one_target checks)
    assert _one_target(t, str(tmp_path)) is None


def test_the_issue_example_agrees() -> None:
    """lock --driver 580.65.06 --gpu sm_120 --tensorflow: gate rejects every TensorFlow the data has on sm_120, so
    lock refuses too (it wrote tensorflow 2.21.0, which gate rejects with ED200)."""
    result = resolve(FOUND[0], M, explain=False)
    assert not result.ok and "XLA cannot generate code" in " ".join(result.reasons)
