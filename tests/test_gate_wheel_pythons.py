"""Compiled packages besides the frameworks, judged offline by the Pythons their wheels cover
(matrices/gate_wheel_pythons.toml, read from the index's own file names by dev/collect_wheel_pythons.py).

Seen on real requirement files of the held-out corpus (tests/fixtures/gate_corpus): coqui-tts pins
``numpy==1.24.3;python_version>"3.10"``, llama-factory ``numpy<2.0.0``, tf-models ``tensorflow-addons``; on Python
3.12 / 3.13 uv says "has no usable wheels" / "no wheels with a matching Python ABI tag" and pip stops the whole
install, so torch is never reached. The offline planner said nothing (or judged torch on the driver instead).
"""
from __future__ import annotations

import json

import pytest

from envdoctor.gate import wheel_pythons
from tests.cli_run import run

H100_570 = ["--driver", "570.86.10", "--gpu", "sm_90"]


def _gate(tmp_path, text, *args):
    req = tmp_path / "requirements.txt"
    req.write_text(text)
    p = run("gate", str(req), *args, "--offline", "--format", "json")
    assert p.returncode in (0, 1), p.stderr
    return p.returncode, json.loads(p.stdout)["inputs"][0]


def _errors(inp):
    return [f for f in inp["findings"] if f["severity"] == "error"]


def test_a_numpy_pin_without_a_wheel_for_the_python_stops_the_whole_install_once(tmp_path):
    rc, inp = _gate(tmp_path, "numpy==1.24.3\ntorch>=1.7\n", *H100_570, "--python-version", "3.13")
    errs = _errors(inp)
    assert rc == 1
    # one cause: the numpy line; what torch would do on the driver is not said beside it (nothing installs)
    assert [(f["id"], f["locations"][0]["line"]) for f in errs] == [("ED803", 1)], errs
    msg = errs[0]["message"]
    assert "numpy 1.24.3 has no wheel for Python 3.13" in msg and "3.8, 3.9, 3.10, 3.11" in msg
    assert "source distribution, whose build fails" in msg  # numpy has an sdist: its build is what fails
    assert any("numpy.org" in e["source"] for e in errs[0]["evidence"])  # the build fact cites its source
    assert "Pin numpy 2.1.0" in errs[0]["fix"][0]  # the first numpy with cp313 wheels
    assert any("cannot be installed" in p.get("summary", "") or p.get("installable") is False
               for p in inp["packages"]), inp["packages"]


def test_the_same_pin_on_a_python_its_wheels_cover_passes(tmp_path):
    rc, inp = _gate(tmp_path, "numpy==1.24.3\n", "--cpu", "--python-version", "3.11")
    assert rc == 0 and not _errors(inp)


def test_a_marker_decides_which_numpy_line_counts(tmp_path):
    text = 'numpy==1.22.0;python_version<="3.10"\nnumpy==1.24.3;python_version>"3.10"\n'
    rc, inp = _gate(tmp_path, text, "--cpu", "--python-version", "3.12")
    assert rc == 1 and [f["locations"][0]["line"] for f in _errors(inp)] == [2]
    rc, inp = _gate(tmp_path, text, "--cpu", "--python-version", "3.10")
    assert rc == 0 and not _errors(inp)


def test_a_range_fails_only_when_no_release_it_allows_has_a_wheel(tmp_path):
    rc, inp = _gate(tmp_path, "numpy<2.0.0\n", "--cpu", "--python-version", "3.13")
    assert rc == 1 and "numpy 1.26.4 has no wheel for Python 3.13" in _errors(inp)[0]["message"]
    rc, inp = _gate(tmp_path, "numpy<2.0.0\n", "--cpu", "--python-version", "3.12")  # 1.26 has cp312 wheels
    assert rc == 0 and not _errors(inp)


def test_a_package_without_a_source_distribution(tmp_path):
    rc, inp = _gate(tmp_path, "tensorflow-addons\n", "--cpu", "--python-version", "3.12")
    errs = _errors(inp)
    assert rc == 1 and len(errs) == 1
    assert 'No matching distribution found for tensorflow-addons' in errs[0]["message"]


def test_where_a_source_build_might_stand_in_the_line_is_not_judged(tmp_path):
    # scipy 1.9's wheels stop at cp311; it has an sdist and no source says its build fails on 3.12
    rc, inp = _gate(tmp_path, "scipy==1.9.3\n", "--cpu", "--python-version", "3.12")
    assert rc == 0 and not _errors(inp)
    assert any("only a source build could install it" in x["why"] for x in inp["not_judged"]), inp["not_judged"]


def test_abi3_and_pure_wheels_cover_later_pythons():
    rows = wheel_pythons.table()
    abi3 = next(s for s in rows["psutil"] if s.abi3_from is not None)
    from packaging.version import Version
    from packaging.specifiers import SpecifierSet

    newest = max(abi3.releases)
    assert wheel_pythons.judge_line("psutil", SpecifierSet(f"=={newest}"), Version("3.13")) is None


def test_every_row_names_its_source_and_how_it_was_verified():
    for name, series in wheel_pythons.table().items():
        for s in series:
            assert s.source and s.releases, (name, s.series)
            if s.sdist_builds is not None:
                assert s.sdist_builds_source.startswith(("http", "the index")), (name, s.series)


@pytest.mark.slow
@pytest.mark.network
@pytest.mark.parametrize("package,version,python", [
    ("numpy", "1.24.3", "3.12"), ("numpy", "1.26.4", "3.12"), ("numpy", "1.26.4", "3.13"),
    ("tensorflow-addons", "0.23.0", "3.12"), ("tensorflow-addons", "0.23.0", "3.11"), ("scipy", "1.11.4", "3.13"),
    ("pandas", "2.0.3", "3.12"), ("opencv-python", "4.8.1.78", "3.12"),
])
def test_the_table_agrees_with_the_real_resolver(tmp_path, package, version, python):
    """The referee: uv against the index pip is configured with, wheels only, dependencies left out. A line the table
    fails must fail there; a line the table lets pass (a wheel exists) must resolve."""
    import shutil
    import subprocess
    import sys

    from envdoctor.knowledge.index import configured_indexes

    uv = shutil.which("uv") or str(__import__("pathlib").Path(sys.executable).with_name("uv"))
    urls = configured_indexes().urls
    cmd = [uv, "pip", "compile", "-", "--no-config", "--no-python-downloads", "--python", sys.executable,
           "--no-deps", "--no-build", "--index-strategy", "unsafe-best-match", "--python-version", python,
           "--python-platform", "x86_64-manylinux_2_35", "--index-url", urls[0], "--cache-dir", str(tmp_path / "c")]
    for u in urls[1:]:
        cmd += ["--extra-index-url", u]
    p = subprocess.run(cmd, input=f"{package}=={version}\n", capture_output=True, text=True, timeout=120)
    if "error" in p.stderr.lower() and ("connect" in p.stderr.lower() or "dns" in p.stderr.lower()):
        pytest.skip(f"the index is not reachable: {p.stderr.strip()[:200]}")
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    verdict = wheel_pythons.judge_line(package, SpecifierSet(f"=={version}"), Version(python))
    has_wheel = verdict is None
    assert (p.returncode == 0) == has_wheel, (verdict, p.returncode, p.stderr[-400:])
