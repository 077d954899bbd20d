"""Class 7: the question is "will it use the GPU". Through the real CLI: on a machine with a usable
NVIDIA GPU a build that cannot use it is an error by default; `--expect-cpu FRAMEWORK`, `[tool.envdoctor]
expect-cpu` in pyproject.toml and envdoctor.toml make it an info; a CPU laptop stays healthy."""
from __future__ import annotations

import pytest

from tests import snapfactory as sf
from tests.generalise.common import _own_cache, check_cli, check_text  # noqa: F401
from tests.test_gate_integrations import cli as _cli


def _windows_cpu_torch():
    """https://github.com/pytorch/pytorch/issues/122924 : Windows 11, plain `pip install torch` gave torch 2.2.2
    (CPU), RTX 4080 Laptop GPU, driver 551.86: torch.cuda.is_available() is False."""
    return sf.machine(driver="551.86", driver_cuda="12.4", gpus=["NVIDIA GeForce RTX 4080 Laptop GPU"],
                      system="Windows", machine_arch="AMD64", python="3.10.13", frameworks=[sf.torch("2.2.2")])


def _sev(report, rid):
    return [f["severity"] for f in report["findings"] if f["id"] == rid]


def test_a_cpu_torch_on_a_gpu_machine_is_an_error(tmp_path, capsys):
    """https://github.com/pytorch/pytorch/issues/122924 (see _windows_cpu_torch)."""
    rc, report = check_cli(_windows_cpu_torch(), tmp_path, capsys, cwd=tmp_path)
    assert rc == 1 and _sev(report, "ED400") == ["error"]
    f = next(f for f in report["findings"] if f["id"] == "ED400")
    assert any("torch==2.2.2+cu121" in x for x in f["fix"])


def test_expect_cpu_option_makes_it_info(tmp_path, capsys):
    """https://github.com/pytorch/pytorch/issues/122924 : the same machine, for a user who wants torch on the CPU."""
    rc, report = check_cli(_windows_cpu_torch(), tmp_path, capsys, "--expect-cpu", "torch", cwd=tmp_path)
    assert rc == 0 and _sev(report, "ED400") == ["info"]
    rc, text = check_text(_windows_cpu_torch(), tmp_path, capsys, "--expect-cpu", "tensorflow,torch", cwd=tmp_path)
    assert rc == 0 and "No issues found" in text


@pytest.mark.parametrize("name,body", [
    ("pyproject.toml", '[project]\nname = "app"\n\n[tool.envdoctor]\nexpect-cpu = ["torch"]\n'),
    ("envdoctor.toml", 'expect-cpu = ["pytorch"]\n'),
    ("envdoctor.toml", '[tool.envdoctor]\nexpect-cpu = "torch"\n'),
])
def test_expect_cpu_from_the_project_config(tmp_path, capsys, name, body):
    """https://github.com/pytorch/pytorch/issues/122924 : the intent stated once in the project, read from the cwd."""
    (tmp_path / name).write_text(body)
    rc, report = check_cli(_windows_cpu_torch(), tmp_path, capsys, cwd=tmp_path)
    assert rc == 0 and _sev(report, "ED400") == ["info"]


def test_a_config_naming_another_framework_changes_nothing_for_torch(tmp_path, capsys):
    (tmp_path / "pyproject.toml").write_text('[tool.envdoctor]\nexpect-cpu = ["jax"]\n')
    rc, report = check_cli(_windows_cpu_torch(), tmp_path, capsys, cwd=tmp_path)
    assert rc == 1 and _sev(report, "ED400") == ["error"]


@pytest.mark.parametrize("args,files", [
    (["--expect-cpu", "pytorchh"], {}),
    ([], {"pyproject.toml": '[tool.envdoctor]\nexpect-cpu = ["caffe"]\n'}),
    ([], {"envdoctor.toml": 'expect-cpu = [1, 2]\n'}),
    ([], {"pyproject.toml": '[tool.envdoctor\n'}),
])
def test_bad_expect_cpu_is_one_line_and_exit_2(tmp_path, capsys, args, files):
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    f = tmp_path / "snap.json"
    f.write_text(_windows_cpu_torch().to_json())
    rc, out, err = _cli(["check", "--snapshot", str(f), *args], capsys, cwd=tmp_path)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err, err


def test_tensorflow_2_12_on_native_windows_with_a_gpu_is_an_error(tmp_path, capsys):
    """https://github.com/tensorflow/tensorflow/issues/60237 : TF 2.12.0 on Windows 10 with a GTX 1050 Ti, "GPU is
    NOT AVAILABLE" (2.10 was the last native-Windows GPU release). Error by default, info when expected."""
    snap = sf.machine(driver="531.41", driver_cuda="12.1", gpus=["NVIDIA GeForce GTX 1050 Ti"], system="Windows",
                      machine_arch="AMD64", python="3.10.10", frameworks=[sf.tensorflow("2.12.0")])
    rc, report = check_cli(snap, tmp_path, capsys, cwd=tmp_path)
    assert rc == 1 and _sev(report, "ED410") == ["error"]
    rc, report = check_cli(snap, tmp_path, capsys, "--expect-cpu", "tensorflow", cwd=tmp_path)
    assert rc == 0 and _sev(report, "ED410") == ["info"]


def test_jax_without_a_cuda_plugin_on_a_gpu_machine_is_an_error(tmp_path, capsys):
    """https://github.com/sanchit-gandhi/whisper-jax/issues/30 : RTX 3090, driver 525.105.17 (CUDA 12.0), jax "No
    GPU/TPU found, falling back to CPU" (a CPU jaxlib, no CUDA plugin)."""
    snap = sf.machine(driver="525.105.17", driver_cuda="12.0", gpus=["NVIDIA GeForce RTX 3090:8.6"],
                      frameworks=sf.jax("0.4.26"), python="3.10.12")
    rc, report = check_cli(snap, tmp_path, capsys, cwd=tmp_path)
    assert rc == 1 and _sev(report, "ED400") == ["error"]
    f = next(f for f in report["findings"] if f["id"] == "ED400")
    assert any("jax[cuda12]" in x for x in f["fix"])
    rc, report = check_cli(snap, tmp_path, capsys, "--expect-cpu", "jax", cwd=tmp_path)
    assert rc == 0 and _sev(report, "ED400") == ["info"]


def test_a_cpu_laptop_stays_healthy(tmp_path, capsys):
    """Healthy counterpart: no NVIDIA GPU, CPU builds of all three: ED001 says where they run, exit 0."""
    snap = sf.machine(frameworks=[sf.torch("2.4.1+cpu"), sf.tensorflow("2.15.0", dist="tensorflow-cpu")]
                      + sf.jax("0.4.26"), python="3.11.7")
    rc, report = check_cli(snap, tmp_path, capsys, cwd=tmp_path)
    assert rc == 0, report["findings"]
    assert [f["id"] for f in report["findings"] if f["severity"] in ("error", "warning")] == []
    assert _sev(report, "ED001") == ["info"]


def test_gate_which_does_not_read_the_intent_keeps_a_warning():
    """gate judges a plan for a target: it does not read expect-cpu, so a CPU build there stays a warning
    (envdoctor.rules.intent)."""
    from envdoctor.context import Context
    from envdoctor.rules.engine import run_rules, select_rules
    from tests.rules.helpers import matrices

    found = run_rules(Context(_windows_cpu_torch(), matrices()), select_rules(only=["ED400"]))
    assert [f.severity for f in found] == ["warning"]


@pytest.mark.parametrize("body", ['[project\nname = "app"\n', '[tool.ruff]\nline-length = "x\n', b"\xff\xfe[project]\n"])
def test_a_broken_pyproject_without_envdoctor_in_it_is_not_checks_business(tmp_path, capsys, body):
    """The project's pyproject.toml is read only for [tool.envdoctor]: one that does not mention envdoctor is not
    parsed, so a broken one (a half-edited file, another encoding) neither stops check nor states an intent."""
    path = tmp_path / "pyproject.toml"
    path.write_bytes(body if isinstance(body, bytes) else body.encode())
    rc, report = check_cli(_windows_cpu_torch(), tmp_path, capsys, cwd=tmp_path)
    assert rc == 1 and _sev(report, "ED400") == ["error"]
