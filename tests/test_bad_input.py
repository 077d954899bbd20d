"""Every file a command reads from the user, fed bad input through the real CLI ("Parsers and inputs that
escape their contract"): exit 2, one stderr line naming the file (and the line where there is one), no traceback,
in bounded time (each run is a subprocess with a timeout: a hang fails the test instead of hanging it)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.cli_run import one_line_error, run

GATE_FACTS = ["--driver", "550.144.03", "--gpu", "sm_75", "--python-version", "3.10"]
ROOT = os.geteuid() == 0 if hasattr(os, "geteuid") else False

# input -> (file name, command line with {} for the file)
INPUTS = {
    "check --snapshot": ("snap.json", ["check", "--snapshot", "{}"]),
    "probe --snapshot": ("snap.json", ["probe", "--snapshot", "{}"]),
    "onboard --snapshot": ("snap.json", ["onboard", "-q", "--dry-run", "--cpu", "--env-dir", "{env}", "--snapshot", "{}"]),
    "gate requirements": ("requirements.txt", ["gate", "{}", *GATE_FACTS]),
    "gate pyproject": ("pyproject.toml", ["gate", "{}", *GATE_FACTS]),
    "gate uv.lock": ("uv.lock", ["gate", "{}", *GATE_FACTS]),
    "gate pylock": ("pylock.toml", ["gate", "{}", *GATE_FACTS]),
    "gate environment.yml": ("environment.yml", ["gate", "{}", *GATE_FACTS]),
    "lock --check": ("requirements-cuda.txt", ["lock", "--check", "{}", "--cuda", "12.1", "--python-version", "3.11"]),
}
JSON_INPUTS = {"check --snapshot", "probe --snapshot", "onboard --snapshot"}
TOML_INPUTS = {"gate pyproject", "gate uv.lock", "gate pylock"}
# an empty file is a valid input here (nothing to install): it must not be an error at all
EMPTY_IS_VALID = {"gate requirements", "gate pyproject", "gate environment.yml"}


def deep(name: str) -> str:
    if name in JSON_INPUTS:
        return "[" * 200_000 + "]" * 200_000
    if name == "lock --check":  # a JSON lock
        return '{"a": ' * 200_000 + "1" + "}" * 200_000
    if name in TOML_INPUTS:
        return "a = " + "[" * 5000 + "]" * 5000 + "\n"
    if name == "gate environment.yml":
        return "".join(" " * i + "a:\n" for i in range(5000))
    return "torch==" + "[" * 5000 + "\n"  # requirements: the include chain is its own test below


def make(kind: str, name: str, path: Path) -> None:
    if kind == "empty":
        path.write_text("")
    elif kind == "binary":
        path.write_bytes(bytes(range(256)) * 4)
    elif kind == "huge":
        with open(path, "wb") as fh:
            fh.truncate(17 * 1024 * 1024)  # sparse, over the 16 MiB bound
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "device":
        path.symlink_to("/dev/zero")
    elif kind == "no permission":
        path.write_text("torch\n")
        path.chmod(0)
    elif kind == "symlink loop":
        path.symlink_to(path.name)
    elif kind == "deep nesting":
        path.write_text(deep(name))
    elif kind == "invalid UTF-8":
        path.write_bytes(b"torch==2.3.0 \xff\xfe\n")
    elif kind == "missing":
        pass
    else:
        raise AssertionError(kind)


KINDS = ("empty", "binary", "huge", "fifo", "directory", "device", "no permission", "symlink loop", "deep nesting",
         "invalid UTF-8", "missing")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", list(INPUTS))
def test_bad_input_table(name, kind, tmp_path):
    if kind == "no permission" and ROOT:
        pytest.skip("root reads a file without permissions: no permission error to test")
    work = tmp_path / "work"
    work.mkdir()
    fname, cmd = INPUTS[name]
    path = work / fname
    make(kind, name, path)
    args = [a.replace("{env}", str(tmp_path / "env")).replace("{}", str(path)) for a in cmd]
    proc = run(*args, cwd=str(work), env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache")})
    if kind == "empty" and name in EMPTY_IS_VALID:
        assert proc.returncode in (0, 1), proc.stderr
        assert "Traceback" not in proc.stderr and "error" not in proc.stderr, proc.stderr
        return
    line = one_line_error(proc)
    assert str(path) in line or (fname in line and name.startswith("gate")), line


# --------------------------------------------------------------------------- the repros, with file:line


@pytest.mark.parametrize("fname, text, where, needle", [
    ("pylock.toml", 'lock-version = "1.0"\n[[packages]]\nname = "torch"\nversion = "2.3.0"\nwheels = 1\n',
     "pylock.toml:3", "wheels must be an array"),
    ("uv.lock", 'version = 1\n[[package]]\nname = "torch"\nversion = "2.3.0"\nsource = { registry = "x" }\nwheels = 1\n',
     "uv.lock:3", "wheels must be an array"),
    ("requirements.txt", "numpy\nhttps://[::1/x.whl\n", "requirements.txt:2", "invalid URL"),
    ("requirements.txt", "torch @ https://[::1/torch-2.3.0-cp310-cp310-linux_x86_64.whl\n", "requirements.txt:1",
     "invalid URL"),
    ("requirements.txt", "torch==2." + "1" * 4300 + "\n", "requirements.txt:1", "4300 digits"),
    ("requirements.txt", "torch==" + "9" * 5000 + "\n", "requirements.txt:1", "5000 digits"),
    ("pylock.toml", 'lock-version = "1.0"\n[[packages]]\nname = "torch"\nversion = "2.' + "3" * 4300 + '"\n',
     "pylock.toml:3", "digits"),
    ("environment.yml", "dependencies:\n  - pytorch=2." + "1" * 4300 + "\n", "environment.yml:2", "digits"),
    ("environment.yml", 'dependencies:\n  - pip:\n    - "-r a\\0b.txt"\n', "environment.yml:3", "NUL byte"),
    ("pyproject.toml", "[project]\nname = 'x'\ndependencies = " + "[" * 3000 + "]" * 3000 + "\n", "pyproject.toml",
     "nested too deeply"),
    ("environment.yml", "name: x\ndependencies:\n  - a\n - b\n", "environment.yml:4", "invalid YAML"),
])
def test_gate_input_repros(fname, text, where, needle, tmp_path):
    (tmp_path / fname).write_text(text)
    line = one_line_error(run("gate", fname, *GATE_FACTS, cwd=str(tmp_path)))
    assert f"error: {where}" in line and needle in line, line


def test_nul_in_an_include_name_of_a_requirements_file(tmp_path):
    """`-r a<NUL>b.txt` written into a requirements file: a NUL makes it a binary file, refused with its name."""
    (tmp_path / "r.txt").write_bytes(b"-r a\x00b.txt\n")
    line = one_line_error(run("gate", "r.txt", *GATE_FACTS, cwd=str(tmp_path)))
    assert "r.txt" in line and "NUL byte" in line


def test_include_chain_1200_deep(tmp_path):
    for i in range(1200):
        (tmp_path / f"c{i}.txt").write_text(f"-r c{i + 1}.txt\n")
    (tmp_path / "c1200.txt").write_text("torch\n")
    line = one_line_error(run("gate", "c0.txt", *GATE_FACTS, cwd=str(tmp_path)))
    assert "c49.txt:1" in line and "nested deeper than 50" in line


def test_yaml_without_pyyaml_is_one_line_not_an_internal_error(tmp_path):
    """PyYAML is a dependency, but a broken install without it says so in one line naming the file."""
    (tmp_path / "environment.yml").write_text("name: x\ndependencies:\n  - a\n")
    proc = run("gate", "environment.yml", *GATE_FACTS, cwd=str(tmp_path), prelude="import sys; sys.modules['yaml'] = None")
    line = one_line_error(proc)
    assert "environment.yml" in line and "PyYAML is not installed" in line, line


def test_yaml_alias_bomb_is_refused_at_once(tmp_path):
    """With PyYAML a 400-byte alias bomb took > 100 s and 2.4 GB."""
    bomb = "dependencies: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}]\n"
        for i in range(9))
    (tmp_path / "environment.yml").write_text(bomb)
    proc = run("gate", "environment.yml", *GATE_FACTS, cwd=str(tmp_path))
    line = one_line_error(proc)
    assert "environment.yml:1" in line and "aliases" in line and proc.seconds < 30, line


@pytest.mark.parametrize("text, needle", [
    ('{"schema_version": "1.0", "gpus": [' * 1 + "[" * 200_000 + "]" * 200_000 + "]}", "nested deeper"),
    ('{"schema_version": "1.0", "x": 1' + "2" * 5000 + "}", "5001 digits"),
])
def test_snapshot_deep_or_huge_numbers_is_bad_input_not_internal_error(text, needle, tmp_path):
    p = tmp_path / "s.json"
    p.write_text(text)
    for cmd in ("check", "probe"):
        line = one_line_error(run(cmd, "--snapshot", str(p)))
        assert str(p) in line and needle in line


@pytest.mark.parametrize("text", [
    '{"schema": "envdoctor-lock/1", "lock": {}, "requirements": [' + "[" * 200_000 + "]" * 200_000 + "]}",
    '{"schema": "envdoctor-lock/1", "lock": 1' + "0" * 5000 + "}",
])
def test_lock_check_deep_or_huge_numbers(text, tmp_path):
    p = tmp_path / "lock.json"
    p.write_text(text)
    line = one_line_error(run("lock", "--check", str(p), "--cuda", "12.1", "--python-version", "3.11"))
    assert str(p) in line


@pytest.mark.parametrize("kind", ["fifo", "device", "directory", "symlink loop", "huge", "binary"])
def test_root_files_never_hang_or_sink_the_probe(kind, tmp_path):
    """Under --root, a bad system file is not read (recorded where it is not a plain file), never a hang."""
    root = tmp_path / "root"
    target = root / "proc" / "driver" / "nvidia" / "version"
    target.parent.mkdir(parents=True)
    (root / "etc").mkdir()
    make(kind, "root", target)
    make(kind, "root", root / "etc" / "os-release")
    proc = run("probe", "--root", str(root), "--format", "json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    if kind in ("fifo", "device", "symlink loop"):
        import json

        files = [p for p in json.loads(proc.stdout)["probes"] if p["name"] == "files"]
        assert files and "/proc/driver/nvidia/version" in files[0]["reason"]
        if kind != "symlink loop":  # a looping os-release does not exist for the probe: it reads /usr/lib/os-release
            assert "/etc/os-release" in files[0]["reason"]


@pytest.mark.parametrize("make_root", ["missing", "file", "fifo"])
def test_root_that_is_not_a_folder(make_root, tmp_path):
    path = tmp_path / "r"
    if make_root == "file":
        path.write_text("x")
    elif make_root == "fifo":
        os.mkfifo(path)
    line = one_line_error(run("probe", "--root", str(path)))
    assert str(path) in line
