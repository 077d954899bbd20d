"""Progress on waits: a status line on stderr when stderr is a terminal (a real pty here), nothing on a pipe, with
TERM=dumb or ENVDOCTOR_NO_PROGRESS, and never drawn over what the command itself writes."""
from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import venv

import pytest

from envdoctor.progress import FRAMES
from tests.fleet_nodes import node
from tests.index_server import FakeIndex, all_recorded


def _env(**extra):
    env = dict(os.environ, TERM="xterm", PIP_CONFIG_FILE=os.devnull)
    env.pop("ENVDOCTOR_NO_PROGRESS", None)
    env.update(extra)
    return env


def _on_pty(argv, env, cwd=None):
    """Run envdoctor with stderr on a pseudo-terminal and stdout on a pipe: (exit code, stdout, stderr bytes)."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "envdoctor", *argv], stdout=subprocess.PIPE, stderr=slave,
                            stdin=subprocess.DEVNULL, env=env, cwd=cwd)
    os.close(slave)
    err = b""
    while True:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed its end
                break
            if not chunk:
                break
            err += chunk
        elif proc.poll() is not None:
            break
    out = proc.stdout.read()
    rc = proc.wait(timeout=120)
    os.close(master)
    return rc, out.decode(), err


def _piped(argv, env, cwd=None):
    p = subprocess.run([sys.executable, "-m", "envdoctor", *argv], capture_output=True, text=True, env=env, cwd=cwd,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def _spun(err: bytes) -> bool:
    return any(f.encode() in err for f in FRAMES)


@pytest.fixture
def reqs(tmp_path):
    (tmp_path / "requirements.txt").write_text("torch==2.5.1\nnumpy\n")
    return tmp_path


GATE = ["gate", "requirements.txt", "--cpu", "--python-version", "3.11", "--offline"]


def test_gate_shows_progress_on_a_terminal_and_nothing_on_a_pipe(reqs):
    rc, out, err = _on_pty(GATE, _env(), cwd=reqs)
    assert rc == 0 and _spun(err), err
    assert b"gate: judging requirements.txt [1/1]" in err
    assert err.endswith(b"\r\x1b[K"), err[-40:]  # the line is erased before the report
    prc, pout, perr = _piped(GATE, _env(), cwd=reqs)
    assert (prc, pout, perr) == (0, out, ""), perr  # the same report; nothing extra on a pipe


@pytest.mark.parametrize("extra", [{"TERM": "dumb"}, {"ENVDOCTOR_NO_PROGRESS": "1"}])
def test_progress_can_be_turned_off(reqs, extra):
    rc, _, err = _on_pty(GATE, _env(**extra), cwd=reqs)
    assert rc == 0 and err == b"", err


def test_an_input_error_is_never_drawn_over(reqs):
    (reqs / "requirements.txt").write_text("torch==2.5.1\nnot a requirement!\n")
    rc, _, err = _on_pty(GATE, _env(), cwd=reqs)
    assert rc == 2 and not _spun(err), err
    assert err.decode().startswith("envdoctor: error: requirements.txt:2"), err


def test_matrices_verify_counts_the_wheels_it_reads():
    with FakeIndex(all_recorded(), mode="nometa") as idx:
        argv = ["matrices", "verify", "--index-url", idx.url, "--table", "jax"]
        rc, out, err = _on_pty(argv, _env())
        prc, pout, perr = _piped(argv, _env())
    assert rc == prc and out == pout and not _spun(perr.encode()), perr
    text = err.decode()
    assert "matrices verify: reading the index's jax pages" in text, text[-500:]
    counts = [tuple(map(int, seg.split("]")[0].split("/")))
              for seg in text.split("reading wheel metadata (HTTP range requests) [")[1:]]
    # each stage is drawn when it begins (a stage shorter than a tick too): the count starts at 0 of the total
    assert counts and counts[0][0] == 0 and len({t for _, t in counts}) == 1 and counts[0][1] > 1, counts
    assert [d for d, _ in counts] == sorted(d for d, _ in counts) and counts[-1][0] <= counts[-1][1], counts
    assert err.endswith(b"\r\x1b[K")


def test_fleet_ingest_counts_the_snapshots_it_reads(tmp_path):
    lines = "".join(json.dumps(node(f"n{i}", "2026-11-30T12:00:00+00:00")) + "\n" for i in range(40))
    (tmp_path / "nodes.jsonl").write_text(lines)
    argv = ["fleet", "ingest", "--store", "tty.db", "nodes.jsonl"]
    rc, out, err = _on_pty(argv, _env(), cwd=tmp_path)
    assert rc == 0 and _spun(err), err
    counts = [int(seg.split(b"]")[0]) for seg in err.split(b"fleet ingest: snapshots read [")[1:]]
    assert counts and counts == sorted(counts) and counts[-1] <= 40, err[-300:]
    assert err.endswith(b"\r\x1b[K")
    # piped: the same summary on stdout and nothing on stderr (a second store, as the first now holds the nodes)
    argv[3] = "pipe.db"
    prc, pout, perr = _piped(argv, _env(), cwd=tmp_path)
    assert (prc, perr) == (0, "") and pout == out, (pout, perr)


def test_smoke_shows_what_it_waits_for_on_a_terminal_and_only_its_lines_on_a_pipe(tmp_path):
    venv.EnvBuilder(with_pip=False).create(tmp_path / "venv")
    site = next((tmp_path / "venv" / "lib").glob("python3*/site-packages"))
    # a torch whose import takes a while, then fails: the wait is what the status line is for
    (site / "torch").mkdir()
    (site / "torch" / "__init__.py").write_text("import time\ntime.sleep(1.5)\nraise ImportError('injected by the test')\n")
    dist = site / "torch-2.3.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.3.1\n")
    argv = ["smoke", "--python", str(tmp_path / "venv" / "bin" / "python"), "--timeout", "60"]
    env = _env()
    for var in ("VIRTUAL_ENV", "CONDA_PREFIX"):
        env.pop(var, None)
    rc, out, err = _on_pty(argv, env)
    prc, pout, perr = _piped(argv, env)
    assert rc == prc == 1 and _timeless(out) == _timeless(pout), (out, pout)
    assert _spun(err) and b"smoke: running torch" in err, err[-400:]
    assert err.endswith(b"\r\x1b[K")
    # the step lines are the same on both; the pipe has nothing else
    drawn = [ln.rsplit(b"\r\x1b[K", 1)[-1] for ln in err.split(b"\r\n")]
    lines = [ln.decode() for ln in drawn if ln and not _spun(ln)]
    assert [_timeless(x) for x in lines] == _timeless(perr).splitlines() and not _spun(perr.encode()), (lines, perr)


def _timeless(text: str) -> str:
    """The text with its measured durations (and pids) masked and its colours taken out: two runs, one on a terminal,
    differ only there."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", text)
    return re.sub(r"pid \d+", "pid N", re.sub(r"\d+(\.\d+)? (s|ms)\b", "N s", text))
