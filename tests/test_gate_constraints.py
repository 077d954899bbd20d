"""gate --offline honours lines that constrain torch indirectly: the [[pin]] rows of
matrices/gate_indirect.toml (read from the packages' real metadata on the default index: xformers' Requires-Dist,
torch's own pin of triton) narrow the torch line before the planner picks the newest candidate.  Through the real CLI."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from envdoctor.cli import cli
from envdoctor.gate.constraints import as_specifier, torch_constraints
from envdoctor.gate.inputs import InputRequirement, Location

PASCAL_470 = ["--driver", "470.82.01", "--gpu", "sm_61", "--python-version", "3.10"]


def gate(tmp_path, text, *args):
    req = tmp_path / "requirements.txt"
    req.write_text(text)
    r = CliRunner().invoke(cli, ["gate", str(req), *args, "--offline", "--format", "json"])
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.output)


def text_gate(tmp_path, text, *args):
    req = tmp_path / "requirements.txt"
    req.write_text(text)
    r = CliRunner().invoke(cli, ["gate", str(req), *args, "--offline"])
    return r.exit_code, r.output


def errors(data):
    return sorted((f["id"], tuple(x["line"] for x in f["locations"])) for u in data["inputs"] for f in u["findings"]
                  if f["severity"] == "error")


def planned(data, name="torch"):
    return [p["version"] for p in data["inputs"][0]["packages"] if p["name"] == name]


def test_torch_with_xformers_0_0_20_plans_torch_2_0_1_and_passes_on_a_470_driver_and_a_gtx_1080(tmp_path):
    code, out = text_gate(tmp_path, "torch\nxformers==0.0.20\n", *PASCAL_470)
    assert code == 0, out
    assert "requirements.txt:1: torch 2.0.1 (CUDA 11.7" in out
    assert "xformers==0.0.20 installs torch==2.0.1" in out  # the output says why
    _, data = gate(tmp_path, "torch\nxformers==0.0.20\n", *PASCAL_470)
    assert planned(data) == ["2.0.1"] and errors(data) == []
    assert not any(x["location"].endswith(":2") for x in data["inputs"][0]["not_judged"])  # judged, from data


def test_without_the_xformers_line_the_same_torch_is_the_newest_and_fails_there(tmp_path):
    code, data = gate(tmp_path, "torch\n", *PASCAL_470)  # the constraint is what changes the verdict
    assert code == 1 and planned(data) != ["2.0.1"] and ("ED100", (1,)) in errors(data)


def test_tensorflow_2_7_0_on_python_3_10_fails_with_ed803_naming_the_line_and_python(tmp_path):
    code, out = text_gate(tmp_path, "numpy\ntensorflow==2.7.0\n", *PASCAL_470)
    assert code == 1
    line = next(x for x in out.splitlines() if "ED803" in x)
    assert "requirements.txt:2" in line and "tensorflow==2.7.0" in line and "Python 3.10" in line


def test_xformers_alone_brings_torch_2_0_1_in_at_its_line(tmp_path):
    code, data = gate(tmp_path, "xformers==0.0.20\n", *PASCAL_470)
    assert code == 0 and planned(data) == ["2.0.1"]
    torch = next(p for p in data["inputs"][0]["packages"] if p["name"] == "torch")
    assert torch["locations"] == [str(tmp_path / "requirements.txt") + ":1"]


def test_xformers_0_0_20_has_no_python_3_12_wheel_ed803_on_its_line_and_nothing_installed(tmp_path):
    code, data = gate(tmp_path, "torch\nxformers==0.0.20\n", "--driver", "580.65.06", "--gpu", "sm_120",
                      "--python-version", "3.12")
    assert code == 1 and errors(data) == [("ED803", (2,))]  # pip stops there: no ED100 about a torch never installed
    msg = next(f["message"] for f in data["inputs"][0]["findings"] if f["id"] == "ED803")
    assert "xformers 0.0.20" in msg and "Python 3.12" in msg


def test_triton_2_0_0_with_torch_at_least_2_0_1_plans_torch_2_0_1(tmp_path):
    code, data = gate(tmp_path, "torch>=2.0.1\ntriton==2.0.0\n", "--driver", "535.104.05", "--gpu", "sm_80",
                      "--python-version", "3.11")
    assert code == 0 and planned(data) == ["2.0.1"], errors(data)


def test_a_range_of_xformers_pairs_with_the_torch_pin(tmp_path):
    code, data = gate(tmp_path, "torch==2.1.0\nxformers<0.0.23\n", "--driver", "535.104.05", "--gpu", "sm_80",
                      "--python-version", "3.11")
    assert code == 0 and planned(data) == ["2.1.0"]  # xformers 0.0.22.post7 installs torch 2.1.0


def test_lines_no_torch_satisfies_together_are_ed804_naming_both(tmp_path):
    code, data = gate(tmp_path, "torch>=2.1\nxformers==0.0.20\n", *PASCAL_470)
    assert code == 1 and errors(data) == [("ED804", (1, 2))]


def test_a_release_without_a_row_is_not_judged_never_an_error_never_ignored(tmp_path):
    code, data = gate(tmp_path, "torch==2.0.1\nxformers==0.0.13\n", *PASCAL_470)
    assert code == 0 and errors(data) == []
    why = [x["why"] for x in data["inputs"][0]["not_judged"] if x["location"].endswith(":2")]
    assert len(why) == 1 and "not resolved offline" in why[0] and "envdoctor's data" in why[0]


def test_a_constraints_file_line_installs_nothing_and_does_not_constrain(tmp_path):
    (tmp_path / "c.txt").write_text("xformers==0.0.20\n")
    code, data = gate(tmp_path, "-c c.txt\ntorch==2.1.0\n", "--driver", "535.104.05", "--gpu", "sm_80",
                      "--python-version", "3.11")
    assert code == 0 and planned(data) == ["2.1.0"]


# --------------------------------------------------------------------------- the pieces


def _req(text: str, line: int = 1) -> InputRequirement:
    from envdoctor.gate.inputs import parse_requirement_text

    r, err = parse_requirement_text(text, Location("r.txt", line))
    assert r is not None, err
    return r


KNOWN = [Version(v) for v in ("1.13.1", "2.0.0", "2.0.1", "2.1.0", "2.1.1", "2.1.2", "2.2.0", "2.14.1")]


@pytest.mark.parametrize("allowed,expect_in,expect_out", [
    (["2.0.1"], ["2.0.1", "2.0.1+cu117"], ["2.0.0", "2.1.0"]),
    (["2.0.1", "2.1.0"], ["2.0.1+cu118", "2.1.0"], ["2.0.0", "2.1.1"]),
])
def test_as_specifier_admits_exactly_the_allowed_releases_local_labels_included(allowed, expect_in, expect_out):
    spec = as_specifier([Version(v) for v in allowed], KNOWN)
    assert all(spec.contains(v) for v in expect_in) and not any(spec.contains(v) for v in expect_out)


def test_an_open_range_beyond_the_data_leaves_newer_torch_possible_unless_the_rows_are_complete():
    c = torch_constraints([_req("torchtext>=0.16.0")], KNOWN + [Version("99.0")], Version("3.11"))
    assert c.specifier.contains(Version("99.0"))  # a newer torchtext (not in the data) may pair with it
    c = torch_constraints([_req("xformers>=0.0.20,<0.0.22.post7")], KNOWN, Version("3.11"))
    assert str(c.specifier) == "==2.0.1"
    c = torch_constraints([_req("triton>=2.0.0,<2.2")], KNOWN + [Version("99.0")], Version("3.11"))
    assert not c.specifier.contains(Version("99.0")) and c.specifier.contains(Version("2.1.2"))


def test_every_pin_row_has_a_source_a_verified_note_and_names_torch_releases_envdoctor_knows():
    from envdoctor.knowledge.load import parse_toml_cached
    from envdoctor.resources import data_dir

    data = parse_toml_cached((data_dir("matrices") / "gate_indirect.toml").read_text(encoding="utf-8"))
    from envdoctor.knowledge.matrices import load_matrices

    known = {Version(p) for rel in load_matrices().pytorch_releases for p in rel.patches}
    assert len(data["pin"]) >= 30
    for row in data["pin"]:
        assert row["source"].strip() and row["verified"].strip(), row
        spec = SpecifierSet(row["torch"])
        assert any(spec.contains(v) for v in known), row  # a torch the planner can plan
        SpecifierSet(row.get("python", ""))


def test_a_torchvision_pin_brings_its_torch_as_pip_does(tmp_path):
    code, data = gate(tmp_path, "torch\ntorchvision==0.15.2\n", *PASCAL_470)  # torchvision 0.15.2: torch==2.0.1
    assert code == 0 and planned(data) == ["2.0.1"], errors(data)


def test_a_torchvision_pin_for_another_torch_is_ed804_as_pip_fails(tmp_path):
    code, data = gate(tmp_path, "torch==2.1.0\ntorchvision==0.15.2\n", "--driver", "535.104.05", "--gpu", "sm_80",
                      "--python-version", "3.10")
    assert code == 1 and errors(data) == [("ED804", (1, 2))]


def test_local_labels_on_the_lines_pair_by_their_public_versions(tmp_path):
    code, data = gate(tmp_path, "--extra-index-url https://download.pytorch.org/whl/cu118\ntorch==2.3.0+cu118\n"
                      "torchvision==0.18.0+cu118\n", "--driver", "535.104.05", "--gpu", "sm_80", "--python-version", "3.11")
    assert code == 0 and planned(data) == ["2.3.0+cu118"], errors(data)


def test_conda_lines_are_left_to_conda(tmp_path):
    env = tmp_path / "environment.yml"
    env.write_text("channels:\n  - pytorch\ndependencies:\n  - python=3.10\n  - pytorch=2.1.0\n  - torchvision=0.15.2\n")
    r = CliRunner().invoke(cli, ["gate", str(env), "--driver", "535.104.05", "--gpu", "sm_80", "--python-version",
                                 "3.10", "--offline", "--format", "json"])
    data = json.loads(r.output)
    assert [p["name"] for p in data["inputs"][0]["packages"]].count("torch") == 0  # no pip torch line made up
    assert ("ED804", (5, 6)) not in errors(data)
