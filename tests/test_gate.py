"""envdoctor gate: real-world install inputs against several target machines, the gate rules ED800-ED806 (each
modelled on a reported failure), the overlay, the output formats and the exit codes."""
from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from envdoctor.gate.inputs import load_inputs
from envdoctor.gate.plan import judge, overlay, plan_unit, stated_snapshot
from envdoctor.knowledge import load_matrices
from envdoctor.context import Context
from envdoctor.rules.engine import COMMAND_FAMILIES, run_rules, select_rules
from tests.snapfactory import machine, tensorflow, torch

FIX = Path(__file__).parent / "fixtures" / "gate"
M = load_matrices()

# Target machines: a driver-470 node (CUDA <= 11.4), an RTX 5090 node (Blackwell, driver 570, CUDA 12.8), a CPU-only
# CI runner, an A100 with driver 535 (CUDA 12.2).
DRIVER_470 = dict(driver="470.57.02", gpus=["Tesla V100-SXM2-16GB"], python="3.10")
RTX_5090 = dict(driver="570.133.07", gpus=["NVIDIA GeForce RTX 5090"], python="3.11")
CPU_RUNNER = dict(cpu=True, python="3.11")
A100_535 = dict(driver="535.104.05", gpus=["NVIDIA A100-SXM4-80GB"], python="3.10")


def run(path, target, selected=(), fresh=False, base=None):
    units, problems = load_inputs([str(path)], env={})
    assert problems == [], [str(p) for p in problems]
    snap = base if base is not None else stated_snapshot(M, **target)
    plan = plan_unit(units[0], snap, M, selected=selected)
    _over, located = judge(plan, snap, M, fresh=fresh)
    return plan, located


def at(located, severity="error"):
    """{(rule id, 'file:line' of the finding)} for the findings of a severity, file names relative to FIX."""
    out = set()
    for x in located:
        if x.finding.severity == severity:
            for loc in x.locs or [None]:
                out.add((x.finding.id, _rel(loc)))
    return out


def _rel(loc):
    if loc is None:
        return None
    return f"{os.path.relpath(loc.file, FIX) if os.path.isabs(loc.file) else loc.file}:{loc.line}"


def findings(located, rule_id):
    return [x.finding for x in located if x.finding.id == rule_id]


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --------------------------------------------------------------------------- real-world inputs x target machines

RISE = FIX / "rise-gen" / "requirements_cu121.txt"
KERAS_JAX = FIX / "keras" / "requirements-jax-cuda.txt"
KERAS_TF = FIX / "keras" / "requirements-tensorflow-cuda.txt"
KERAS_CV = FIX / "keras-cv" / "requirements-torch-cuda.txt"
KERAS_2024 = FIX / "keras-2024" / "requirements-torch-cuda.txt"
NAM = FIX / "neural-amp-modeler" / "environment_gpu.yml"
LLAVA = FIX / "llava" / "pyproject.toml"
UV = FIX / "uv-10326" / "pyproject.toml"


def test_rise_gen_torch_from_the_cu121_extra_index():
    plan, located = run(RISE, DRIVER_470)
    torch_pkg = plan.packages[0]
    assert torch_pkg.version == "2.3.0+cu121"  # the extra index's labelled build beats PyPI's 2.3.0
    assert any("local version label sorts higher" in a for a in torch_pkg.assumptions)
    assert at(located) == {("ED100", "rise-gen/requirements_cu121.txt:10")}
    msg = findings(located, "ED100")[0].message
    assert "torch 2.3.0+cu121" in msg and "525.60.13" in msg and "470.57.02" in msg
    _, located = run(RISE, RTX_5090)
    assert at(located) == {("ED200", "rise-gen/requirements_cu121.txt:10")}
    assert "sm_120" in findings(located, "ED200")[0].message or "12.0" in findings(located, "ED200")[0].message
    for target in (CPU_RUNNER, A100_535):
        _, located = run(RISE, target)
        assert at(located) == set() and at(located, "warning") == set()


def test_keras_jax_cuda_file():
    plan, located = run(KERAS_JAX, DRIVER_470)
    # tensorflow-cpu~=2.18.0 resolves to the newest 2.18 release the data knows (2.18.1, a [[patch]] row)
    assert {p.name: p.version for p in plan.packages} == {"torch": "2.6.0+cpu", "tensorflow-cpu": "2.18.1", "jax": "0.4.28"}
    assert at(located) == {("ED100", "keras/requirements-jax-cuda.txt:11")}
    assert "jax-cuda12-plugin 0.4.28" in findings(located, "ED100")[0].message
    _, located = run(KERAS_JAX, A100_535)
    assert at(located) == set()
    # the deliberately CPU-only torch and tensorflow-cpu of this file are warnings on a GPU node
    assert at(located, "warning") == {("ED400", "keras/requirements-jax-cuda.txt:2"), ("ED400", "keras/requirements-jax-cuda.txt:7")}
    _, located = run(KERAS_JAX, CPU_RUNNER)
    assert at(located) == set() and at(located, "warning") == set()


def test_keras_tensorflow_cuda_file():
    plan, located = run(KERAS_TF, DRIVER_470)
    by = {p.name: p for p in plan.packages}
    newest_tf = M.newest_known("tensorflow")
    assert by["tensorflow"].version == newest_tf and "newest release" in by["tensorflow"].assumptions[0]
    assert by["torch"].version.endswith("+cpu")  # unpinned torch + the cpu extra index: pip picks +cpu
    assert at(located) == {("ED100", "keras/requirements-tensorflow-cuda.txt:2")}
    _, located = run(KERAS_TF, RTX_5090)
    assert ("ED200", "keras/requirements-tensorflow-cuda.txt:2") in at(located)
    _, located = run(KERAS_TF, CPU_RUNNER)
    assert at(located) == set() and at(located, "warning") == set()


def test_keras_cv_torch_from_the_cu118_extra_index():
    plan, located = run(KERAS_CV, DRIVER_470)
    by = {p.name: p for p in plan.packages}
    assert by["torch"].version == "2.1.0+cu118" and by["torchvision"].version == "0.16.0+cu118"
    assert at(located) == set()  # CUDA 11.8 runs on 470 through minor-version compatibility
    _, located = run(KERAS_CV, RTX_5090)
    assert at(located) == {("ED200", "keras-cv/requirements-torch-cuda.txt:6")}
    assert "torch 2.1.0+cu118" in findings(located, "ED200")[0].message


def test_keras_2024_labelled_pins_with_their_index():
    _, located = run(KERAS_2024, RTX_5090)
    assert at(located) == {("ED200", "keras-2024/requirements-torch-cuda.txt:6")}
    _, located = run(KERAS_2024, A100_535)
    assert at(located) == set()


def test_conda_environment_with_pytorch_cuda():
    plan, located = run(NAM, DRIVER_470)
    pkg = plan.packages[0]
    assert pkg.frameworks[0].cuda_version == "12.1" and "conda pytorch channel" in pkg.summary
    assert at(located) == {("ED100", "neural-amp-modeler/environment_gpu.yml:23")}
    for target in (A100_535, CPU_RUNNER):
        _, located = run(NAM, target)
        assert at(located) == set()


def test_llava_unpinned_torch_resolves_to_the_newest_for_the_python():
    plan, located = run(LLAVA, A100_535)
    torch_pkg = next(p for p in plan.packages if p.name == "torch")
    assert any("newest release" in a for a in torch_pkg.assumptions)
    assert ("ED100", "llava/pyproject.toml:18") in at(located)
    _, located = run(LLAVA, CPU_RUNNER)
    assert at(located) == set()


def test_uv_pyproject_extras():
    plan, located = run(UV, DRIVER_470)
    assert plan.packages == [] and any("conflicting" in a for a in plan.assumptions)
    plan, located = run(UV, DRIVER_470, selected=[("extra", "cu121")])
    assert plan.packages[0].version.endswith("+cu121")
    assert "uv index 'pytorch-cu121'" in plan.packages[0].source.describe()
    assert at(located) == {("ED100", "uv-10326/pyproject.toml:12")}
    plan, located = run(UV, DRIVER_470, selected=[("extra", "cpu")])
    assert plan.packages[0].version.endswith("+cpu") and at(located) == set()


def test_pylock_example_has_nothing_to_judge():
    plan, located = run(FIX / "pylock" / "pylock.example.toml", A100_535)
    assert plan.packages == [] and at(located) == set() and at(located, "warning") == set()


# --------------------------------------------------------------------------- gate rules, modelled on real failures


def test_ed800_labelled_pin_without_its_index(here):
    """https://github.com/jianchang512/stt/issues/4: requirements.txt pins torch==2.1.2+cu121, no PyTorch index:
    "ERROR: No matching distribution found for torch==2.1.2+cu121"."""
    (here / "requirements.txt").write_text("numpy\ntorch==2.1.2+cu121\n")
    _, located = run("requirements.txt", A100_535)
    f = findings(located, "ED800")[0]
    assert f.severity == "error" and at(located) == {("ED800", "requirements.txt:2")}
    assert "torch==2.1.2+cu121" in f.message and "https://download.pytorch.org/whl/cu121" in f.message
    assert "--extra-index-url https://download.pytorch.org/whl/cu121" in f.fix
    assert any(e.source == "requirements.txt:2" for e in f.evidence)
    # healthy counterpart: the index on a line of its own
    (here / "requirements.txt").write_text("--extra-index-url https://download.pytorch.org/whl/cu121\ntorch==2.1.2+cu121\n")
    _, located = run("requirements.txt", A100_535)
    assert findings(located, "ED800") == [] and at(located) == set()


def test_ed800_on_windows(here):
    """https://github.com/gzxiong/MedRAG/issues/1: Windows 11, Python 3.10, torch==2.1.1+cu121 from PyPI alone."""
    (here / "requirements.txt").write_text("torch==2.1.1+cu121\n")
    _, located = run("requirements.txt", dict(driver="546.33", gpus=["sm_86"], python="3.10", platform="win-amd64"))
    assert at(located) == {("ED800", "requirements.txt:1")}
    assert "2.1.1+cu121" in findings(located, "ED800")[0].message


def test_ed800_silent_for_an_index_the_data_does_not_know(here):
    (here / "requirements.txt").write_text("--index-url https://packages.example.com/simple\ntorch==2.1.2+cu121\n")
    plan, located = run("requirements.txt", A100_535)
    assert findings(located, "ED800") == []
    assert any("assumed https://packages.example.com/simple serves torch" in a for a in plan.packages[0].assumptions)


def test_ed800_index_url_hides_pypi_packages(here):
    (here / "requirements.txt").write_text("--index-url https://download.pytorch.org/whl/cu121\ntorch==2.1.2\n"
                                           "tensorflow==2.15.0\n")
    plan, located = run("requirements.txt", A100_535)
    assert plan.packages[0].version == "2.1.2+cu121"
    assert at(located) == {("ED800", "requirements.txt:3")}
    assert "No matching distribution found for tensorflow" in findings(located, "ED800")[0].message


def test_ed801_variant_never_published(here):
    """https://github.com/ogkalu2/comic-translate/issues/215: the advice `pip install torch==2.6.0+cu121 -f
    https://download.pytorch.org/whl/torch_stable.html` names a build torch 2.6 never had."""
    (here / "requirements.txt").write_text("-f https://download.pytorch.org/whl/torch_stable.html\ntorch==2.6.0+cu121\n")
    _, located = run("requirements.txt", A100_535)
    f = findings(located, "ED801")[0]
    assert f.severity == "error" and at(located) == {("ED801", "requirements.txt:2")}
    published = [v.name for v in M.torch_release("2.6").variants]
    assert "cu121" not in published and all(n in f.message for n in published)
    assert any(line.startswith("$ pip install torch==2.6.0+cu") for line in f.fix)
    assert any("torch==2.5.1+cu121" in line for line in f.fix)  # the last release that has cu121
    (here / "requirements.txt").write_text("-f https://download.pytorch.org/whl/torch_stable.html\ntorch==2.6.0+cu124\n")
    _, located = run("requirements.txt", A100_535)
    assert findings(located, "ED801") == [] and at(located) == set()
    (here / "requirements.txt").write_text("torch==2.6.0+gitabc1234\n")  # a source build: not judged
    _, located = run("requirements.txt", A100_535)
    assert at(located) == set() and at(located, "warning") == set()


def test_ed801_missing_extra_is_a_warning(here):
    (here / "requirements.txt").write_text("tensorflow[and-cuda]==2.13.0\n")
    _, located = run("requirements.txt", A100_535)
    f = findings(located, "ED801")[0]
    assert f.severity == "warning" and "[and-cuda]" in f.message and "2.13.0" in f.message
    first = load_matrices().fact_value("tf-and-cuda-first")  # the data's fact, not a number in gate's code
    assert f"exists from TensorFlow {first}" in f.message + " ".join(f.fix) + str(f.evidence), f


def test_ed802_versions_the_data_does_not_know(here):
    (here / "requirements.txt").write_text("torch==2.1.5\n")
    _, located = run("requirements.txt", A100_535)
    f = findings(located, "ED802")[0]
    assert f.severity == "error" and "2.1.0, 2.1.1, 2.1.2" in f.message
    newest = M.newest_known("torch")
    beyond = f"{int(newest.split('.')[0])}.{int(newest.split('.')[1]) + 5}.0"
    (here / "requirements.txt").write_text(f"torch=={beyond}\n")
    _, located = run("requirements.txt", A100_535)
    f = findings(located, "ED802")[0]
    assert f.severity == "warning" and newest in f.message and f.fix == ["$ envdoctor matrices refresh"]
    (here / "requirements.txt").write_text("torch==2.1.2\n")
    _, located = run("requirements.txt", A100_535)
    assert findings(located, "ED802") == []


def test_ed803_no_wheel_for_the_python(here):
    """https://github.com/Nerogar/OneTrainer/issues/138: torch==2.1.2+cu118 with the cu118 extra index on another
    Python: "Could not find a version that satisfies the requirement torch==2.1.2+cu118"."""
    (here / "requirements.txt").write_text("--extra-index-url https://download.pytorch.org/whl/cu118\ntorch==2.1.2+cu118\n")
    _, located = run("requirements.txt", dict(driver="535.104.05", gpus=["sm_86"], python="3.12"))
    f = findings(located, "ED803")[0]
    assert f.severity == "error" and at(located) == {("ED803", "requirements.txt:2")}
    assert "Python 3.12" in f.message and "<3.12" in f.message
    assert any(c.startswith("ED500:") for c in f.consequences)  # check's "installed for another interpreter" folded
    assert findings(located, "ED500") == []
    _, located = run("requirements.txt", dict(driver="535.104.05", gpus=["sm_86"], python="3.11"))
    assert findings(located, "ED803") == [] and at(located) == set()
    _, located = run("requirements.txt", dict(driver="535.104.05", gpus=["sm_86"]))  # Python not stated: not judged
    assert findings(located, "ED803") == [] and at(located) == set()


def test_ed803_no_wheel_for_the_platform(here):
    """https://github.com/zhoudaquan/ChatAnything/issues/3: conda environment.yaml on a Mac M1 whose pip section asks
    for torch==2.0.1+cu117 from the cu117 index: "No matching distribution found for torch==2.0.1+cu117"."""
    (here / "environment.yaml").write_text(
        "name: chatanything\nchannels:\n  - defaults\ndependencies:\n  - python=3.10\n  - pip\n  - pip:\n"
        "    - --extra-index-url https://download.pytorch.org/whl/cu117\n    - torch==2.0.1+cu117\n")
    plan, located = run("environment.yaml", dict(python="3.11", platform="macos-arm64"))
    assert str(plan.target.python) == "3.10"  # the environment's own Python
    f = findings(located, "ED803")[0]
    assert f.severity == "error" and at(located) == {("ED803", "environment.yaml:9")} and "macos-arm64" in f.message


def test_ed803_direct_wheel_for_another_python(here):
    (here / "requirements.txt").write_text(
        "https://download.pytorch.org/whl/cu121/torch-2.4.1%2Bcu121-cp310-cp310-linux_x86_64.whl\n")
    _, located = run("requirements.txt", dict(driver="535.104.05", gpus=["sm_80"], python="3.11"))
    f = findings(located, "ED803")[0]
    assert "cp310" in f.message and "3.11" in f.message and at(located) == {("ED803", "requirements.txt:1")}
    _, located = run("requirements.txt", dict(driver="535.104.05", gpus=["sm_80"], python="3.10"))
    assert at(located) == set()


def test_ed804_contradicting_lines_across_an_include(here):
    (here / "requirements.txt").write_text("torch==2.1.2\n-r more.txt\n")
    (here / "more.txt").write_text("torch>=2.2\n")
    _, located = run("requirements.txt", A100_535)
    assert at(located) == {("ED804", "requirements.txt:1"), ("ED804", "more.txt:1")}


def test_ed805_torch_and_tensorflow_pins(here):
    """https://github.com/TencentARC/Moto/issues/2 (torch and tensorflow[and-cuda] in one environment): torch 2.1.2
    pins nvidia-cudnn-cu12==8.9.2.26, tensorflow[and-cuda] 2.15.0 pins 8.9.4.25: pip's ResolutionImpossible."""
    (here / "requirements.txt").write_text("torch==2.1.2\ntensorflow[and-cuda]==2.15.0\n")
    _, located = run("requirements.txt", A100_535)
    f = findings(located, "ED805")[0]
    assert f.severity == "error"
    assert {("ED805", "requirements.txt:1"), ("ED805", "requirements.txt:2")} <= at(located)
    assert "nvidia-cudnn-cu12: torch 2.1.2 pins ==8.9.2.26" in f.message and "==8.9.4.25" in f.message
    assert any(c.startswith("ED320:") for c in f.consequences) and findings(located, "ED320") == []
    (here / "requirements.txt").write_text("torch==2.1.2\ntensorflow-cpu==2.15.0\n")
    _, located = run("requirements.txt", A100_535)
    assert findings(located, "ED805") == [] and at(located) == set()


def test_ed806_index_option_on_the_requirement_line(here):
    """pip ignores index options after a requirement (https://github.com/pypa/pip/issues/7050)."""
    (here / "requirements.txt").write_text("torch==2.1.0+cu121 --index-url https://download.pytorch.org/whl/cu121\n")
    _, located = run("requirements.txt", A100_535)
    assert at(located, "warning") == {("ED806", "requirements.txt:1")}
    assert at(located) == {("ED800", "requirements.txt:1")}
    assert "ignored" in findings(located, "ED800")[0].message


def test_gate_rules_are_silent_without_a_plan():
    snap = machine(driver="470.57.02", gpus=["Tesla V100-SXM2-16GB:7.0"],
                   frameworks=[torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2")])
    assert [f for f in run_rules(Context(snap, M), select_rules(only=["ED8"])) if f.id.startswith("ED8")] == []


def test_cpu_target_with_cuda_builds_is_healthy(here):
    """CUDA builds on a machine without NVIDIA GPU run on the CPU: no error, no warning (ED001 says so)."""
    (here / "requirements.txt").write_text("torch==2.1.2\njax[cuda12]==0.4.26\n")
    _, located = run("requirements.txt", CPU_RUNNER)
    assert [x.finding.id for x in located if x.finding.severity == "info"][:1] == ["ED001"]
    assert at(located) == set() and at(located, "warning") == set()


def test_companion_alone_brings_its_torch(here):
    (here / "requirements.txt").write_text("torchvision==0.16.2\n")
    plan, located = run("requirements.txt", dict(driver="470.57.02", gpus=["Tesla T4"], python="3.10"))
    assert {p.name: p.version for p in plan.packages} == {"torchvision": "0.16.2", "torch": "2.1.2"}
    assert at(located) == {("ED100", "requirements.txt:1")}


def test_jax_plugin_on_an_old_driver(here):
    (here / "requirements.txt").write_text("jax[cuda12]==0.4.30\n")
    plan, located = run("requirements.txt", dict(driver="470.57.02", gpus=["Tesla T4"], python="3.10"))
    names = [fw.name for fw in plan.frameworks]
    assert names == ["jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda12-pjrt"]
    assert plan.installed["nvidia-cudnn-cu12"]
    assert at(located) == {("ED100", "requirements.txt:1")}


# --------------------------------------------------------------------------- overlay


def test_plan_replaces_installed_frameworks_of_the_same_name(here):
    (here / "requirements.txt").write_text("--extra-index-url https://download.pytorch.org/whl/cu118\ntorch==2.3.0\n")
    base = machine(driver="535.104.05", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                   frameworks=[torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2"), tensorflow("2.15.0", cuda="12.2")],
                   packages={"nvidia-cudnn-cu12": "8.9.2.26"}, python="3.10.12")
    units, _ = load_inputs(["requirements.txt"])
    plan = plan_unit(units[0], base, M)
    over = overlay(base, plan)
    assert [(f.name, f.version) for f in over.python.frameworks] == [("tensorflow", "2.15.0"), ("torch", "2.3.0+cu118")]
    assert over.python.packages["torch"] == "2.3.0+cu118" and over.python.packages["tensorflow"] == "2.15.0"
    assert [(f.name, f.version) for f in overlay(base, plan, fresh=True).python.frameworks] == [("torch", "2.3.0+cu118")]
    assert [f.name for f in base.python.frameworks] == ["torch", "tensorflow"]  # the target itself is not changed
    assert over.python.frameworks[1].evidence[0].source == "requirements.txt:2"


# --------------------------------------------------------------------------- command line, formats, exit codes


def cli(args, capsys):
    from envdoctor.entry import main

    with pytest.raises(SystemExit) as info:
        main(list(args))
    out, err = capsys.readouterr()
    return info.value.code, out, err


def test_cli_exit_codes_and_formats(capsys):
    rc, out, err = cli(["gate", str(RISE), "--driver", "470.57.02", "--gpu", "Tesla V100-SXM2-16GB", "--python-version", "3.10"], capsys)
    assert rc == 1 and "requirements_cu121.txt:10: ED100" in out and "Traceback" not in err
    rc, out, _ = cli(["gate", str(RISE), "--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.10", "--format", "json"], capsys)
    data = json.loads(out)
    assert rc == 0 and data["schema"] == "envdoctor-gate/1" and data["exit_code"] == 0
    assert data["inputs"][0]["packages"][0]["version"] == "2.3.0+cu121"
    assert data["inputs"][0]["packages"][0]["locations"] == [f"{RISE}:10"]


def test_cli_strict_fails_on_warnings(capsys):
    args = ["gate", str(KERAS_JAX), "--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.10"]
    assert cli(args, capsys)[0] == 0
    assert cli(args + ["--strict"], capsys)[0] == 1


def test_github_annotations_point_at_the_line(capsys):
    rc, out, _ = cli(["gate", str(RISE), "--driver", "470.57.02", "--gpu", "sm_70", "--python-version", "3.10",
                      "--format", "github"], capsys)
    assert rc == 1
    first = out.splitlines()[0]
    assert first.startswith(f"::error file={RISE},line=10,title=ED100::torch 2.3.0+cu121 is built for CUDA 12.1")
    assert "%0AFix: " in first  # new lines are escaped


def test_github_annotation_escaping():
    from envdoctor.formats.github import annotation

    assert annotation("error", "50% done\nnext", file="a,b:c.txt", line=3, title="ED100") == \
        "::error file=a%2Cb%3Ac.txt,line=3,title=ED100::50%25 done%0Anext"
    assert annotation("warning", "x", file="/w/req.txt", workspace="/w") == "::warning file=req.txt::x"


def test_junit_report(capsys, tmp_path):
    out_file = tmp_path / "gate.xml"
    rc, out, _ = cli(["gate", str(RISE), str(KERAS_CV), "--driver", "470.57.02", "--gpu", "sm_70", "--python-version", "3.10",
                      "--format", "junit", "-o", str(out_file)], capsys)
    assert rc == 1 and out == ""
    root = ET.parse(out_file).getroot()
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == [str(RISE), str(KERAS_CV)]
    n_rules = len(select_rules(families=COMMAND_FAMILIES["gate"]))  # gate runs the machine and gate-plan rules
    assert all(int(s.get("tests")) == n_rules for s in suites)
    failing = [(s.get("name"), c.get("name"), c.get("line")) for s in suites for c in s.findall("testcase")
               if c.find("failure") is not None]
    assert failing == [(str(RISE), "ED100 driver-too-old", "10")]
    assert root.get("failures") == "1"


def test_each_file_alone_or_together(capsys, here):
    (here / "a.txt").write_text("torch==2.1.2\n")
    # 2.15.1, not 2.15.0: `pip install tensorflow[and-cuda]==2.15.0` cannot resolve its tensorrt pins (ED450)
    (here / "b.txt").write_text("tensorflow[and-cuda]==2.15.1\n")
    target = ["--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.10"]
    assert cli(["gate", "a.txt", "b.txt"] + target, capsys)[0] == 0
    rc, out, _ = cli(["gate", "a.txt", "b.txt", "--together"] + target, capsys)
    assert rc == 1 and "ED805" in out


def test_saved_snapshot_target(capsys, tmp_path):
    snap = stated_snapshot(M, driver="470.57.02", gpus=["sm_75"], python="3.10")
    path = tmp_path / "node.json"
    path.write_text(snap.to_json())
    rc, out, _ = cli(["gate", str(RISE), "--snapshot", str(path)], capsys)
    assert rc == 1 and f"snapshot {path}" in out
    rc, out, _ = cli(["gate", str(RISE), "--snapshot", str(path), "--driver", "550.54.14"], capsys)
    assert rc == 0 and "550.54.14" in out


@pytest.mark.parametrize("files,extra_args,where", [
    ({"requirements.txt": "numpy\ntorch=2.1.2\n"}, [], "requirements.txt:2: invalid requirement"),
    ({"pyproject.toml": '[project]\ndependencies = ["torch==2.1.2",\n  bad\n]\n'}, [], "pyproject.toml:3: invalid TOML"),
    ({"environment.yml": "name: x\ndependencies:\n  - python=3.10\n  - [oops\n"}, [], "environment.yml:4: invalid YAML"),
    ({"environment.yml": "name: x\ndependencies:\n\t- pytorch\n"}, [], "environment.yml:3:"),
    ({"requirements.txt": "-r b.txt\n", "b.txt": "-r requirements.txt\n"}, [], "b.txt:1: cyclic include"),
    ({"requirements.txt": "-r gone.txt\n"}, [], "requirements.txt:1: -r gone.txt: cannot read"),
    ({"requirements.txt": "torch==2.1.2\n"}, ["--gpu", "Voodoo 5"], "unknown GPU 'Voodoo 5'"),
    ({"pyproject.toml": '[project]\nname = "x"\n'}, ["--extra", "gpu"], "--extra gpu: no input defines it"),
])
def test_malformed_inputs_exit_2_with_file_and_line_and_are_not_modified(capsys, here, files, extra_args, where):
    for name, text in files.items():
        (here / name).write_text(text)
    before = {n: ((here / n).read_bytes(), (here / n).stat().st_mtime_ns) for n in files}
    first = next(iter(files))
    rc, out, err = cli(["gate", first, "--cpu"] + extra_args if "--gpu" not in extra_args else ["gate", first] + extra_args,
                       capsys)
    assert rc == 2 and where in err and "Traceback" not in err + out
    assert {n: ((here / n).read_bytes(), (here / n).stat().st_mtime_ns) for n in files} == before


def test_fixtures_are_never_modified(capsys, tmp_path):
    copy = tmp_path / "gate"
    shutil.copytree(FIX, copy)
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in copy.rglob("*") if p.is_file()}
    inputs = [str(p) for p in copy.rglob("*") if p.is_file() and p.name != "SOURCES.toml" and "common" not in p.name]
    for target in (["--cpu"], ["--driver", "470.57.02", "--gpu", "sm_70", "--python-version", "3.10"]):
        rc, _, err = cli(["gate", *inputs, *target, "--format", "json"], capsys)
        assert rc in (0, 1) and "Traceback" not in err
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in copy.rglob("*") if p.is_file()} == before


def test_no_input_found_is_a_usage_error(capsys, here):
    rc, _, err = cli(["gate", "--cpu"], capsys)
    assert rc == 2 and "no input files" in err


def test_discovers_inputs_in_the_current_folder(capsys, here):
    (here / "requirements-gpu.txt").write_text("torch==2.1.2+cu121\n")
    (here / "README.md").write_text("torch==2.1.2+cu121\n")
    rc, out, _ = cli(["gate", "--cpu", "--python-version", "3.11"], capsys)
    assert rc == 1 and "requirements-gpu.txt:1: ED800" in out and "README" not in out


def test_range_resolves_to_the_newest_matching_release_and_says_so(here):
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    (here / "requirements.txt").write_text("torch>=2.1,<2.3\n")
    plan, located = run("requirements.txt", A100_535)
    spec = SpecifierSet(">=2.1,<2.3")
    expected = max((Version(p) for r in M.pytorch_releases for p in r.patches
                    if spec.contains(Version(p)) and r.python_spec().contains(Version("3.10"))))
    pkg = plan.packages[0]
    assert pkg.version == str(expected)  # PyPI's default build: no local label
    assert pkg.frameworks[0].cuda_version == M.torch_default_variant(str(expected)).cuda
    assert any(str(expected) in a and "newest release" in a for a in pkg.assumptions)


def test_plain_pin_gets_the_platforms_pypi_default_build(here):
    (here / "requirements.txt").write_text("torch==2.1.2\n")
    windows = dict(driver="546.33", gpus=["sm_86"], python="3.10", platform="win-amd64")
    plan, located = run("requirements.txt", windows)
    default = M.torch_default_variant("2.1.2", "win-amd64")
    assert plan.packages[0].frameworks[0].build == default.kind == "cpu"
    assert at(located, "warning") == {("ED400", "requirements.txt:1")}  # the CPU build on a GPU machine
    plan, _ = run("requirements.txt", A100_535)
    assert plan.packages[0].frameworks[0].cuda_version == M.torch_default_variant("2.1.2").cuda
