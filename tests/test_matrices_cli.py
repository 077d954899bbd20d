"""`envdoctor matrices list | show | verify | refresh` as a user meets them: output, exit codes, one-line errors."""
import json
import os
import subprocess
import sys

import pytest

from envdoctor.knowledge import index as I
from envdoctor.knowledge import load_matrices
from envdoctor.knowledge.rows import TABLE_NAMES, table_rows
from tests.index_server import FakeIndex, all_recorded, closed_port_url, future_torch


@pytest.fixture(autouse=True)
def _isolated(monkeypatch, tmp_path):
    monkeypatch.setattr(I, "BACKOFF", 0.0)
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "no-cache"))
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.delenv("PIP_INDEX_URL", raising=False)
    monkeypatch.delenv("PIP_EXTRA_INDEX_URL", raising=False)


def run(capsys, *args):
    from envdoctor.entry import main

    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out = capsys.readouterr()
    return exc.value.code, out.out, out.err


def one_line_error(code, err, expected=2):
    assert code == expected
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_group_is_registered(capsys):
    code, out, _ = run(capsys, "matrices", "--help")
    assert code == 0
    for cmd in ("list", "show", "verify", "refresh"):
        assert cmd in out


def test_list_counts_rows_and_unverified(capsys):
    m = load_matrices()
    code, out, _ = run(capsys, "matrices", "list", "--format", "json")
    assert code == 0
    data = json.loads(out)
    tables = {t["table"]: t for t in data["tables"]}
    assert list(tables) == list(TABLE_NAMES)
    for name, t in tables.items():
        rows = [r for rs in table_rows(m, name).values() for r in rs]
        assert t["rows"] == len(rows) > 0
        assert t["unverified"] == sum(1 for r in rows if r.verified.upper().startswith("UNVERIFIED"))
        assert t["loaded_from"] == "bundled" and t["cache_rows"] == 0
        assert t["collected"] == m.table_collected[name]
    code, out, _ = run(capsys, "matrices", "list")
    assert code == 0 and out.splitlines()[0].split()[:2] == ["table", "rows"]
    assert len(out.splitlines()) == 1 + len(TABLE_NAMES)


def test_list_shows_the_user_cache(capsys, tmp_path):
    cache = tmp_path / "c"
    rec = all_recorded()
    rec.update(future_torch())
    with FakeIndex(rec) as idx:
        assert run(capsys, "matrices", "refresh", "--index-url", idx.url, "--cache-dir", str(cache))[0] == 0
    code, out, _ = run(capsys, "matrices", "list", "--cache-dir", str(cache), "--format", "json")
    tables = {t["table"]: t for t in json.loads(out)["tables"]}
    before = {t["table"]: t for t in json.loads(run(capsys, "matrices", "list", "--format", "json")[1])["tables"]}
    pt = tables["pytorch"]
    assert pt["loaded_from"] == "bundled + user cache" and pt["cache_rows"] == 4  # release, patch, cu132, cpu
    assert pt["rows"] == before["pytorch"]["rows"] + 4
    assert pt["unverified"] == before["pytorch"]["unverified"] + 4
    assert tables["tensorflow"]["loaded_from"] == "bundled"
    code, out, _ = run(capsys, "matrices", "list", "--cache-dir", str(cache))
    line = next(ln for ln in out.splitlines() if ln.startswith("pytorch"))
    assert "bundled + user cache (4 rows from" in line


def test_show_json_rows_carry_provenance(capsys):
    m = load_matrices()
    code, out, _ = run(capsys, "matrices", "show", "jax", "--format", "json")
    rows = json.loads(out)
    assert code == 0 and isinstance(rows, list)
    assert len(rows) == len(m.jax_releases) + sum(len(r.plugins) for r in m.jax_releases) + len(m.jaxlib_series)
    assert all(r["source"] and r["verified"] and r["origin"] and r["kind"] in ("release", "plugin", "jaxlib") for r in rows)
    assert {r["version"] for r in rows if r["kind"] == "release"} == {r.version for r in m.jax_releases}
    assert all("plugins" not in r for r in rows)


def test_show_toml(capsys):
    code, out, _ = run(capsys, "matrices", "show", "TensorFlow", "--format", "toml")
    assert code == 0 and out.startswith("[[release]]  # ") and 'tested = "2.15.0"' in out


def test_show_text_is_a_table_per_row_kind(capsys):
    m = load_matrices()
    code, out, _ = run(capsys, "matrices", "show", "cuda_driver")
    lines = out.splitlines()
    assert code == 0 and lines[0] == f"release ({len(m.cuda_releases)} rows)", lines[:3]
    head = lines[1].split()
    assert head[:2] == ["version", "label"] and head[-1] == "from" and "source" not in head and "verified" not in head
    assert set(lines[2].replace(" ", "")) == {"-"}
    rows = lines[3:3 + len(m.cuda_releases)]
    assert [r.split()[0] for r in rows] == [r.version for r in m.cuda_releases]
    first = m.cuda_releases[0]
    assert first.driver_linux in rows[0].split() and rows[0].split()[-1].startswith("cuda_driver.toml:")
    assert lines[-1] == "source and verified of each row: --format toml (or json)"
    assert max(len(ln) for ln in lines) < 400  # long prose stays in the toml / json views


def test_show_unknown_table(capsys):
    line = one_line_error(*run(capsys, "matrices", "show", "pytroch")[::2])
    assert "unknown table 'pytroch'" in line
    for t in TABLE_NAMES:
        assert t in line


@pytest.mark.parametrize("cmd", ["verify", "refresh"])
def test_no_index_configured(capsys, monkeypatch, cmd):
    monkeypatch.setattr(I, "pip_default_index", lambda: None)
    code, _, err = run(capsys, "matrices", cmd)
    line = one_line_error(code, err)
    assert line == "envdoctor: error: no package index configured; pass --index-url or set PIP_INDEX_URL"


def test_index_from_pip_environment(capsys, monkeypatch):
    with FakeIndex(all_recorded()) as idx:
        monkeypatch.setenv("PIP_INDEX_URL", idx.url)
        code, out, _ = run(capsys, "matrices", "verify", "--table", "tensorflow")
    assert code == 0 and f"index: {idx.url}" in out and "no disagreements" in out


def test_offline_is_one_line_exit_2_in_a_real_process():
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull)
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "matrices", "verify", "--index-url", closed_port_url(),
                           "--timeout", "2"], capture_output=True, text=True, env=env, timeout=60)
    line = one_line_error(proc.returncode, proc.stderr)
    assert line.startswith("envdoctor: error: cannot reach package index at http://127.0.0.1:")
    assert proc.stdout == ""


@pytest.mark.parametrize("cmd", ["verify", "refresh"])
def test_a_file_index_that_is_not_there_is_unreachable_exit_2(cmd, tmp_path):
    # reproduced by a user: refresh said "nothing newer ... on the index" and exited 0
    env = dict(os.environ, PIP_CONFIG_FILE=os.devnull, ENVDOCTOR_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "-m", "envdoctor", "matrices", cmd, "--index-url",
                           (tmp_path / "nonexistent").as_uri()], capture_output=True, text=True, env=env, timeout=60)
    line = one_line_error(proc.returncode, proc.stderr)
    assert "cannot read package index" in line and "no such folder" in line
    assert "nothing newer" not in proc.stdout
    assert not (tmp_path / "cache").exists()
