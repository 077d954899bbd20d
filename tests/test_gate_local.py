"""gate judges a local project a requirements line names (a path, a file: URL, -e, name @ file:, conda's pip list)
by the dependencies its pyproject.toml declares statically; it builds nothing and runs no setup.py."""
from __future__ import annotations

import json

import pytest

from tests.index_server import FakeIndex
from tests.test_gate_resolve import RESOLVERS, served_files
from tests.test_gate_untrusted import _gate, _resolving_env, repo  # noqa: F401 - repo: the shared checkout fixture

OLD = ["--driver", "470.82.01", "--gpu", "sm_61", "--python-version", "3.11", "--offline"]
PINNED = '[project]\nname = "x"\nversion = "1"\ndependencies = [\n  "torch==2.1.0",\n]\n'


def _project(root, rel, text=PINNED):
    d = root / rel
    d.mkdir(parents=True, exist_ok=True)
    (d / "pyproject.toml").write_text(text)
    return d


def _errors(p):
    data = json.loads(p.stdout)
    return [(f["id"], [x["file"] if "file" in x else x for x in f["locations"]]) for u in data["inputs"]
            for f in u["findings"] if f["severity"] == "error"]


@pytest.mark.parametrize("line", ["submodules/x", "./submodules/x", "-e submodules/x", "-e ./submodules/x[gpu]",
                                  "file://{root}/submodules/x", "x @ file://{root}/submodules/x"])
def test_each_path_form_judges_the_local_pin(repo, line):
    _project(repo, "submodules/x")
    (repo / "requirements.txt").write_text("requests\n" + line.format(root=repo) + "\n")
    p = _gate(repo, "requirements.txt", *OLD)
    assert p.returncode == 1, (p.stdout, p.stderr)
    shown = line.format(root=repo).replace("-e ", "").replace("x @ ", "").replace("[gpu]", "")
    shown = shown if len(shown) <= 80 else shown[:80] + "…"  # a long token is shown bounded
    assert f"requirements.txt:2 ({shown}: pyproject.toml:5): ED100 torch 2.1.0" in p.stdout, p.stdout


def test_a_requested_extra_is_judged_and_an_unrequested_one_is_not(repo):
    _project(repo, "x", '[project]\nname = "x"\nversion = "1"\n[project.optional-dependencies]\n'
                        'gpu = ["torch==2.1.0"]\n')
    (repo / "requirements.txt").write_text("./x\n")
    assert _gate(repo, "requirements.txt", *OLD).returncode == 0
    (repo / "requirements.txt").write_text("./x[gpu]\n")
    p = _gate(repo, "requirements.txt", *OLD)
    assert p.returncode == 1 and "ED100" in p.stdout, p.stdout


def test_parent_path_inside_the_repository(repo):
    _project(repo, "x")
    (repo / "sub").mkdir()
    (repo / "sub" / "requirements.txt").write_text("../x\n")
    p = _gate(repo, "sub/requirements.txt", *OLD)
    assert p.returncode == 1 and "sub/requirements.txt:1 (../x: pyproject.toml:5): ED100" in p.stdout, p.stdout


def test_dynamic_dependencies_are_not_judged_and_nothing_runs(repo, tmp_path):
    marker = tmp_path / "RAN"
    d = repo / "dyn"
    d.mkdir()
    (d / "setup.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    _project(repo, "dyn2", '[project]\nname = "d"\nversion = "1"\ndynamic = ["dependencies"]\n')
    (repo / "requirements.txt").write_text("./dyn\n-e ./dyn2\n./missing\n")
    p = _gate(repo, "requirements.txt", *OLD)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert "requirements.txt:1: ./dyn: a local project whose dependencies are dynamic (setup.py)" in p.stdout
    assert "requirements.txt:2: ./dyn2: a local project whose dependencies are dynamic (pyproject.toml)" in p.stdout
    assert "requirements.txt:3: ./missing: a local path that does not exist" in p.stdout
    # listed as not judged, never as something gate assumed
    assert "./dyn:" in p.stdout.split("not judged:", 1)[-1] and "assumed:" not in p.stdout, p.stdout
    data = json.loads(_gate(repo, "requirements.txt", *OLD, "--format", "json").stdout)
    assert [j["location"] for j in data["inputs"][0]["not_judged"]] == ["requirements.txt:1", "requirements.txt:2",
                                                                        "requirements.txt:3"], data
    assert not marker.exists()


SETUP_CFG = ("[metadata]\nname = x\n\n[options]\ninstall_requires =\n    numpy\n    torch==2.1.0  # the pin\n"
             "\n[options.extras_require]\njax = jax[cuda12]==0.4.30\n")


@pytest.mark.parametrize("setup_py", [None, "import setuptools\n\nif __name__ == '__main__':\n    setuptools.setup()\n",
                                      '"""x"""\nfrom setuptools import setup\nsetup()\n'])
def test_setup_cfg_is_judged_where_no_setup_py_can_change_it(repo, setup_py):
    d = repo / "x"
    d.mkdir()
    (d / "setup.cfg").write_text(SETUP_CFG)
    if setup_py is not None:
        (d / "setup.py").write_text(setup_py)
    (repo / "requirements.txt").write_text("./x\n")
    p = _gate(repo, "requirements.txt", *OLD)
    assert p.returncode == 1 and "requirements.txt:1 (./x: setup.cfg:7): ED100 torch 2.1.0" in p.stdout, p.stdout
    assert "jax" not in p.stdout  # an extra not asked for
    (repo / "requirements.txt").write_text("./x[jax]\n")
    p = _gate(repo, "requirements.txt", *OLD, "--format", "json")
    assert any("requirements.txt:1 (./x: setup.cfg:10)" in locs for _, locs in _errors(p)), _errors(p)  # the extra's pin


@pytest.mark.parametrize("setup_py, cfg", [
    ("from setuptools import setup\nsetup(install_requires=['torch==1.13.1'])\n", SETUP_CFG),
    ("import setuptools, os\nopen({marker!r}, 'w').write('x')\nsetuptools.setup()\n", SETUP_CFG),
    (None, "[options]\ninstall_requires = file: requirements.in\n"),
    (None, "[metadata]\nname = x\n"),
])
def test_setup_cfg_that_code_or_another_file_decides_is_not_judged(repo, tmp_path, setup_py, cfg):
    marker = tmp_path / "RAN"
    d = repo / "x"
    d.mkdir()
    (d / "setup.cfg").write_text(cfg)
    (d / "requirements.in").write_text("torch==2.1.0\n")
    if setup_py is not None:
        (d / "setup.py").write_text(setup_py.format(marker=str(marker)))
    (repo / "requirements.txt").write_text("./x\n")
    p = _gate(repo, "requirements.txt", *OLD)
    assert p.returncode == 0 and "ED100" not in p.stdout, p.stdout
    assert "not judged:" in p.stdout and "./x: a local project whose dependencies are dynamic" in p.stdout, p.stdout
    assert not marker.exists()


def test_a_path_outside_the_repository_is_not_read(repo, tmp_path):
    _project(tmp_path, "outer")
    (repo / "requirements.txt").write_text("../outer\n")
    p = _gate(repo, "requirements.txt", *OLD)
    assert p.returncode == 2 and "../outer: a local path, not read: it is outside the repository" in p.stderr
    assert "torch" not in p.stderr
    p = _gate(repo, "requirements.txt", *OLD, "--allow-outside")
    assert p.returncode == 1 and "ED100" in p.stdout, (p.stdout, p.stderr)


def test_a_long_path_outside_is_quoted_bounded(repo):
    long = "../" * 3 + "y" * 500
    (repo / "requirements.txt").write_text(long + "\n")
    p = _gate(repo, "requirements.txt", *OLD)
    assert p.returncode == 2 and "y" * 200 not in p.stderr, p.stderr


def test_text_that_is_neither_a_requirement_nor_a_path_stays_invalid(repo):
    (repo / "requirements.txt").write_text("not a/path!\n")
    p = _gate(repo, "requirements.txt", *OLD)
    assert p.returncode == 2 and "invalid requirement" in p.stderr, p.stderr


def test_conda_pip_list_editable_dot(repo):
    _project(repo, ".")
    (repo / "environment.yml").write_text("name: e\ndependencies:\n  - python=3.11\n  - pip\n  - pip:\n    - -e .\n")
    p = _gate(repo, "environment.yml", *OLD)
    assert p.returncode == 1 and "environment.yml:6 (.: pyproject.toml:5): ED100 torch 2.1.0" in p.stdout, p.stdout


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_resolving_mode_gets_the_static_dependencies_never_the_path(repo, tmp_path, resolver):
    marker = tmp_path / "RAN"
    d = _project(repo, "x", '[project]\nname = "x"\nversion = "1"\ndependencies = ["torch==2.0.1"]\n')
    (d / "setup.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    dyn = _project(repo, "dyn", '[project]\nname = "d"\nversion = "1"\ndynamic = ["dependencies"]\n')
    (dyn / "setup.py").write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    (repo / "requirements.txt").write_text("./x\n-e ./dyn\n")
    with FakeIndex(served_files(), serve_wheels=True) as idx:
        env = _resolving_env(tmp_path, resolver, idx.url)
        p = _gate(repo, "requirements.txt", "--driver", "470.82.01", "--gpu", "sm_61", "--python-version", "3.10",
                  "--format", "json", env=env)
    assert p.returncode in (0, 1), p.stderr
    unit = json.loads(p.stdout)["inputs"][0]
    assert unit["resolver"].startswith(resolver), unit["resolver"]
    assert [q["version"] for q in unit["packages"] if q["name"] == "torch"] == ["2.0.1"], unit["packages"]
    assert not marker.exists()


def test_a_bare_word_is_a_name_even_when_a_folder_has_it(repo):
    _project(repo, "torch")  # pip reads `torch` as the package, not this folder
    (repo / "requirements.txt").write_text("torch==2.1.0\n")
    p = _gate(repo, "requirements.txt", *OLD)
    assert p.returncode == 1 and "requirements.txt:1: ED100 torch 2.1.0" in p.stdout, p.stdout


def test_a_pyproject_linking_out_of_the_repository_is_not_read(repo, tmp_path):
    (tmp_path / "secret.toml").write_text(PINNED)
    (repo / "x").mkdir()
    (repo / "x" / "pyproject.toml").symlink_to(tmp_path / "secret.toml")
    (repo / "requirements.txt").write_text("./x\n")
    p = _gate(repo, "requirements.txt", *OLD)
    assert p.returncode == 2 and "./x: its pyproject.toml is not read: it is outside" in p.stderr, p.stderr
    assert "torch" not in p.stderr
