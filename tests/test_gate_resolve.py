"""envdoctor gate resolves like the installer: uv and pip, run for the target's Python and platform against
a local index on 127.0.0.1 that serves REAL recorded wheel metadata (tests/fixtures/index/recorded: the closure pip
really installs for `torch` + `xformers==0.0.20` on Python 3.10, tensorflow 2.7.0's cp39 wheel, the torch releases'
Requires-Dist), as PEP 658 metadata files and as small synthetic wheels holding that METADATA."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from envdoctor.cli import cli as main
from tests.index_server import FIX, FakeIndex, closed_port_url, recorded_metadata, report_metadata

GATE_FIX = Path(__file__).parent / "fixtures" / "gate"
PASCAL_470 = ["--driver", "470.82.01", "--gpu", "sm_61", "--python-version", "3.10"]


def _has_uv() -> bool:
    try:
        from uv import find_uv_bin  # type: ignore[import-not-found]

        return bool(find_uv_bin())
    except Exception:  # noqa: BLE001
        return shutil.which("uv") is not None


RESOLVERS = [pytest.param("uv", marks=pytest.mark.skipif(not _has_uv(), reason="uv not installed (envdoctor[resolve])")),
             "pip"]


def served_files():
    files = recorded_metadata(FIX / "recorded" / "pypi_torch_requires_dist.txt")  # torch 1.13 .. 2.15 (newer torch exists)
    files.update(report_metadata(FIX / "recorded" / "closure_torch_xformers_0.0.20.json"))
    files.update(report_metadata(FIX / "recorded" / "tensorflow_2.7.0_cp39.json"))
    return files


@pytest.fixture
def index():
    with FakeIndex(served_files(), serve_wheels=True) as idx:
        yield idx


def gate(tmp_path, resolver, index_url, text, *args, name="requirements.txt", pip_conf="/dev/null", more_env=None):
    req = tmp_path / name
    req.write_text(text)
    env = {"ENVDOCTOR_GATE_RESOLVER": resolver, "PIP_CONFIG_FILE": pip_conf, "PIP_INDEX_URL": index_url,
           "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
           "PIP_CACHE_DIR": str(tmp_path / "pip-cache"), "PIP_NO_INPUT": "1", **(more_env or {})}
    r = CliRunner().invoke(main, ["gate", str(req), *args, "--format", "json"], env=env)
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.stdout if hasattr(r, "stdout") else r.output)


def _torch_of(data):
    return [p["version"] for p in data["inputs"][0]["packages"] if p["name"] == "torch"]


def _errors(data):
    return [(f["id"], [f"{x['line']}" for x in f["locations"]]) for u in data["inputs"] for f in u["findings"]
            if f["severity"] == "error"]


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_xformers_pins_torch_2_0_1_which_runs_on_a_470_driver_and_a_gtx_1080(tmp_path, index, resolver):
    code, data = gate(tmp_path, resolver, index.url, "torch\nxformers==0.0.20\n", *PASCAL_470)
    unit = data["inputs"][0]
    assert unit["resolver"].startswith(f"{resolver} for Python 3.10"), unit["resolver"]
    torch = [p for p in unit["packages"] if p["name"] == "torch"]
    assert [p["version"] for p in torch] == ["2.0.1"], unit["packages"]
    assert torch[0]["frameworks"][0]["cuda_version"] == "11.7"
    assert unit["installed"]["xformers"] == "0.0.20" and unit["installed"]["nvidia-cudnn-cu11"] == "8.5.0.96"
    assert unit["installed"]["triton"] == "2.0.0"
    assert code == 0 and _errors(data) == []


def test_offline_the_same_file_plans_torch_2_0_1_from_the_data_and_asks_no_index(tmp_path, index):
    code, data = gate(tmp_path, "uv", index.url, "torch\nxformers==0.0.20\n", *PASCAL_470, "--offline")
    unit = data["inputs"][0]
    assert unit["resolver"].startswith("offline (--offline)")
    assert _torch_of(data) == ["2.0.1"] and code == 0  # matrices/gate_indirect.toml: xformers 0.0.20 -> torch==2.0.1
    assert unit["not_judged"] == []
    assert index.requests == []  # nothing asked of any index


def test_offline_an_xformers_release_the_data_lacks_is_listed_as_unresolved(tmp_path, index):
    code, data = gate(tmp_path, "uv", index.url, "torch\nxformers==0.0.13\n", *PASCAL_470, "--offline")
    unit = data["inputs"][0]
    # the xformers line, and the torch line whose release it decides (xformers 0.0.13 pins torch 1.12.x, which
    # runs on this driver: judging the newest torch instead would be a false ED100)
    assert [(x["location"].rsplit(":", 1)[1], "xformers==0.0.13" in x["why"]) for x in unit["not_judged"]] == [
        ("2", True), ("1", True)]
    assert code == 0 and not [f for f in unit["findings"] if f["severity"] == "error"], unit["findings"]


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_tensorflow_2_7_0_has_no_wheel_for_python_3_10_ed803(tmp_path, index, resolver):
    code, data = gate(tmp_path, resolver, index.url, "numpy\ntensorflow==2.7.0\n", *PASCAL_470)
    assert code == 1
    assert _errors(data) == [("ED803", ["2"])]
    f = next(f for f in data["inputs"][0]["findings"] if f["id"] == "ED803")
    assert "tensorflow==2.7.0" in f["message"] and "Python 3.10" in f["message"]
    # the data's account (its wheels' Pythons) is kept, with the resolver's own words beside it
    assert any(e["fact"] == f"{resolver} says" for e in f["evidence"]), f["evidence"]


def test_torch_2_1_0_with_xformers_0_0_20_conflict_names_both_lines(tmp_path, index):
    if not _has_uv():
        pytest.skip("uv not installed")
    code, data = gate(tmp_path, "uv", index.url, "torch==2.1.0\nxformers==0.0.20\n", *PASCAL_470)
    assert code == 1
    assert _errors(data) == [("ED804", ["1", "2"])]
    msg = next(f["message"] for f in data["inputs"][0]["findings"] if f["id"] == "ED804")
    assert "depend on torch==2.0.1" in msg or "depends on torch==2.0.1" in msg


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_no_index_reachable_falls_back_to_the_offline_planner(tmp_path, resolver):
    # (uv's own retries of a refused connection, seconds of back-off, are not what is tested; pip's are kept:
    # without them pip does not say the connection failed, only "from versions: none")
    code, data = gate(tmp_path, resolver, closed_port_url(), "torch\nxformers==0.0.20\n", *PASCAL_470,
                      more_env={"UV_HTTP_RETRIES": "0"})
    unit = data["inputs"][0]
    assert unit["resolver"].startswith("offline (" + resolver + " could not resolve"), unit["resolver"]
    assert _torch_of(data) == ["2.0.1"] and code == 0  # the planner, with the xformers line's torch pin from the data


def test_an_index_that_does_not_answer_is_no_target_verdict_when_pip_makes_no_retries(tmp_path):
    """pip with `retries = 0` prints no connection error for an index that refuses, only "No matching distribution
    found for torch": the index's silence is checked (one bounded request), so the input falls back to the offline
    planner instead of a false ED803 on torch."""
    code, data = gate(tmp_path, "pip", closed_port_url(), "torch\nxformers==0.0.20\n", *PASCAL_470,
                      more_env={"PIP_RETRIES": "0"})
    unit = data["inputs"][0]
    assert unit["resolver"].startswith("offline (pip could not resolve"), unit["resolver"]
    assert _torch_of(data) == ["2.0.1"] and code == 0 and not any(f["id"] == "ED803" for f in unit["findings"])


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_without_pep_658_metadata_the_resolver_reads_the_wheel(tmp_path, resolver):
    with FakeIndex(served_files(), mode="nometa", serve_wheels=True) as idx:
        code, data = gate(tmp_path, resolver, idx.url, "xformers==0.0.20\n", *PASCAL_470)
        assert idx.wheel_downloads(), "no wheel was read"
    unit = data["inputs"][0]
    assert [p["version"] for p in unit["packages"] if p["name"] == "torch"] == ["2.0.1"]
    assert code == 0


def test_with_pep_658_metadata_uv_downloads_no_wheel(tmp_path, index):
    if not _has_uv():
        pytest.skip("uv not installed")
    gate(tmp_path, "uv", index.url, "torch\nxformers==0.0.20\n", *PASCAL_470)
    assert index.wheel_downloads() == []


# --------------------------------------------------------------------------- inputs by content, project metadata


def test_a_pyproject_under_another_name_is_read_by_content_and_its_requires_python_judged(tmp_path):
    src = GATE_FIX / "alphafold3" / "pyproject-cuda.toml"
    r = CliRunner().invoke(main, ["gate", str(src), "--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.11",
                                  "--format", "json", "--offline"])
    assert r.exit_code == 1, r.output
    data = json.loads(r.output)
    assert data["inputs"][0]["kind"] == "pyproject"
    ed803 = [f for f in data["inputs"][0]["findings"] if f["id"] == "ED803" and "requires-python" in f["message"]]
    assert ed803 and ed803[0]["locations"] == [{"file": str(src), "line": 14}]
    ok = CliRunner().invoke(main, ["gate", str(src), "--driver", "580.65.06", "--gpu", "sm_120", "--python-version", "3.12",
                                   "--format", "json", "--offline"])
    assert not [f for u in json.loads(ok.output)["inputs"] for f in u["findings"] if "requires-python" in f["message"]]


def test_kind_overrides_the_content(tmp_path):
    src = GATE_FIX / "alphafold3" / "pyproject-cuda.toml"
    from envdoctor.errors import BadInput

    r = CliRunner().invoke(main, ["gate", str(src), "--cpu", "--python-version", "3.12", "--kind", "requirements", "--offline"])
    assert isinstance(r.exception, BadInput) and "pyproject-cuda.toml:" in str(r.exception)  # read as pip's format


def test_an_environment_file_with_any_name_is_read_as_conda(tmp_path):
    p = tmp_path / "deps-gpu.txt"
    p.write_text((GATE_FIX / "compvis-sd" / "environment.yaml").read_text())
    r = CliRunner().invoke(main, ["gate", str(p), "--cpu", "--python-version", "3.10", "--format", "json", "--offline"])
    assert json.loads(r.output)["inputs"][0]["kind"] == "conda", r.output


def test_direct_wheels_are_judged_by_their_tags(tmp_path):
    src = GATE_FIX / "text-generation-webui" / "requirements.txt"
    r = CliRunner().invoke(main, ["gate", str(src), "--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.11",
                                  "--format", "json", "--offline"])
    data = json.loads(r.output)
    lines = sorted(x["line"] for f in data["inputs"][0]["findings"] if f["id"] == "ED803" for x in f["locations"])
    assert lines == [28, 30, 37, 41], data["inputs"][0]["findings"]  # the cp310 linux_x86_64 wheels; Windows ones skipped
    ok = CliRunner().invoke(main, ["gate", str(src), "--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.10",
                                   "--format", "json", "--offline"])
    assert ok.exit_code == 0, ok.output


def test_a_vcs_reference_says_what_building_it_needs(tmp_path):
    src = GATE_FIX / "generative-models" / "requirements" / "pt2.txt"
    r = CliRunner().invoke(main, ["gate", str(src), "--cpu", "--python-version", "3.10", "--format", "json", "--offline"])
    nj = json.loads(r.output)["inputs"][0]["not_judged"]
    vcs = [x for x in nj if x["location"].endswith(":3")]
    assert vcs and "VCS checkout" in vcs[0]["why"] and "compiler" in vcs[0]["why"]
    assert {x["location"].rsplit(":", 1)[1] for x in nj} == {"3"}  # clip @ git+; torchdata, triton, xformers: from the data


# --------------------------------------------------------------------------- index options: the file's and pip's


def _split_files():
    """(the default index's files: everything but xformers, xformers' wheels) -- an install of xformers resolves only
    where the second place is given to the resolver."""
    files = served_files()
    return ({k: v for k, v in files.items() if not k.startswith("xformers-")},
            {k: v for k, v in files.items() if k.startswith("xformers-")})


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_the_files_extra_index_url_is_given_to_the_resolver(tmp_path, resolver):
    """An index the file names is contacted once it is allowed (--allow-index): it is neither pip's configured index
    nor a framework's."""
    main_files, xformers = _split_files()
    with FakeIndex(main_files, serve_wheels=True) as default, FakeIndex(xformers, serve_wheels=True) as extra:
        code, data = gate(tmp_path, resolver, default.url, f"--extra-index-url {extra.url}\nxformers==0.0.20\n",
                          *PASCAL_470, "--allow-index", extra.url)
        assert any("xformers" in p for p, _ in extra.requests)
    assert data["inputs"][0]["resolver"].startswith(resolver), data["inputs"][0]["resolver"]
    assert code == 0 and _torch_of(data) == ["2.0.1"]


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_pips_configured_extra_index_is_given_to_the_resolver(tmp_path, resolver):
    main_files, xformers = _split_files()
    with FakeIndex(main_files, serve_wheels=True) as default, FakeIndex(xformers, serve_wheels=True) as extra:
        conf = tmp_path / "pip.conf"
        conf.write_text(f"[global]\nindex-url = {default.url}\nextra-index-url = {extra.url}\n")
        code, data = gate(tmp_path, resolver, "", "xformers==0.0.20\n", *PASCAL_470, pip_conf=str(conf))
        assert any("xformers" in p for p, _ in extra.requests), data
    assert data["inputs"][0]["resolver"].startswith(resolver) and _torch_of(data) == ["2.0.1"], data


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_a_find_links_directory_relative_to_the_file_is_given_to_the_resolver(tmp_path, resolver):
    from tests.index_server import wheel_bytes

    main_files, xformers = _split_files()
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for fn, meta in xformers.items():
        (wheels / fn).write_bytes(wheel_bytes(fn, meta))
    with FakeIndex(main_files, serve_wheels=True) as default:
        code, data = gate(tmp_path, resolver, default.url, "--find-links ./wheels\nxformers==0.0.20\n", *PASCAL_470)
    assert data["inputs"][0]["resolver"].startswith(resolver), data["inputs"][0]["resolver"]
    assert code == 0 and _torch_of(data) == ["2.0.1"]


def test_a_uv_project_is_resolved_without_pips_configuration(tmp_path):
    """uv installs a project with [[tool.uv.index]] and never reads pip's configuration: its extra index (here a
    port where nothing listens) is not given to uv."""
    if not _has_uv():
        pytest.skip("uv not installed")
    with FakeIndex(served_files(), serve_wheels=True) as idx:
        conf = tmp_path / "pip.conf"
        conf.write_text(f"[global]\nextra-index-url = {closed_port_url()}\n")
        code, data = gate(tmp_path, "uv", "", '[project]\nname = "p"\nversion = "0"\nrequires-python = ">=3.9"\n'
                          'dependencies = ["torch", "xformers==0.0.20"]\n\n'
                          f'[[tool.uv.index]]\nname = "main"\nurl = "{idx.url}"\ndefault = true\n', *PASCAL_470,
                          "--allow-index", idx.url, name="pyproject.toml", pip_conf=str(conf))
    assert data["inputs"][0]["resolver"].startswith("uv for Python 3.10"), data["inputs"][0]["resolver"]
    assert _torch_of(data) == ["2.0.1"] and code == 0


def test_a_resolver_that_crashes_is_not_read_as_a_failed_resolution(tmp_path, index, monkeypatch):
    """pip before 23.2 dies with a traceback on an index serving the PEP 691 ``dist-info-metadata`` key
    (pypa/pip#12042): a crash says nothing about the requirements, so gate judges offline and says why."""
    shadow = tmp_path / "shadow" / "pip"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    (shadow / "__main__.py").write_text("import sys\nsys.stderr.write('Traceback (most recent call last):\\n  File x\\n"
                                        "TypeError: unhashable type: \\'dict\\'\\n')\nsys.exit(2)\n")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "shadow"))
    code, data = gate(tmp_path, "pip", index.url, "torch==2.0.1\n", *PASCAL_470)
    unit = data["inputs"][0]
    assert unit["resolver"].startswith("offline (pip could not resolve: pip crashed (TypeError: unhashable type"), \
        unit["resolver"]
    ids = {f["id"] for f in unit["findings"]}
    assert not ids & {"ED803", "ED804"}, ids  # no cause read from the crash's words
    assert [p["version"] for p in unit["packages"] if p["name"] == "torch"] == ["2.0.1"]
