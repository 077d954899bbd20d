"""gate on files a pull request can change (envdoctor/gate/trust.py, docs/gate.md "Untrusted inputs"): what it reads,
what it echoes, what it contacts and how much it takes, each through the real CLI.  The contact tests run a real
resolver (uv, pip) against servers on 127.0.0.1 that record every request."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_run import run
from tests.index_server import FakeIndex
from tests.test_gate_resolve import RESOLVERS, served_files

CPU = ["--cpu", "--python-version", "3.11"]
PASCAL_470 = ["--driver", "470.82.01", "--gpu", "sm_61", "--python-version", "3.10"]
SECRET = "s3cr3t-value-4471"


@pytest.fixture
def repo(tmp_path):
    """A checkout: a folder with .git, the inputs in it."""
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    return root


def _gate(cwd, *args, env=None):
    base = {"ENVDOCTOR_GATE_RESOLVER": "off", "ENVDOCTOR_NO_CACHE": "1"}
    base.update(env or {})
    return run("gate", *args, cwd=str(cwd), env=base)


def _resolving_env(tmp_path, resolver, index_url, **more):
    env = {"ENVDOCTOR_GATE_RESOLVER": resolver, "PIP_CONFIG_FILE": "/dev/null", "PIP_INDEX_URL": index_url,
           "PIP_EXTRA_INDEX_URL": "", "PIP_FIND_LINKS": "", "UV_CACHE_DIR": str(tmp_path / "uv-cache"),
           "PIP_CACHE_DIR": str(tmp_path / "pip-cache"), "PIP_NO_INPUT": "1", "UV_NO_CONFIG": "1"}
    env.update(more)
    return env


# --------------------------------------------------------------------------- reads stay in the repository


def test_an_include_outside_the_repository_is_not_read_and_nothing_of_it_is_echoed(repo):
    (repo / "requirements.txt").write_text("torch\n-r ../../../../../../../../etc/passwd\n-c /etc/hostname\n")
    p = _gate(repo, "requirements.txt", *CPU, "--offline")
    assert p.returncode == 2, p.stderr
    assert "root:" not in p.stderr and "/bin/" not in p.stderr, p.stderr
    host = Path("/etc/hostname").read_text().strip()
    assert not host or host not in p.stderr.replace("/etc/hostname", ""), p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 2 and all("outside the repository" in x and "--allow-outside" in x for x in lines), p.stderr
    assert lines[0].startswith("envdoctor: error: requirements.txt:2: -r ") and "requirements.txt:3: -c " in lines[1]


def test_allow_outside_reads_it_and_still_quotes_only_the_start_of_each_bad_line(repo):
    (repo / "requirements.txt").write_text("torch\n-r ../../../../../../../../etc/passwd\n")
    p = _gate(repo, "requirements.txt", *CPU, "--offline", "--allow-outside")
    assert p.returncode == 2
    assert "/etc/passwd:1: invalid requirement 'root…'" in p.stderr, p.stderr
    assert "root:x" not in p.stderr and "/bin/" not in p.stderr.replace("/etc/passwd", ""), p.stderr
    assert len(p.stderr.strip().splitlines()) <= 6, p.stderr  # five problems, then a count


def test_a_symlink_in_the_repository_leading_out_of_it_is_not_followed(repo, tmp_path):
    secret = tmp_path / "outside.txt"
    secret.write_text(f"machine example login me password {SECRET}\n")
    (repo / "deps").mkdir()
    (repo / "deps" / "more.txt").symlink_to(secret)
    (repo / "requirements.txt").write_text("-r deps/more.txt\n")
    p = _gate(repo, "requirements.txt", *CPU, "--offline")
    assert p.returncode == 2 and "outside the repository" in p.stderr and SECRET not in p.stderr, p.stderr
    # a named FILE that is such a link is refused too
    (repo / "requirements-gpu.txt").symlink_to(secret)
    p = _gate(repo, "requirements-gpu.txt", *CPU, "--offline")
    assert p.returncode == 2 and "symbolic link" in p.stderr and SECRET not in p.stderr, p.stderr


def test_a_netrc_style_file_in_the_repository_is_refused_without_its_password(repo):
    (repo / "requirements.txt").write_text(f"machine files.example login me password {SECRET}\n")
    p = _gate(repo, "requirements.txt", *CPU, "--offline")
    assert p.returncode == 2 and SECRET not in p.stderr and "'machine…'" in p.stderr, p.stderr


def test_an_include_inside_the_repository_is_read(repo):
    (repo / "reqs").mkdir()
    (repo / "reqs" / "base.txt").write_text("torch==2.1.2\n")
    (repo / "reqs" / "gpu.txt").write_text("-r base.txt\n-c ../constraints.txt\n")
    (repo / "constraints.txt").write_text("numpy<2\n")
    p = _gate(repo, "reqs/gpu.txt", *PASCAL_470, "--offline", "--format", "json")
    assert p.returncode == 1, p.stderr  # torch 2.1.2 is a CUDA 12.1 build: the 470 driver runs CUDA 11.4
    data = json.loads(p.stdout)
    assert {f["id"] for f in data["inputs"][0]["findings"] if f["severity"] == "error"} == {"ED100"}


def test_without_a_repository_the_top_files_folder_is_the_boundary(tmp_path):
    here = tmp_path / "a" / "b"
    here.mkdir(parents=True)
    (tmp_path / "a" / "up.txt").write_text("torch\n")
    (here / "requirements.txt").write_text("-r ../up.txt\n")
    p = _gate(here, "requirements.txt", *CPU, "--offline")
    assert p.returncode == 2 and "outside the repository" in p.stderr, p.stderr


# --------------------------------------------------------------------------- what a bad input prints


def test_a_snapshot_given_as_an_input_is_one_line_not_hundreds(repo):
    (repo / "snapshot.json").write_text(json.dumps({"schema": "envdoctor-snapshot/1", "python": {"x": list(range(300))}},
                                                   indent=1))
    p = _gate(repo, "snapshot.json", *CPU, "--offline")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert lines == ["envdoctor: error: snapshot.json: it is JSON, not an install input (a saved snapshot is the "
                     "target: --snapshot FILE)"], p.stderr


def test_a_file_full_of_bad_lines_prints_a_few_and_a_count(repo):
    (repo / "notes.txt").write_text("".join(f"this is prose line {i}, not a requirement\n" for i in range(326)))
    p = _gate(repo, "notes.txt", *CPU, "--offline")
    assert p.returncode == 2
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 6, p.stderr
    assert lines[-1] == "envdoctor: error: notes.txt: 321 more problems in this file, not shown (326 in all)"


# --------------------------------------------------------------------------- environment variables


def test_a_variable_is_not_expanded_unless_named(repo):
    (repo / "requirements.txt").write_text("torch==${TORCH_VERSION}\n")
    p = _gate(repo, "requirements.txt", *PASCAL_470, "--offline", env={"TORCH_VERSION": "2.1.2"})
    assert p.returncode == 2 and "--env-var" in p.stderr and "2.1.2" not in p.stderr, p.stderr
    p = _gate(repo, "requirements.txt", *PASCAL_470, "--offline", "--env-var", "TORCH_VERSION", "--format", "json",
              env={"TORCH_VERSION": "2.1.2"})
    assert p.returncode == 1, p.stderr
    data = json.loads(p.stdout)
    assert [x["version"] for x in data["inputs"][0]["packages"] if x["name"] == "torch"] == ["2.1.2"]


# --------------------------------------------------------------------------- contacts


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_a_secret_in_an_index_url_never_leaves_the_machine(tmp_path, repo, resolver):
    with FakeIndex(served_files(), serve_wheels=True) as main, FakeIndex({}) as leak:
        host = leak.url.split("/simple/")[0]
        (repo / "requirements.txt").write_text(f"--extra-index-url {host}/leak/${{SECRET_TOKEN}}/simple/\ntorch\n")
        env = _resolving_env(tmp_path, resolver, main.url, SECRET_TOKEN=SECRET)
        for extra in ([], ["--allow-index", host + "/"]):  # allowed or not: the variable is not expanded
            p = _gate(repo, "requirements.txt", *PASCAL_470, "--format", "json", *extra, env=env)
            assert leak.requests == [], leak.requests
            assert SECRET not in p.stdout + p.stderr
            unit = json.loads(p.stdout)["inputs"][0]
            assert unit["resolver"].startswith("offline (the input names a place gate may not contact)"), unit
            said = " ".join(x["why"] if isinstance(x, dict) else str(x) for x in unit["not_judged"])
            assert "environment variable" in said and host in said and "leak" not in said, said
        # named with --env-var and allowed: the user's own choice, as pip would do it
        p = _gate(repo, "requirements.txt", *PASCAL_470, "--format", "json", "--env-var", "SECRET_TOKEN",
                  "--allow-index", host + "/", env=env)
        assert any(path.startswith(f"/leak/{SECRET}/simple/") for path, _ in leak.requests), leak.requests


@pytest.mark.parametrize("resolver", RESOLVERS)
def test_an_index_that_is_not_allowed_is_not_contacted(tmp_path, repo, resolver):
    with FakeIndex(served_files(), serve_wheels=True) as main, FakeIndex({}) as other:
        other_origin = other.url.split("/simple/")[0]
        cases = [f"--extra-index-url {other.url}\ntorch\n",
                 f"--index-url {other.url}\ntorch\n",
                 f"--find-links {other.url}\ntorch\n",
                 f"--extra-index-url {other_origin.replace('://', '://me:' + SECRET + '@')}/simple/\ntorch\n"]
        env = _resolving_env(tmp_path, resolver, main.url)
        for text in cases:
            (repo / "requirements.txt").write_text(text)
            p = _gate(repo, "requirements.txt", *PASCAL_470, "--format", "json", env=env)
            assert other.requests == [], (text, other.requests)
            assert SECRET not in p.stdout + p.stderr
            unit = json.loads(p.stdout)["inputs"][0]
            said = " ".join(x["why"] if isinstance(x, dict) else str(x) for x in unit["not_judged"])
            assert "not allowed" in said and other_origin in said, (text, said)
            assert unit["resolver"].startswith("offline"), unit["resolver"]
        # pip's configured index is allowed: the same file resolves against it
        (repo / "requirements.txt").write_text(f"--index-url {main.url}\ntorch\nxformers==0.0.20\n")
        p = _gate(repo, "requirements.txt", *PASCAL_470, "--format", "json", env=env)
        unit = json.loads(p.stdout)["inputs"][0]
        assert unit["resolver"].startswith(resolver), unit["resolver"]
        assert [x["version"] for x in unit["packages"] if x["name"] == "torch"] == ["2.0.1"]


def test_a_uv_project_naming_other_indexes_or_a_git_source_is_not_resolved(tmp_path, repo):
    from tests.test_gate_resolve import _has_uv

    if not _has_uv():
        pytest.skip("uv not installed")
    with FakeIndex(served_files(), serve_wheels=True) as main, FakeIndex({}) as other:
        host = other.url.split("/simple/")[0]
        env = _resolving_env(tmp_path, "uv", main.url)
        head = '[project]\nname = "p"\nversion = "0"\nrequires-python = ">=3.9"\ndependencies = ["torch", "x"]\n\n'
        for body in (f'[[tool.uv.index]]\nname = "o"\nurl = "{other.url}"\n',
                     f'[tool.uv.sources]\nx = {{ git = "{host}/x.git" }}\n',
                     f'[tool.uv.sources]\nx = {{ url = "{host}/x-1.0-py3-none-any.whl" }}\n',
                     f'[tool.uv]\nfind-links = ["{host}/links/"]\n[tool.uv.sources]\nx = {{ path = "../../x" }}\n'):
            (repo / "pyproject.toml").write_text(head + body)
            p = _gate(repo, "pyproject.toml", *PASCAL_470, "--format", "json", env=env)
            assert other.requests == [], (body, other.requests)
            unit = json.loads(p.stdout)["inputs"][0]
            assert unit["resolver"].startswith("offline (the input names a place gate may not contact)"), (body, unit)


def test_no_code_of_the_judged_files_runs_when_a_resolver_reads_them(tmp_path, repo):
    """A local project whose setup.py writes a marker, named in every way an input can name it: a path, a file URL,
    -e, name @ file://, an sdist in a find-links folder, a uv path source."""
    import tarfile

    proj = repo / "proj"
    proj.mkdir()
    marker = tmp_path / "RAN"
    (proj / "setup.py").write_text(f"open({str(marker)!r}, 'w').write('x')\nfrom setuptools import setup\n"
                                   "setup(name='proj', version='1.0')\n")
    links = repo / "links"
    links.mkdir()
    with tarfile.open(links / "proj-1.0.tar.gz", "w:gz") as tar:
        tar.add(proj / "setup.py", arcname="proj-1.0/setup.py")
    inputs = [("requirements.txt", f"torch\n{line}\n") for line in
              ("./proj", f"file://{proj}", "-e ./proj", f"proj @ file://{proj}")]
    inputs.append(("requirements.txt", "--find-links ./links\ntorch\nproj==1.0\n"))
    inputs.append(("pyproject.toml", '[project]\nname = "p"\nversion = "0"\nrequires-python = ">=3.9"\n'
                                     'dependencies = ["torch", "proj"]\n[tool.uv.sources]\nproj = { path = "proj" }\n'))
    with FakeIndex(served_files(), serve_wheels=True) as main:
        for resolver in [r if isinstance(r, str) else r.values[0] for r in RESOLVERS]:
            env = _resolving_env(tmp_path, resolver, main.url)
            for name, text in inputs:
                (repo / name).write_text(text)
                p = _gate(repo, name, *PASCAL_470, "--format", "json", env=env)
                assert p.returncode in (0, 1), p.stderr
                assert not marker.exists(), (resolver, text)


# --------------------------------------------------------------------------- one budget for a run


def _rss_of(args, cwd) -> tuple:
    """(exit code, stderr, peak RSS in MiB) of a gate run in a child of a fresh Python (so the peak is that run's)."""
    prog = ("import resource, subprocess, sys\n"
            "p = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)\n"
            "sys.stderr.write(p.stderr)\n"
            "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    env = dict(os.environ, ENVDOCTOR_GATE_RESOLVER="off", ENVDOCTOR_NO_CACHE="1")
    p = subprocess.run([sys.executable, "-c", prog, sys.executable, "-m", "envdoctor", "gate", *args], cwd=str(cwd),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, timeout=300)
    code, kib = p.stdout.split()
    return int(code), p.stderr, int(kib) / 1024


def test_one_budget_bounds_every_input_and_include_together(repo):
    line = "some-package-name==1.0.0\n"
    big = line * (15 * 1024 * 1024 // len(line))  # 15 MB each: under the per-file limit, over the run's budget
    for i in range(5):
        (repo / f"part{i}.txt").write_text(big)
    (repo / "requirements.txt").write_text("torch\n" + "".join(f"-r part{i}.txt\n" for i in range(5)))
    code, err, mib = _rss_of(["requirements.txt", *CPU, "--offline"], repo)
    assert code == 2 and "budget" in err, err
    assert len(err.strip().splitlines()) <= 6, err
    assert mib < 400, f"{mib:.0f} MiB"  # five 15 MB files took 3.9 GB before the budget; one is read at a time
    # a large file within the budget is judged
    (repo / "requirements.txt").write_text("torch\n" + line * 40_000)
    code, err, mib = _rss_of(["requirements.txt", *CPU, "--offline"], repo)
    assert code == 0, err
    assert mib < 400, f"{mib:.0f} MiB"


def test_the_line_budget_counts_includes_too(repo):
    half = "x==1\n" * 60_000
    (repo / "a.txt").write_text(half)
    (repo / "b.txt").write_text(half)
    (repo / "requirements.txt").write_text("-r a.txt\n-r b.txt\n")
    p = _gate(repo, "requirements.txt", *CPU, "--offline")
    assert p.returncode == 2 and "100000 lines" in p.stderr and "b.txt" in p.stderr, p.stderr


def test_every_pytorch_index_the_data_names_is_allowed_and_look_alikes_are_not():
    """The frameworks' own indexes (matrices/gate_indexes.toml) cover every index URL the PyTorch data names; the
    same host over http, with credentials, or another path of a shared host is refused."""
    from envdoctor.gate.trust import IndexPolicy
    from envdoctor.knowledge.load import parse_toml_cached
    from envdoctor.resources import data_dir

    data = parse_toml_cached((data_dir("matrices") / "pytorch.toml").read_text(encoding="utf-8"))
    urls = {r["index_url"] for rows in data.values() if isinstance(rows, list) for r in rows
            if isinstance(r, dict) and isinstance(r.get("index_url"), str)}
    assert len(urls) > 10
    policy = IndexPolicy.for_run({"PIP_CONFIG_FILE": "/dev/null"})
    assert [u for u in urls if policy.refused(u)] == []
    cu121 = sorted(urls)[0]
    assert policy.refused(cu121.replace("https://", "http://")) == "it is not an allowed index"
    assert policy.refused(cu121.replace("https://", "https://me:pw@")) == "it holds credentials"
    assert policy.refused("https://storage.googleapis.com/other-bucket/simple/") == "it is not an allowed index"
    assert policy.refused("http://169.254.169.254/latest/meta-data/") == "it is not an allowed index"


def test_the_actions_offline_input_contacts_nothing_and_allow_index_reaches_the_resolver(tmp_path, repo):
    from tests.test_gate_integrations import _run_action

    with FakeIndex(served_files(), serve_wheels=True) as main, FakeIndex({}) as other:
        (repo / "requirements.txt").write_text(f"--extra-index-url {other.url}\ntorch\n")
        env = _resolving_env(tmp_path, "pip", main.url)
        base = {"INPUT_FILES": "requirements.txt", "INPUT_DRIVER": "470.82.01", "INPUT_GPU": "sm_61",
                "INPUT_PYTHON_VERSION": "3.10", "INPUT_FORMAT": "json", **env}
        p = _run_action({**base, "INPUT_OFFLINE": "true", "INPUT_ALLOW_INDEX": other.url}, repo)
        assert other.requests == [] and main.requests == [], (other.requests, main.requests)
        assert json.loads(p.stdout)["inputs"][0]["resolver"].startswith("offline (--offline)"), p.stdout
        p = _run_action({**base, "INPUT_ALLOW_INDEX": other.url}, repo)
        assert other.requests, p.stdout + p.stderr
        assert json.loads(p.stdout)["inputs"][0]["resolver"].startswith("pip for Python 3.10"), p.stdout
