"""The Python API (envdoctor.api, docs/api.md) answers what the command line answers on the same machine: each
function is called directly on fake machines built as the CLI tests build them (a saved snapshot from
tests/snapfactory.py, an image root under tmp_path with an empty PATH) and compared with the real CLI's JSON; its
errors are the CLI's exit-2 lines as exceptions; a notebook's HTML view shows the same summary as the text format.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Dict, List

import pytest

import envdoctor
from envdoctor import errors
from tests.cli_run import one_line_error, run
from tests.fakes import write
from tests.snapfactory import machine, torch

ROOT = Path(__file__).resolve().parent.parent

# what a clock says: the snapshot's time and each probe's duration differ between any two runs on one machine
VOLATILE = ("created", "duration_ms")


def steady(data):
    """`data` without the values a clock gives."""
    if isinstance(data, dict):
        return {k: steady(v) for k, v in data.items() if k not in VOLATILE}
    if isinstance(data, list):
        return [steady(v) for v in data]
    return data


@pytest.fixture
def env(tmp_path, monkeypatch) -> Dict[str, str]:
    """One environment for the CLI's subprocess and the API in this process: a private cache, a fixed date."""
    values = {"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"), "SOURCE_DATE_EPOCH": "1764547200"}
    for k, v in values.items():
        monkeypatch.setenv(k, v)
    return values


@pytest.fixture
def v100_snapshot(tmp_path) -> Path:
    """A V100 on driver 470 (CUDA 11.4) with a CUDA 12.1 torch: check finds ED100 (the driver is too old)."""
    path = tmp_path / "snap.json"
    path.write_text(machine(driver="470.57.02", driver_cuda="11.4", gpus=["Tesla V100-SXM2-16GB:7.0"],
                            frameworks=[torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2")]).to_json())
    return path


def ubuntu_root(tmp_path: Path) -> Path:
    """An image root holding Ubuntu 22.04's os-release (as tests/test_judgement_honesty.py builds it)."""
    root = tmp_path / "root"
    write(root / "etc" / "os-release", 'ID=ubuntu\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n')
    return root


@pytest.fixture
def image_root(tmp_path, monkeypatch, env) -> Path:
    """An Ubuntu image root and no NVIDIA tools on an empty PATH: probing it finds no driver."""
    root = ubuntu_root(tmp_path)
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    env["PATH"] = str(empty)
    return root


def cli_json(env: Dict[str, str], *args: str):
    proc = run(*args, "--format", "json", env=env)
    assert proc.returncode in (0, 1), proc.stderr
    return proc.returncode, json.loads(proc.stdout)


# --------------------------------------------------------------------------- check


@pytest.mark.parametrize("options", [{}, {"strict": True}, {"skip": "ED100"}, {"only": ["ED1", "ED0"]},
                                     {"expect_cpu": "torch"}], ids=lambda o: ",".join(o) or "plain")
def test_check_answers_the_cli_json_on_a_saved_snapshot(env, v100_snapshot, options):
    flags: List[str] = []
    for name, value in options.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            flags.append(flag)
        else:
            for v in [value] if isinstance(value, str) else value:
                flags += [flag, v]
    rc, expected = cli_json(env, "check", "--snapshot", str(v100_snapshot), *flags)
    report = envdoctor.check(snapshot=v100_snapshot, **options)
    assert report.to_dict() == expected
    assert report.exit_code == rc and report.ok == (rc == 0)
    assert [f.to_dict() for f in report.findings] == expected["findings"]
    assert report.summary == expected["summary"]
    assert report.snapshot.to_dict() == expected["snapshot"]


def test_check_of_an_image_root_answers_the_cli_json(env, image_root):
    rc, expected = cli_json(env, "check", "--root", str(image_root))
    report = envdoctor.check(root=image_root)
    assert steady(report.to_dict()) == steady(expected) and report.exit_code == rc
    assert "ED001" in {f.id for f in report.findings}  # no driver found: said, not hidden


def test_check_takes_a_snapshot_in_hand_and_leaves_it_alone(env, v100_snapshot):
    snap = envdoctor.probe(snapshot=v100_snapshot)
    before = snap.to_dict()
    from_object = envdoctor.check(snapshot=snap)
    from_dict = envdoctor.check(snapshot=json.loads(v100_snapshot.read_text()))
    from_file = envdoctor.check(snapshot=str(v100_snapshot))
    assert from_object.to_dict() == from_dict.to_dict() == from_file.to_dict()
    assert snap.to_dict() == before


def test_check_formats_are_the_cli_formats(env, v100_snapshot):
    report = envdoctor.check(snapshot=v100_snapshot)
    for fmt in ("text", "markdown", "sarif"):
        proc = run("check", "--snapshot", str(v100_snapshot), "--format", fmt, env=env)
        assert report.render(fmt) == proc.stdout, fmt
    assert report._repr_markdown_() == report.render("markdown")


def test_check_inspects_the_calling_interpreter_by_default(env, tmp_path, monkeypatch):
    """In a notebook the kernel is the interpreter asked about, even where the shell's $VIRTUAL_ENV names another
    (the command line would take that one)."""
    other = tmp_path / "other-venv"
    write(other / "bin" / "python", "#!/bin/sh\nexit 3\n").chmod(0o755)
    monkeypatch.setenv("VIRTUAL_ENV", str(other))
    monkeypatch.delenv("CONDA_PREFIX", raising=False)
    snap = envdoctor.probe()
    assert snap.python.version == ".".join(map(str, sys.version_info[:3]))
    assert str(other) not in json.dumps(snap.to_dict())


# --------------------------------------------------------------------------- probe, lock, gate, explain, rules


def test_probe_answers_the_cli_json(env, v100_snapshot, image_root):
    _, expected = cli_json(env, "probe", "--snapshot", str(v100_snapshot))
    assert envdoctor.probe(snapshot=v100_snapshot).to_dict() == expected
    _, expected = cli_json(env, "probe", "--root", str(image_root))
    assert steady(envdoctor.probe(root=image_root).to_dict()) == steady(expected)


def test_lock_answers_the_cli(env, v100_snapshot, tmp_path):
    rc, expected = cli_json(env, "lock", "--snapshot", str(v100_snapshot))
    result = envdoctor.lock(snapshot=v100_snapshot, format="json")
    assert result.to_dict() == expected and result.exit_code == rc == 0 and result.ok
    text = run("lock", "--snapshot", str(v100_snapshot), env=env).stdout
    as_requirements = envdoctor.lock(snapshot=v100_snapshot)
    assert as_requirements.text == text
    # the same lock as JSON; its meta names the command that wrote the requirements file, not the JSON one
    data = as_requirements.to_dict()
    assert data["meta"].pop("command") == expected["meta"].pop("command").replace(" --format json", "")
    assert data == expected
    assert as_requirements.written is None and not list(tmp_path.glob("*.txt"))  # nothing written unasked
    out = tmp_path / "requirements-cuda.txt"
    assert envdoctor.lock(snapshot=v100_snapshot, output=out).written == str(out) and out.read_text() == text
    checked = envdoctor.lock(snapshot=v100_snapshot, check=out)
    assert checked.exit_code == 0 and checked.to_dict()["ok"] is True


def test_lock_that_fits_nothing_is_an_answer_with_exit_code_1(env):
    # lock's own clash case (tests/test_lock_cli.py): R418 drives a Turing GPU but runs no CUDA 11+ build
    target = ("--driver", "418.39", "--gpu", "sm_75", "--python-version", "3.11")
    rc, expected = cli_json(env, "lock", *target)
    result = envdoctor.lock(driver="418.39", gpus=["sm_75"], python_version="3.11")
    assert rc == result.exit_code == 1 and not result.ok and result.to_dict() == expected
    assert result.text.strip() == run("lock", *target, env=env).stderr.strip().replace("envdoctor lock: ", "", 1)


def test_gate_answers_the_cli_json(env, v100_snapshot, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.1.2\n")
    rc, expected = cli_json(env, "gate", str(req), "--snapshot", str(v100_snapshot), "--offline")
    report = envdoctor.gate(req, snapshot=v100_snapshot, offline=True)
    assert report.to_dict() == expected and report.exit_code == rc
    assert [f.id for f in report.findings] == [f["id"] for i in expected["inputs"] for f in i["findings"]]
    assert envdoctor.gate([str(req)], snapshot=v100_snapshot, offline=True, strict=True).exit_code == \
        run("gate", str(req), "--snapshot", str(v100_snapshot), "--offline", "--strict", env=env).returncode


def test_explain_and_rules_answer_the_cli_json(env):
    _, rules = cli_json(env, "rules")
    assert [r.to_dict() for r in envdoctor.list_rules()] == rules["rules"]
    _, ed100 = cli_json(env, "explain", "ed100")
    assert envdoctor.explain("ed100").to_dict() == ed100


# --------------------------------------------------------------------------- errors


def test_each_kind_of_failure_is_its_exception(env, tmp_path, v100_snapshot):
    assert envdoctor.BadInput is errors.BadInput and envdoctor.EnvdoctorError is errors.EnvdoctorError
    from envdoctor.knowledge import index

    assert envdoctor.IndexUnavailable is index.IndexUnavailable and envdoctor.NoIndexConfigured is index.NoIndexConfigured
    assert all(issubclass(e, envdoctor.EnvdoctorError) for e in (envdoctor.BadInput, envdoctor.IndexUnavailable,
                                                                  envdoctor.NoIndexConfigured))
    missing = tmp_path / "nope.json"
    line = one_line_error(run("check", "--snapshot", str(missing), env=env))
    with pytest.raises(envdoctor.BadInput) as caught:
        envdoctor.check(snapshot=missing)
    assert line == f"envdoctor: error: {caught.value}"
    line = one_line_error(run("explain", "ED999", env=env))
    with pytest.raises(envdoctor.BadInput) as caught:
        envdoctor.explain("ED999")
    assert line == f"envdoctor: error: {caught.value}"
    for bad in (0.0, 601, float("nan"), "5", True):  # the bounds of --timeout
        with pytest.raises(envdoctor.BadInput, match="timeout"):
            envdoctor.check(snapshot=v100_snapshot, timeout=bad)
    with pytest.raises(envdoctor.BadInput, match="framework"):
        envdoctor.lock(snapshot=v100_snapshot, frameworks=["pytorch"])


def test_a_malformed_gate_input_lists_every_problem(env, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("torch=2.1.2\nnumpy==\n")
    proc = run("gate", str(req), "--cpu", env=env)
    lines = [ln.replace("envdoctor: error: ", "", 1) for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 2
    with pytest.raises(envdoctor.BadInput) as caught:
        envdoctor.gate(req, cpu=True)
    assert list(caught.value.details) == lines and str(caught.value) == lines[-1]


# --------------------------------------------------------------------------- the notebook view


class _Rows(HTMLParser):
    """The rows of the report's table: (class, data attributes, the cells' text)."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: List[dict] = []
        self.caption = ""
        self._cell: List[str] = []
        self._in: List[str] = []

    def handle_starttag(self, tag, attrs):
        self._in.append(tag)
        if tag == "tr":
            self.rows.append({"attrs": dict(attrs), "cells": []})
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if self._in:
            self._in.pop()
        if tag in ("td", "th") and self.rows:
            self.rows[-1]["cells"].append("".join(self._cell).strip())

    def handle_data(self, data):
        if "caption" in self._in:
            self.caption += data
        self._cell.append(data)


def test_the_html_view_is_the_doctor_summary_as_a_table(env, v100_snapshot):
    report = envdoctor.check(snapshot=v100_snapshot)
    page = _Rows()
    page.feed(report._repr_html_())
    areas = [r for r in page.rows if r["attrs"].get("class") == "envdoctor-area"]
    findings = [r for r in page.rows if r["attrs"].get("class") == "envdoctor-finding"]
    # the text format's area lines, "[mark] Title: summary", row for row
    text = report.render("text")
    lines = [m.groups() for m in re.finditer(r"^\[(.)\] ([^:\n]+)(?:: (.*))?$", text, re.M)]
    assert [(r["cells"][0], r["cells"][1], r["cells"][2]) for r in areas] == [(s, t, w or "") for s, t, w in lines]
    assert [(r["attrs"]["data-id"], r["attrs"]["data-severity"]) for r in findings] == \
        [(f.id, f.severity) for f in report.findings]
    for row, f in zip(findings, report.findings):
        assert row["cells"][2].startswith(f.message)
        assert all(step.removeprefix("$ ") in row["cells"][2] for step in f.fix)
    verdict = text.rstrip("\n").split("\n\n")[-1].splitlines()[0]
    assert page.caption == "envdoctor: " + verdict[2:]


def test_the_html_view_escapes_what_the_machine_says(env, tmp_path):
    path = tmp_path / "snap.json"
    path.write_text(machine(driver="535.104.05", driver_cuda="12.2", gpus=["<script>alert(1)</script>:8.0"],
                            frameworks=[torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2")]).to_json())
    html = envdoctor.check(snapshot=path)._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


# --------------------------------------------------------------------------- the names and what they import


def test_the_stable_names_are_exported_and_documented():
    from envdoctor import api

    doc = (ROOT / "docs" / "api.md").read_text()
    assert sorted(envdoctor.__all__) == sorted(api.__all__)
    for name in envdoctor.__all__:
        assert getattr(envdoctor, name) is not None
        assert f"`{name}" in doc, name
    assert envdoctor.SCHEMA_VERSION == json.loads((ROOT / "docs" / "report.schema.json").read_text())["$id"] \
        .rsplit("report-", 1)[1].removesuffix(".json")


def test_lock_and_gate_stay_callable_when_their_packages_are_imported(v100_snapshot, env):
    import inspect

    import envdoctor.gate.core  # noqa: F401 (the import makes envdoctor.gate name the package)
    import envdoctor.lock.core  # noqa: F401

    assert envdoctor.lock(snapshot=v100_snapshot).ok
    from envdoctor import api

    assert inspect.signature(envdoctor.gate) == inspect.signature(api.gate)
    assert envdoctor.lock.core.run_lock is not None  # still the package for everything else


def test_the_api_imports_no_click_no_framework_and_no_mcp_sdk(v100_snapshot, tmp_path):
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.1.2\n")
    code = ("import sys\n"
            "sys.modules['click'] = None\n"
            "import envdoctor\n"
            f"r = envdoctor.check(snapshot={str(v100_snapshot)!r}); r._repr_html_()\n"
            f"envdoctor.probe(snapshot={str(v100_snapshot)!r})\n"
            f"envdoctor.lock(snapshot={str(v100_snapshot)!r})\n"
            f"envdoctor.gate({str(req)!r}, snapshot={str(v100_snapshot)!r}, offline=True)\n"
            "envdoctor.explain('ED100'); envdoctor.list_rules()\n"
            "loaded = sorted(m for m, mod in sys.modules.items() if mod is not None and m.split('.')[0] in "
            "('torch', 'tensorflow', 'jax', 'jaxlib', 'mcp', 'mcp_types', 'click'))\n"
            "print(r.exit_code, loaded)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(tmp_path), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["1", "[]"], proc.stdout
