"""envdoctor.gate.inputs.yamlread: YAML inputs read with PyYAML's safe parser (its C loader and the pure-Python one),
every node with its line; anchors, aliases and tags refused, depth and size bounded; and through the real
`envdoctor gate` CLI: valid conda files the old subset reader refused are judged, hostile ones are one-line errors."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from envdoctor.gate.inputs import MAX_YAML_NODES, YamlError, load_yaml, read_yaml
from tests.cli_run import one_line_error, run
from tests.snapfactory import machine

GATE_470 = ["--driver", "470.57.02", "--gpu", "sm_70", "--python-version", "3.10"]


@pytest.fixture(params=["C", "pure"])
def loader(request, monkeypatch):
    """Both of PyYAML's parsers: libyaml's where it is built, the pure-Python one where it is not."""
    if request.param == "C":
        if not getattr(yaml, "__with_libyaml__", False):
            pytest.skip("this PyYAML has no libyaml")
    else:
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    return request.param


def _error(text: str) -> YamlError:
    with pytest.raises(YamlError) as info:
        read_yaml(text)
    return info.value


# --------------------------------------------------------------------------- what is read


def test_conda_styles_keep_their_lines(loader):
    text = ('name: "my env"  # quoted\n'
            "channels: [pytorch, 'nvidia']\n"
            "dependencies:\n"
            "- python=3.10\n"
            "- pip:\n"
            "  - torch==2.1.2  # the pip list at the key's indentation\n"
            "  - \"numpy # not a comment\"\n")
    doc = read_yaml(text)
    assert doc.kind == "map" and doc.value["name"].value == "my env"
    assert [c.value for c in doc.value["channels"].value] == ["pytorch", "nvidia"]
    deps = doc.value["dependencies"].value
    assert deps[0].value == "python=3.10" and deps[0].line == 4
    pip = deps[1].value["pip"].value
    assert [(x.value, x.line) for x in pip] == [("torch==2.1.2", 6), ("numpy # not a comment", 7)]


@pytest.mark.parametrize("text", [
    "a: |\n  line one\n  line two\nb: >\n  folded\n  text\n",  # block scalars
    "a: {x: 1, y: [2, 3]}\n",  # flow mapping, nested flow
    "a: a plain scalar\n  over two lines\n",
    "- - nested\n  - on one line\n",
    "%YAML 1.1\n---\na: 1\n...\n",
    "a: yes\nb: 0x1f\nc: 1.5e3\nd: ~\ne: .inf\nf: !!str 3.10\ng: 1_000\nh: 'it''s'\ni: \"tab\\there\"\n",
    "",
    "# only a comment\n",
])
def test_valid_yaml_reads_as_pyyaml_reads_it(text, loader):
    assert load_yaml(text) == yaml.safe_load(text)


def test_dates_stay_the_text_written(loader):
    """PyYAML's safe_load makes dates of them; an input's values are only plain types."""
    assert load_yaml("a: 2001-12-14\n") == {"a": "2001-12-14"}


def test_empty_values_are_null_on_their_own_line(loader):
    doc = read_yaml("a:\nb:\n  -\n  - pip:\n")
    assert (doc.value["a"].kind, doc.value["a"].line) == ("null", 1)
    items = doc.value["b"].value
    assert [(x.kind, x.line) for x in items] == [("null", 3), ("map", 4)]
    assert items[1].value["pip"].kind == "null"


# --------------------------------------------------------------------------- what is refused, with its line


@pytest.mark.parametrize("text,line", [
    ("a: 1\n b: 2\n", 2),
    ("dependencies:\n  - x\n - y\n", 3),
    ("a: [1, 2\n", 1),  # found at the end of the file: the line of the unclosed sequence
    ("a: 1\na: 2\n", 2),
    ("a:\n\t- x\n", 2),
    ("a: 1\n---\nb: 2\n", 2),
    ("a: \x01\n", 1),
])
def test_errors_have_lines(text, line, loader):
    err = _error(text)
    assert err.line == line and err.message.startswith("invalid YAML: "), (err.line, err.message)
    assert "\n" not in err.message


def test_a_tab_indent_says_so(loader):
    assert "tab character" in _error("name: x\ndependencies:\n\t- pytorch\n").message


def test_alias_bomb_is_refused_at_the_first_anchor(loader):
    """A 400-byte alias bomb expands to gigabytes: anchors are refused before anything is built."""
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9))
    assert len(bomb) < 450
    err = _error(bomb)
    assert err.line == 1 and "aliases" in err.message


def test_an_alias_without_its_anchor_is_refused_as_an_alias(loader):
    err = _error("a: 1\nb: *x\n")
    assert err.line == 2 and "aliases (*x)" in err.message


@pytest.mark.parametrize("text,line", [
    ("".join(" " * i + "a:\n" for i in range(5000)), 65),
    ("- " * 5000 + "x\n", 1),
])
def test_nesting_is_bounded(text, line, loader):
    err = _error(text)
    assert "nested deeper than 64" in err.message and err.line == line


def test_deep_flow_nesting_is_refused(loader):
    err = _error("[" * 200_000 + "]" * 200_000)
    assert err.line == 1 and "nest" in err.message


def test_node_count_is_bounded(loader):
    err = _error("- a\n" * (MAX_YAML_NODES + 1))
    assert f"more than {MAX_YAML_NODES} values" in err.message and err.line == MAX_YAML_NODES


@pytest.mark.parametrize("text,shown", [
    ("a: !!python/object/apply:os.system ['true']\n", "!!'python…'"),
    ("a: !!python/name:os.system ''\n", "!!'python…'"),
    ("a: !!binary aGk=\n", "!!'binary'"),
    ("a: !!set {x: null}\n", "!!'set'"),
    ("a: !!timestamp 2001-12-14\n", "!!'timestamp'"),
    ("a: !local 1\n", "!'local'"),
    ("a: !!map [1]\n", "!!'map'"),  # a core tag on the wrong kind of node
])
def test_tags_are_refused(text, shown, loader):
    err = _error(text)
    assert err.line == 1 and "tags are not read" in err.message and shown in err.message, err.message


@pytest.mark.parametrize("text,needle", [
    ("<<: {a: 1}\nb: 2\n", "merge keys"),
    ("? [a, b]\n: 1\n", "mapping key must be a plain value"),
    ("a: " + "1" * 5000 + "\n", "an integer of 5000 characters"),
])
def test_other_refusals(text, needle, loader):
    err = _error(text)
    assert err.line == 1 and needle in err.message


def test_without_pyyaml_one_error_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "yaml", None)  # `import yaml` raises ImportError
    err = _error("dependencies:\n  - pytorch\n")
    assert "PyYAML is not installed" in err.message and err.line == 0


# --------------------------------------------------------------------------- through the CLI


def test_block_scalar_environment_file_is_judged(tmp_path):
    """A conda file with a block scalar (the old subset reader refused it, exit 2) is judged, lines intact."""
    (tmp_path / "environment.yml").write_text(
        "name: demo\nchannels:\n  - pytorch\n  - nvidia\nvariables:\n  NOTE: |\n    built for the lab cluster\n"
        "    (two lines)\ndependencies:\n  - python=3.10\n  - pytorch=2.1.2\n  - pytorch-cuda=12.1\n"
        "  - pip:\n    - numpy<2\n")
    proc = run("gate", "environment.yml", *GATE_470, "--format", "json", cwd=str(tmp_path))
    assert proc.returncode == 1, proc.stderr
    assert "environment.yml:11" in proc.stdout and "ED100" in proc.stdout, proc.stdout


def test_alias_alone_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "environment.yml").write_text("name: x\ndependencies:\n  - *torch\n")
    line = one_line_error(run("gate", "environment.yml", *GATE_470, cwd=str(tmp_path)))
    assert "environment.yml:3:" in line and "aliases (*torch)" in line


def test_too_deep_nesting_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "environment.yml").write_text("dependencies:\n" + "".join(" " * i + "- \n" for i in range(2, 200)))
    line = one_line_error(run("gate", "environment.yml", *GATE_470, cwd=str(tmp_path)))
    assert "environment.yml:" in line and "nested deeper than 64 levels" in line


def test_python_object_tag_is_refused_and_never_run(tmp_path):
    (tmp_path / "environment.yml").write_text(
        "name: x\ndependencies:\n  - !!python/object/apply:os.system ['touch pwned']\n")
    line = one_line_error(run("gate", "environment.yml", *GATE_470, cwd=str(tmp_path)))
    assert "environment.yml:3:" in line and "tags are not read" in line
    assert not (tmp_path / "pwned").exists()


def _yaml_imported(argv, cwd: Path) -> bool:
    code = ("import sys\n"
            "from envdoctor.entry import main\n"
            "try:\n"
            f"    main({argv!r})\n"
            "except SystemExit:\n"
            "    pass\n"
            "sys.stderr.write('\\nyaml-imported=%s\\n' % ('yaml' in sys.modules))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=str(cwd), timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.stderr.rsplit("yaml-imported=", 1)[1].strip() == "True"


def test_pyyaml_is_imported_only_to_read_a_yaml_input(tmp_path):
    snap = tmp_path / "snap.json"
    snap.write_text(machine(driver="535.104.05", driver_cuda="12.2", gpus=["NVIDIA A100-SXM4-80GB:8.0"]).to_json())
    (tmp_path / "requirements.txt").write_text("numpy<2\n")
    (tmp_path / "environment.yml").write_text("dependencies:\n  - numpy<2\n")
    assert not _yaml_imported(["check", "--snapshot", str(snap)], tmp_path)
    assert not _yaml_imported(["gate", "requirements.txt", *GATE_470], tmp_path)
    assert _yaml_imported(["gate", "environment.yml", *GATE_470], tmp_path)
