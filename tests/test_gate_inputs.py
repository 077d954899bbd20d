"""envdoctor.gate.inputs: install inputs -> requirements with file:line (real files in tests/fixtures/gate)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from envdoctor.gate.inputs import (
    Location,
    input_kind,
    load_inputs,
    logical_lines,
    parse_conda_spec,
    parse_options,
    wheel_info,
)

FIX = Path(__file__).parent / "fixtures" / "gate"


def _load(path, env=None):
    units, problems = load_inputs([str(path)], env=env or {})
    return units[0], problems


def _req(unit, name):
    hits = [r for r in unit.requirements if r.name == name]
    assert hits, f"{name} not read from {unit.path}"
    return hits[0]


@pytest.fixture
def here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


# --------------------------------------------------------------------------- requirements files


def test_keras_jax_cuda_file_with_include_and_index_options():
    unit, problems = _load(FIX / "keras" / "requirements-jax-cuda.txt")
    assert problems == []
    assert unit.kind == "requirements"
    assert [os.path.basename(f) for f in unit.files] == ["requirements-jax-cuda.txt", "requirements-common.txt"]
    jax = _req(unit, "jax")
    assert (jax.loc.line, jax.extras, jax.specifier) == (11, ("cuda12",), "==0.4.28")
    torch = _req(unit, "torch")
    assert (torch.loc.line, torch.specifier) == (7, "==2.6.0+cpu")
    assert _req(unit, "tensorflow-cpu").specifier == "~=2.18.0"
    numpy = _req(unit, "numpy")
    assert numpy.loc.file.endswith("requirements-common.txt") and numpy.loc.line == 6
    kinds = [(o.kind, o.url, o.loc.line) for o in unit.indexes]
    assert kinds == [("extra-index-url", "https://download.pytorch.org/whl/cpu", 6),
                     ("find-links", "https://storage.googleapis.com/jax-releases/jax_cuda_releases.html", 10)]


def test_rise_gen_file_reads_torch_line_and_pyg_find_links():
    unit, problems = _load(FIX / "rise-gen" / "requirements_cu121.txt")
    assert problems == []
    assert _req(unit, "torch").loc.line == 10
    assert [o.kind for o in unit.indexes] == ["extra-index-url", "find-links"]
    assert unit.indexes[1].loc.line == 35


def test_pip_line_rules(here):
    text = ("# a comment\n"
            "torch==2.1.2+cu121 \\\n"
            "    ; sys_platform == 'linux'  # trailing comment\n"
            "--extra-index-url=https://download.pytorch.org/whl/cu121\n"
            "-i https://mirror.example.invalid/simple\n"
            "--extra-index https://example.com/simple\n"
            "tensorflow[and-cuda]==2.15.0 --hash=sha256:abc\n"
            "jax[cuda12] ; python_version >= '3.10'\n"
            "https://download.pytorch.org/whl/cu121/torch-2.4.1%2Bcu121-cp310-cp310-linux_x86_64.whl\n"
            "somepkg @ https://example.com/somepkg-1.0.tar.gz\n"
            "-e git+https://github.com/x/y.git#egg=y\n"
            "torchvision==0.16.2 --index-url https://download.pytorch.org/whl/cu121\n"
            "torchaudio==${TA_VERSION}\n")
    (here / "requirements.txt").write_text(text)
    unit, problems = _load("requirements.txt", env={"TA_VERSION": "2.1.2"})
    assert problems == []
    torch = [r for r in unit.requirements if r.name == "torch"]
    assert torch[0].loc.line == 2 and torch[0].marker == 'sys_platform == "linux"'
    direct = torch[1]
    assert direct.loc.line == 9 and direct.version == "2.4.1+cu121" and direct.wheel_tags == ("cp310-cp310-linux_x86_64",)
    assert [(o.kind, o.url) for o in unit.indexes] == [
        ("extra-index-url", "https://download.pytorch.org/whl/cu121"), ("index-url", "https://mirror.example.invalid/simple"),
        ("extra-index-url", "https://example.com/simple")]
    tf = _req(unit, "tensorflow")
    assert tf.extras == ("and-cuda",) and tf.ignored_options == []  # --hash is a per-requirement option
    assert _req(unit, "jax").marker == 'python_version >= "3.10"'
    assert _req(unit, "torchvision").ignored_options == [("--index-url", "https://download.pytorch.org/whl/cu121")]
    assert _req(unit, "torchaudio").specifier == "==2.1.2"
    assert "y" not in {r.name for r in unit.requirements}  # editable VCS checkout: not a framework wheel


def test_logical_lines_join_continuations_like_pip():
    assert logical_lines("a \\\nb\n# c \\\nd\n") == [(1, "a b"), (3, "# c \\"), (4, "d")]


def test_option_parsing_errors():
    assert parse_options("--index-url")[1] == "option --index-url needs a value"
    assert "does not accept" in parse_options("--frobnicate x")[1]
    assert parse_options("-rother.txt")[0] == [("-r", "requirement", "other.txt")]


def test_includes_are_relative_to_the_including_file_and_constraints_are_marked(here):
    (here / "sub").mkdir()
    (here / "requirements.txt").write_text("-r sub/base.txt\n-c constraints.txt\n")
    (here / "sub" / "base.txt").write_text("torch>=2.0\n")
    (here / "constraints.txt").write_text("torch==2.1.2\n")
    unit, problems = _load("requirements.txt")
    assert problems == []
    reqs = [(r.loc.file, r.loc.line, r.specifier, r.constraint) for r in unit.requirements]
    assert reqs == [(os.path.join("sub", "base.txt"), 1, ">=2.0", False), ("constraints.txt", 1, "==2.1.2", True)]


def test_cyclic_and_missing_includes_are_problems_with_file_and_line(here):
    (here / "a.txt").write_text("numpy\n-r b.txt\n")
    (here / "b.txt").write_text("-r a.txt\n")
    _, problems = _load("a.txt")
    assert len(problems) == 1
    assert str(problems[0]).startswith("b.txt:1: cyclic include: -r a.txt (a.txt -> b.txt -> a.txt)")
    (here / "c.txt").write_text("\n\n-r nothere.txt\n")
    _, problems = _load("c.txt")
    assert [str(p) for p in problems] == ["c.txt:3: -r nothere.txt: cannot read it: no such file"]


def test_broken_requirement_lines(here):
    (here / "r.txt").write_text("numpy\ntorch=2.1.2\ntorch==\ntorchaudio==${UNSET_VAR}\n")
    _, problems = _load("r.txt")
    assert [p.loc.line for p in problems] == [2, 3, 4]
    # the quote stops where the requirement stopped making sense: the rest of a line may be anything
    assert "invalid requirement 'torch…': Expected semicolon" in problems[0].message
    assert "environment variable" in problems[2].message


def test_unknown_non_framework_packages_are_read_without_complaint(here):
    (here / "r.txt").write_text("some-package-nobody-knows==0.0.1\nanother_one>=3\n")
    unit, problems = _load("r.txt")
    assert problems == [] and {r.name for r in unit.requirements} == {"some-package-nobody-knows", "another-one"}


def test_wheel_info_reads_the_build_from_the_file_name():
    assert wheel_info("https://download.pytorch.org/whl/cu118/torch-2.0.1%2Bcu118-cp310-cp310-linux_x86_64.whl") == (
        "torch", "2.0.1+cu118", ("cp310-cp310-linux_x86_64",))
    assert wheel_info("https://example.com/pkg-1.0.tar.gz") is None


def test_input_kinds():
    assert [input_kind(p) for p in ("requirements-gpu.txt", "x/pyproject.toml", "environment.yaml", "pylock.toml",
                                    "pylock.gpu.toml", "uv.lock", "constraints.in")] == [
        "requirements", "pyproject", "conda", "pylock", "pylock", "uv.lock", "requirements"]


def test_unreadable_input(here):
    units, problems = load_inputs(["nothere.txt"])
    assert [str(p) for p in problems] == ["nothere.txt: cannot read it: no such file"]
    (here / "bin.txt").write_bytes(b"\xff\xfe\x00torch")
    _, problems = load_inputs(["bin.txt"])
    assert "not UTF-8" in problems[0].message


# --------------------------------------------------------------------------- pyproject.toml


def test_llava_pyproject_several_requirements_per_line():
    unit, problems = _load(FIX / "llava" / "pyproject.toml")
    assert problems == []
    assert (_req(unit, "torch").loc.line, _req(unit, "torchvision").loc.line) == (18, 18)
    einops = [r.loc.line for r in unit.requirements if r.name == "einops"]
    assert einops == [16, 27]  # "einops" and "einops==0.6.1" each found on their own line
    assert all(r.group is None for r in unit.requirements)


def test_uv_pyproject_extras_sources_indexes_and_conflicts():
    unit, problems = _load(FIX / "uv-10326" / "pyproject.toml")
    assert problems == []
    assert unit.strategy == "first-index"
    assert [(r.loc.line, r.group) for r in unit.requirements] == [(9, ("extra", "cpu")), (12, ("extra", "cu121"))]
    assert unit.extras == ["cpu", "cu121"]
    assert unit.conflicts == [[("extra", "cpu"), ("extra", "cu121")]]
    assert unit.sources["torch"] == [{"index": "pytorch-cpu", "extra": "cpu"}, {"index": "pytorch-cu121", "extra": "cu121"}]
    assert [(o.name, o.url, o.explicit, o.loc.line) for o in unit.indexes] == [
        ("pytorch-cpu", "https://download.pytorch.org/whl/cpu", True, 32),
        ("pytorch-cu121", "https://download.pytorch.org/whl/cu121", True, 37)]


def test_dependency_groups_pep735(here):
    (here / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "1"\n\n[dependency-groups]\n'
        'gpu = ["torch==2.5.1", {include-group = "base"}]\nbase = ["numpy"]\n')
    unit, problems = _load("pyproject.toml")
    assert problems == []
    assert [(r.name, r.group, r.loc.line) for r in unit.requirements] == [
        ("torch", ("group", "gpu"), 6), ("numpy", ("group", "gpu"), 7), ("numpy", ("group", "base"), 7)]
    (here / "pyproject.toml").write_text('[dependency-groups]\na = [{include-group = "b"}]\nb = [{include-group = "a"}]\n')
    _, problems = _load("pyproject.toml")
    assert problems and "includes itself" in problems[0].message and problems[0].loc.line == 2


def test_invalid_toml_names_the_line(here):
    (here / "pyproject.toml").write_text('[project]\nname = "x"\ndependencies = ["torch==2.1.2",\n  oops\n]\n')
    _, problems = _load("pyproject.toml")
    assert len(problems) == 1 and problems[0].loc.line == 4 and problems[0].message.startswith("invalid TOML:")
    (here / "pyproject.toml").write_text('[project]\ndependencies = "torch"\n')
    _, problems = _load("pyproject.toml")
    assert problems[0].loc.line == 2 and "list of requirement strings" in problems[0].message


# --------------------------------------------------------------------------- conda environment.yml


def test_neural_amp_modeler_environment():
    unit, problems = _load(FIX / "neural-amp-modeler" / "environment_gpu.yml")
    assert problems == []
    assert unit.kind == "conda" and unit.channels == ["conda-forge", "pytorch", "nvidia"]
    assert unit.python is not None and unit.python[0] == ">=3.9" and unit.python[1].line == 11
    pytorch = _req(unit, "pytorch")
    assert pytorch.conda and pytorch.loc.line == 23 and pytorch.specifier == ""
    assert _req(unit, "pytorch-cuda").specifier == "==12.1.*"
    pip = [(r.name, r.loc.line) for r in unit.requirements if r.group == ("pip", "")]
    assert pip == [("auraloss", 34), ("pytorch-lightning", 35), ("sounddevice", 36), ("transformers", 37), ("wavio", 38)]


@pytest.mark.parametrize("spec,name,specifier,build,channel", [
    ("pytorch", "pytorch", "", None, None),
    ("pytorch=2.1.2", "pytorch", "==2.1.2.*", None, None),
    ("pytorch==2.1.2", "pytorch", "==2.1.2", None, None),
    ("pytorch::pytorch=1.13.1", "pytorch", "==1.13.1.*", None, "pytorch"),
    ("pytorch=2.1.2=py3.10_cuda12.1_cudnn8.9.2_0", "pytorch", "==2.1.2.*", "py3.10_cuda12.1_cudnn8.9.2_0", None),
    ("python>=3.9", "python", ">=3.9", None, None),
    ("cudatoolkit=11.3", "cudatoolkit", "==11.3.*", None, None),
])
def test_conda_specs(spec, name, specifier, build, channel):
    req, err = parse_conda_spec(spec, Location("environment.yml", 1))
    assert err is None
    assert (req.name, req.specifier, req.conda_build, req.conda_channel) == (name, specifier, build, channel)


def test_invalid_yaml_in_an_environment_file_names_the_line(here):
    (here / "environment.yml").write_text("name: x\ndependencies:\n  - python=3.10\n  - [unclosed\n")
    _, problems = _load("environment.yml")
    assert len(problems) == 1 and problems[0].loc.line == 4


def test_conda_shape_problems(here):
    (here / "environment.yml").write_text("- just\n- a list\n")
    _, problems = _load("environment.yml")
    assert problems[0].loc.line == 1 and "mapping" in problems[0].message
    (here / "environment.yml").write_text("name: x\ndependencies:\n  - pip:\n      nested: map\n")
    _, problems = _load("environment.yml")
    assert problems[0].loc.line == 4 and "pip:" in problems[0].message


def test_conda_pip_section_reads_options_and_includes(here):
    (here / "gpu.txt").write_text("torch==2.0.1+cu117\n")
    (here / "environment.yaml").write_text(
        "name: chat\ndependencies:\n  - python=3.10\n  - pip:\n"
        "    - --extra-index-url https://download.pytorch.org/whl/cu117\n    - -r gpu.txt\n")
    unit, problems = _load("environment.yaml")
    assert problems == []
    assert unit.python[0] == "==3.10.*"
    assert [(o.kind, o.loc.line) for o in unit.indexes] == [("extra-index-url", 5)]
    assert [(r.name, r.loc.file, r.loc.line) for r in unit.requirements] == [("torch", "gpu.txt", 1)]


# --------------------------------------------------------------------------- lock files


def test_pylock_example():
    unit, problems = _load(FIX / "pylock" / "pylock.example.toml")
    assert problems == []
    assert [(r.name, r.version, r.loc.line) for r in unit.requirements] == [
        ("attrs", "25.1.0", 7), ("cattrs", "24.1.2", 25), ("numpy", "2.2.3", 40)]
    numpy = unit.requirements[-1]
    assert "cp312-cp312-win_amd64" in numpy.wheel_tags


def test_pylock_wrong_version(here):
    text = (FIX / "pylock" / "pylock.example.toml").read_text().replace("lock-version = '1.0'", "lock-version = '2.0'")
    (here / "pylock.toml").write_text(text)
    _, problems = _load("pylock.toml")
    assert problems and "lock-version" in problems[0].message and problems[0].loc.line == 1


UV_LOCK = '''version = 1
requires-python = ">=3.12"

[[package]]
name = "project"
version = "0.1.0"
source = { virtual = "." }

[[package]]
name = "torch"
version = "2.6.0+cpu"
source = { registry = "https://download.pytorch.org/whl/cpu" }
resolution-markers = [
    "extra == 'extra-7-project-cpu'",
]
wheels = [
    { url = "https://download.pytorch.org/whl/cpu/torch-2.6.0%2Bcpu-cp312-cp312-linux_x86_64.whl", hash = "sha256:00" },
]

[[package]]
name = "torch"
version = "2.6.0+cu126"
source = { registry = "https://download.pytorch.org/whl/cu126" }
resolution-markers = [
    "extra == 'extra-7-project-gpu'",
]
'''


def test_uv_lock(here):
    """uv.lock in the shape uv writes ([[package]] name / version / source.registry / resolution-markers / wheels, as
    quoted in https://github.com/astral-sh/uv/issues/9307): each locked torch with its registry and line."""
    (here / "uv.lock").write_text(UV_LOCK)
    unit, problems = _load("uv.lock")
    assert problems == []
    assert unit.strategy == "first-index"
    assert [(r.name, r.version, r.index, r.loc.line) for r in unit.requirements] == [
        ("torch", "2.6.0+cpu", "https://download.pytorch.org/whl/cpu", 10),
        ("torch", "2.6.0+cu126", "https://download.pytorch.org/whl/cu126", 21)]
    assert unit.requirements[0].wheel_tags == ("cp312-cp312-linux_x86_64",)
    assert unit.requirements[1].marker == "(extra == 'extra-7-project-gpu')"


def test_reading_never_writes(here):
    src = FIX / "keras"
    shutil.copytree(src, here / "keras")
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (here / "keras").iterdir()}
    load_inputs([str(here / "keras" / "requirements-jax-cuda.txt")])
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in (here / "keras").iterdir()} == before
