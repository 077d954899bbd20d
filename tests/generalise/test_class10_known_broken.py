"""ED450: known-broken releases (matrices/known_broken.toml), through `check` and `gate --offline`, each modelled on a
public report, with the healthy counterparts that must stay silent."""
from __future__ import annotations

import json

import pytest

from envdoctor.knowledge.extra_tables import _known_broken_row, known_broken
from tests.cli_run import run
from tests.rules.helpers import by_id, check, matrices
from tests.snapfactory import machine, tensorflow, torch

A100 = dict(driver="550.54.14", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"])


def tf_and_cuda(version, **kw):
    """TensorFlow `version` installed with [and-cuda]: its Requires-Dist and the wheels pip put there, both from the
    release's own metadata in envdoctor's tensorflow table."""
    rel = matrices().tf_release(version)
    pins = {name: spec.lstrip("=") for name, spec in rel.and_cuda.items()}
    fw = tensorflow(version, cuda=rel.cuda, cudnn=rel.cudnn,
                    requires=[f'{n}{s}; extra == "and-cuda"' for n, s in rel.and_cuda.items()])
    return machine(frameworks=[fw], packages=pins, **kw)


def check_cli(snap, tmp_path, *args):
    path = tmp_path / "snap.json"
    path.write_text(snap.to_json())
    proc = run("check", "--snapshot", str(path), "--format", "json", *args)
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def ed450(report):
    """ED450 findings of a check report, or of every input of a gate report."""
    found = report["findings"] if "findings" in report else [f for i in report["inputs"] for f in i["findings"]]
    return [f for f in found if f["id"] == "ED450"]


def test_bundled_rows_all_load_and_cite_an_issue():
    table = known_broken()
    assert table.problems == []
    assert {r.id for r in table.rows} >= {"tf-2.16.1-and-cuda-libs-not-found", "torch-2.4.0-windows-fbgemm-libomp"}
    for row in table.rows:
        assert "https://github.com/" in row.source and "/issues/" in row.source, row.id


def test_tf_2_16_1_and_cuda_on_linux_is_an_error_through_check(tmp_path):
    """https://github.com/tensorflow/tensorflow/issues/63362: TF 2.16.1 from `pip install tensorflow[and-cuda]` on
    Ubuntu 22.04, driver 550.54.14, lists no GPU."""
    code, report, err = check_cli(tf_and_cuda("2.16.1", **A100), tmp_path)
    assert code == 1, err
    (f,) = ed450(report)
    assert f["severity"] == "error" and f["area"] == "tensorflow"
    assert "Cannot dlopen some GPU libraries" in f["message"] and "2.16.1 (installed)" in f["message"]
    assert any("LD_LIBRARY_PATH" in line for line in f["fix"])


@pytest.mark.parametrize("snap", [
    pytest.param(tf_and_cuda("2.16.1", python="3.11.7"), id="same-install-on-a-cpu-laptop"),
    pytest.param(tf_and_cuda("2.15.0", **A100), id="tf-2.15.0-and-cuda-already-installed"),
    pytest.param(machine(frameworks=[tensorflow("2.16.1", cuda="12.3", cudnn="8.9")], **A100),
                 id="tf-2.16.1-on-system-cuda-without-the-extra"),
    pytest.param(tf_and_cuda("2.16.1", system="Windows", machine_arch="AMD64", **A100), id="tf-2.16.1-windows"),
])
def test_healthy_counterparts_are_silent(snap):
    assert by_id(check(snap, ["ED450"]), "ED450") == []


def test_torch_2_4_0_on_windows_is_an_error_even_without_a_gpu():
    """https://github.com/pytorch/pytorch/issues/131662 (regression, module: windows): torch 2.4.0 fails at import,
    'Error loading ...\\torch\\lib\\fbgemm.dll or one of its dependencies', on GPU and CPU machines alike."""
    for kw in (A100, {}):
        snap = machine(frameworks=[torch("2.4.0+cu121", cuda="12.1", cudnn="9.1.0")], system="Windows",
                       machine_arch="AMD64", **kw)
        (f,) = by_id(check(snap, ["ED450"]), "ED450")
        assert f.severity == "error" and "fbgemm.dll" in f.message and any("2.4.1" in x for x in f.fix)


@pytest.mark.parametrize("version,system", [("2.4.1+cu121", "Windows"), ("2.4.0+cu121", "Linux"),
                                            ("2.3.1+cu121", "Windows")])
def test_torch_neighbours_are_silent(version, system):
    snap = machine(frameworks=[torch(version, cuda="12.1", cudnn="8.9.2")], system=system,
                   machine_arch="AMD64" if system == "Windows" else "x86_64", **A100)
    assert by_id(check(snap, ["ED450"]), "ED450") == []


def gate(tmp_path, line):
    (tmp_path / "requirements.txt").write_text(line + "\n")
    proc = run("gate", str(tmp_path / "requirements.txt"), "--offline", "--driver", "550.54.14", "--gpu",
               "NVIDIA A100-SXM4-80GB", "--python-version", "3.11", "--format", "json", cwd=str(tmp_path))
    return proc.returncode, json.loads(proc.stdout) if proc.stdout.strip() else None, proc.stderr


def test_gate_planned_tf_2_15_0_and_cuda_cannot_be_installed(tmp_path):
    """https://github.com/tensorflow/tensorflow/issues/66517: `pip install tensorflow[and-cuda]==2.15.0` ends in
    'Could not find a version that satisfies the requirement tensorrt-libs==8.6.1; extra == "and-cuda"'."""
    code, report, err = gate(tmp_path, "tensorflow[and-cuda]==2.15.0")
    assert code == 1, err
    (f,) = ed450(report)
    assert f["severity"] == "error" and "tensorrt-libs==8.6.1" in f["message"] and "(planned)" in f["message"]
    assert any("2.15.1" in x for x in f["fix"])


def test_gate_planned_tf_2_16_1_and_cuda_is_judged_like_check(tmp_path):
    """https://github.com/tensorflow/tensorflow/issues/63362, planned instead of installed."""
    code, report, err = gate(tmp_path, "tensorflow[and-cuda]==2.16.1")
    assert code == 1, err
    assert [f["id"] for f in ed450(report)] == ["ED450"]


@pytest.mark.parametrize("line", ["tensorflow[and-cuda]==2.15.1", "tensorflow[and-cuda]==2.17.1"])
def test_gate_healthy_neighbours_have_no_ed450(tmp_path, line):
    code, report, err = gate(tmp_path, line)
    assert report is not None, err
    assert ed450(report) == []


@pytest.mark.parametrize("row,why", [
    (dict(versions="=>2.16", stage="run", severity="error"), "versions"),
    (dict(versions="==2.16.1", stage="later", severity="error"), "stage"),
    (dict(versions="==2.16.1", stage="run", severity="fatal"), "severity"),
])
def test_a_bad_row_is_refused_with_its_reason(row, why):
    base = dict(id="x", dists=["tensorflow"], platforms=[], extra="", gpu_only=False, symptom="s", fix="f",
                source="https://github.com/o/r/issues/1", verified="v")
    with pytest.raises(ValueError, match=why):
        _known_broken_row({**base, **row})


def test_explain_documents_the_rule():
    proc = run("explain", "ED450")
    assert proc.returncode == 0, proc.stderr
    assert "known_broken.toml" in proc.stdout and "issues/63362" in proc.stdout


def test_an_extension_release_is_judged_too(tmp_path):
    """https://github.com/Dao-AILab/flash-attention/issues/1717: upgrading flash_attn 2.7.4.post1 -> 2.8.0.post2 in a
    CUDA 12.4 torch image, "the wheel with the same dependencies gets undefined symbol error" at `import flash_attn`.
    flash-attn is an extension (a package, no framework entry): ED450 looked only at frameworks. Through the real
    CLI; the row is a warning (not every torch build is hit)."""
    snap = machine(frameworks=[torch("2.6.0+cu124", cuda="12.4", cudnn="9.1.0")],
                   packages={"flash-attn": "2.8.0.post2"}, **A100)
    code, report, err = check_cli(snap, tmp_path)
    (f,) = ed450(report)
    assert f["severity"] == "warning" and "undefined symbol" in f["message"], f
    assert "flash-attn 2.8.0.post2 (installed)" in f["message"]
    assert any("flash-attn==2.7.4.post1" in x for x in f["fix"])


@pytest.mark.parametrize("packages,system", [({"flash-attn": "2.7.4.post1"}, "Linux"),
                                             ({"flash-attn": "2.8.0.post2"}, "Windows")])
def test_an_extension_outside_the_row_is_silent(packages, system):
    snap = machine(frameworks=[torch("2.6.0+cu124", cuda="12.4", cudnn="9.1.0")], packages=packages, system=system,
                   machine_arch="AMD64" if system == "Windows" else "x86_64", **A100)
    assert by_id(check(snap, ["ED450"]), "ED450") == []
