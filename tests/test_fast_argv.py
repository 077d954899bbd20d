"""The fast door: a plain `check` / `probe` / `rules` / `explain` line is parsed by envdoctor.cli_spec
and runs its body without importing click; everything else goes to click as before.

- agreement: whenever the fast parser answers, its params are exactly what click's own parse of the same line
  gives (hypothesis over many lines, derandomized; a longer run is marked slow);
- the fast door really leaves click unimported (a subprocess's import log), and a line it leaves alone still gets
  click's answer;
- the same output: stdout, stderr, exit code and -o FILE are identical on the fast door and with it switched off
  (ENVDOCTOR_NO_FAST_ARGV=1), on saved snapshots, a fake machine (--root, fake nvidia-smi first on PATH), this
  interpreter (--python), bad input, Ctrl-C and a closed stdout.
"""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from envdoctor import cli_spec
from envdoctor.cli import cli as group
from envdoctor.cli import probe as probe_cmd
from envdoctor.commands import check as check_cmd
from envdoctor.commands import explain as explain_cmd
from envdoctor.commands import rules_cmd

from .fakes import make_exe, write
from .snapfactory import machine, torch

ROOT = Path(__file__).resolve().parent.parent
NVIDIA = Path(__file__).parent / "fixtures" / "nvidia"
CLICK = {"check": check_cmd, "probe": probe_cmd, "rules": rules_cmd, "explain": explain_cmd}


# --------------------------------------------------------------------------- agreement with click


def _click_params(argv: List[str]) -> Dict[str, object]:
    """The params click's own parser gives the command of `argv` (raises where click refuses the line)."""
    name = argv[0]
    return CLICK[name].make_context(name, list(argv[1:])).params


def _typed(params: Dict[str, object]) -> Dict[str, Tuple[str, object]]:
    """Values with their types (5 == 5.0 and () == [] would hide a difference)."""
    return {k: (type(v).__name__, v) for k, v in params.items()}


def agrees(argv: List[str]) -> bool:
    """True when the fast parser answers `argv` (and then with click's params); False when it leaves it."""
    fast = cli_spec.parse(argv)
    if fast is None:
        return False
    name, params = fast
    assert name == argv[0]
    assert _typed(params) == _typed(_click_params(argv)), argv
    return True


VALUES = ["", "json", "text", "markdown", "sarif", "prometheus", "JSON", "Text", "5", " 7 ", "0.1", "0.09", "600",
          "600.5", "1e2", "1E-1", ".5", "5.", "+3", "nan", "inf", "-1", "0", "\u0661\u0662", "0x10", "1_0", "ED1",
          "ED100,ED2", "torch", "/tmp/x", "%N.json", "-", "--", "--strict", "-v", "-o", "--format", "a b", "é"]
NOISE = ["-h", "--help", "--bogus", "-x", "-vo", "-ov", "-oFILE", "-vv", "-", "--", "--format=json", "--format=",
         "--strict=1", "--strict=", "--timeout=2", "--timeout=", "--only=ED1", "--python=", "-v=1", "-o=x", "--form",
         "--version", "--no-redact", "--fleet", "--smoke", "positional", "check", "probe", "--Strict", "---strict"]


@st.composite
def lines(draw) -> List[str]:
    """`envdoctor check|probe|rules|explain ...`: mostly its own options with fitting values, some of the other
    commands', some noise; so both what the fast parser takes and what it must leave to click are drawn."""
    name = draw(st.sampled_from(sorted(cli_spec.COMMANDS)))
    opts = [o for spec in (cli_spec.COMMANDS[name], cli_spec.CHECK, cli_spec.PROBE) for o in spec if not o.argument]
    argv = [name]
    if name == "explain" and draw(st.integers(0, 4)):
        argv.append(draw(st.sampled_from(["ED100", "ed701", "ED999", "", "x", "--", "-", "--format", "-h"])))
    for _ in range(draw(st.integers(0, 7))):
        o = draw(st.sampled_from(opts))
        decl = draw(st.sampled_from(o.decls))
        kind = draw(st.integers(0, 9))
        value = draw(st.sampled_from(VALUES + list(o.choices) + ["text", "json"]))
        if kind == 9:
            argv.append(draw(st.sampled_from(NOISE + VALUES)))
        elif o.flag and kind < 8:
            argv.append(decl)
        elif kind == 8:
            argv.append(f"{decl}={value}")
        else:
            argv += [decl, value]
    if draw(st.integers(0, 9)) == 0:
        argv.append("--")
    return argv


@settings(derandomize=True, max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines())
def test_the_fast_parser_agrees_with_click(argv):
    agrees(argv)


@pytest.mark.slow
@settings(derandomize=True, max_examples=20000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines())
def test_the_fast_parser_agrees_with_click_many_lines(argv):
    agrees(argv)


PLAIN = [
    ["check"], ["probe"], ["check", "--format", "json"], ["check", "--format=markdown", "--strict"],
    ["check", "--snapshot", "s.json", "--only", "ED1", "--only", "ED100,ED2", "--skip=ED3", "-v", "--verbose"],
    ["check", "--python", "/usr/bin/python3", "--timeout", "2.5", "--no-redact", "-o", "out.txt", "--force"],
    ["check", "--expect-cpu", "torch", "--expect-cpu=jax", "--kernels", "--smoke", "--root", "/mnt", "--"],
    ["check", "--timeout", " 7 ", "--timeout", "600", "--output", "--strict"],  # a value that looks like an option
    ["check", "--format", "prometheus", "--python="],
    ["probe", "--format", "json", "-o", "%N.json", "--fleet", "--node-name", "n1", "--kernels", "--timeout=0.1"],
    ["probe", "--root", "/mnt", "--snapshot", "x", "--no-redact", "--force", "--output=-"],
    ["rules"], ["rules", "--format", "json"], ["explain", "ED100"], ["explain", "--format=json", "ed701"],
    ["explain", "--format", "text", "--", "-x"], ["explain", "", "--format", "json"],
]
LEFT_TO_CLICK = [
    [], ["--help"], ["-h"], ["--version"], ["matrices", "list"], ["gate", "requirements.txt"], ["check", "-h"],
    ["check", "--help"], ["check", "--bogus"], ["check", "--format", "JSON"], ["check", "--format"],
    ["check", "--timeout", "nan"], ["check", "--timeout", "0.05"], ["check", "--timeout", "1e999"],
    ["check", "--timeout", "\u0661\u0662"], ["check", "extra"], ["check", "--", "extra"], ["check", "-vo", "x"],
    ["check", "-oFILE"], ["check", "--strict=1"], ["check", "--form", "json"], ["probe", "--strict"],
    ["probe", "--format", "markdown"], ["check", "--fleet"], ["check", "-"], ["probe", "-v"],
    ["rules", "x"], ["rules", "--format", "markdown"], ["rules", "-o", "x"], ["explain"], ["explain", "a", "b"],
    ["explain", "--format", "json"], ["explain", "-"], ["explain", "ED100", "--", "x"],
]


@pytest.mark.parametrize("argv", PLAIN, ids=" ".join)
def test_plain_lines_take_the_fast_door_with_clicks_params(argv):
    assert agrees(argv), argv


@pytest.mark.parametrize("argv", LEFT_TO_CLICK, ids=lambda a: " ".join(a) or "(none)")
def test_other_lines_are_left_to_click(argv):
    assert cli_spec.parse(argv) is None


def test_click_reads_no_environment_for_these_options():
    """The fast parser reads no variable: right only while click reads none either for check's and probe's
    options (no envvar, no auto_envvar_prefix); shell completion is click's and keeps its door (see below)."""
    for name, cmd in CLICK.items():
        assert cmd.make_context(name, [], resilient_parsing=True).auto_envvar_prefix is None
        assert group.context_settings.get("auto_envvar_prefix") is None
        assert [p.name for p in cmd.params if getattr(p, "envvar", None)] == []


def test_the_click_commands_are_built_from_the_spec():
    """One declaration: every click option of check and probe is a row of cli_spec, in the same order."""
    for name, cmd in CLICK.items():
        declared = [(o.dest, sorted(o.decls) or [o.dest], o.flag, o.multiple, o.argument)
                    for o in cli_spec.COMMANDS[name]]
        built = [(p.name, sorted(p.opts), getattr(p, "is_flag", False), p.multiple, p.param_type_name == "argument")
                 for p in cmd.params if p.name != "help"]
        assert built == declared, name


# --------------------------------------------------------------------------- running it


def _snapshots(tmp_path: Path) -> Dict[str, Path]:
    ok = machine(driver="550.54.15", driver_cuda="12.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                 frameworks=[torch("2.5.1+cu124", cuda="12.4", cudnn="9.1.0")])
    bad = machine(driver="470.57.02", driver_cuda="11.4", gpus=["Tesla V100-SXM2-16GB:7.0"],
                  frameworks=[torch("2.1.2+cu121", cuda="12.1", cudnn="8.9.2")])
    out = {}
    for name, snap in (("ok", ok), ("bad", bad)):
        out[name] = tmp_path / f"{name}.json"
        out[name].write_text(snap.to_json())
    return out


def _fake_machine(tmp_path: Path) -> Tuple[Path, Path]:
    """(root, bin): an image's root and an nvidia-smi answering with real outputs (tests/fixtures/nvidia)."""
    root = tmp_path / "root"
    write(root / "etc" / "os-release", 'ID=ubuntu\nVERSION_ID="22.04"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\n')
    bindir = tmp_path / "bin"
    make_exe(bindir / "nvidia-smi", f"""case "$1" in
  --query-gpu=*) cat "{NVIDIA / 'query_noheader_nounits_440.csv'}";;
  *) cat "{NVIDIA / 'smi_440.33.01_2x_gv100.txt'}";;
esac""")
    return root, bindir


def _env(tmp_path: Path, bindir: Optional[Path] = None, **extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("ENVDOCTOR_NO_FAST_ARGV", "_ENVDOCTOR_COMPLETE")}
    env["PATH"] = os.pathsep.join(([str(bindir)] if bindir else []) + ["/usr/bin", "/bin"])
    env["ENVDOCTOR_CACHE_DIR"] = str(tmp_path / "cache")
    env.update(extra)
    return env


def _run(argv: List[str], env: Dict[str, str], cwd: Path, fast: bool, **kw) -> subprocess.CompletedProcess:
    e = dict(env)
    if not fast:
        e["ENVDOCTOR_NO_FAST_ARGV"] = "1"
    return subprocess.run([sys.executable, "-m", "envdoctor", *argv], capture_output=True, text=True, env=e,
                          cwd=str(cwd), timeout=120, **kw)


def _imported(stderr: str) -> List[str]:
    return [ln.rpartition("|")[2].strip() for ln in stderr.splitlines() if ln.startswith("import time:")]


def _not_imports(stderr: str) -> List[str]:
    return [ln for ln in stderr.splitlines() if not ln.startswith("import time:")]


def test_the_fast_door_imports_no_click(tmp_path):
    snap = _snapshots(tmp_path)["bad"]
    env = _env(tmp_path, PYTHONPROFILEIMPORTTIME="1")
    argv = ["check", "--snapshot", str(snap), "--format", "json"]
    fast = _run(argv, env, tmp_path, fast=True)
    assert fast.returncode == 1, fast.stderr[-2000:]
    assert "ED100" in {f["id"] for f in json.loads(fast.stdout)["findings"]}  # it judged
    modules = _imported(fast.stderr)
    assert "envdoctor.commands_run" in modules and "envdoctor.rules" in modules
    assert not [m for m in modules if m == "click" or m.startswith("click.") or m == "envdoctor.cli"], modules
    slow = _run(argv, env, tmp_path, fast=False)  # the switch sends the same line to click: the log would show it
    assert "click" in _imported(slow.stderr) and slow.stdout == fast.stdout

    bad = _run(argv + ["--bogus"], env, tmp_path, fast=True)  # a line the fast parser leaves alone: click's answer
    assert bad.returncode == 2 and bad.stdout == "" and "click" in _imported(bad.stderr)
    line = _not_imports(bad.stderr)
    assert len(line) == 1 and line[0].startswith("envdoctor check: error: No such option") and "--bogus" in line[0]
    assert line == _not_imports(_run(argv + ["--bogus"], env, tmp_path, fast=False).stderr)


def test_the_console_script_takes_the_fast_door(tmp_path):
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^envdoctor = "envdoctor\.entry:main"$', text, re.M)
    script = Path(sys.executable).parent / "envdoctor"
    if not script.exists() or "envdoctor.entry" not in script.read_text(errors="replace"):
        pytest.skip("no console script from this checkout's pyproject in this environment (pip install -e . makes it)")
    env = _env(tmp_path, PYTHONPROFILEIMPORTTIME="1")
    proc = subprocess.run([str(script), "check", "--snapshot", str(_snapshots(tmp_path)["ok"])], capture_output=True,
                          text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert proc.returncode == 0 and "click" not in _imported(proc.stderr), proc.stderr[-2000:]


def test_shell_completion_stays_clicks(tmp_path):
    """With click's completion request in the environment the line is click's, whatever argv says."""
    env = _env(tmp_path, _ENVDOCTOR_COMPLETE="bash_complete", COMP_WORDS="envdoctor check --form", COMP_CWORD="2")
    proc = _run(["check", "--snapshot", str(_snapshots(tmp_path)["ok"])], env, tmp_path, fast=True)
    assert proc.returncode == 0 and proc.stdout.splitlines() == ["plain,--format"], (proc.stdout, proc.stderr)


_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d)?")
_DURATION = re.compile(r'("duration_ms": )[0-9.]+')


def _same(text: str) -> str:
    """Output with what differs between any two runs (times, durations) blanked."""
    return _DURATION.sub(r"\1D", _STAMP.sub("T", text))


# {ok} / {bad}: saved snapshots; {root}: the fake machine; {out}: a file under each door's own folder
CASES = [
    "check --snapshot {ok}",
    "check --snapshot {bad} --format json",
    "check --snapshot {bad} --format markdown --strict",
    "check --snapshot {ok} --format sarif",
    "check --snapshot {bad} --format prometheus",
    "check --snapshot {bad} --format junit --only ED1 --skip ED100 -v",
    "check --snapshot {bad} --format=github --only ED100,ED2 --verbose --no-redact",
    "check --snapshot {bad} -o {out} --format markdown",
    "check --snapshot {ok} --expect-cpu torch --timeout 3 --strict",
    "check --snapshot {ok} --expect-cpu nonsense",
    "check --snapshot {ok} --only NOPE",
    "check --snapshot {missing}",
    "check --snapshot {ok} --smoke",
    "check --snapshot {ok} --root {root}",
    "check --root {root} --format json",
    "check --root {root} -v",
    "check --root {missing}",
    "probe --root {root} --format json",
    "probe --root {root}",
    "probe --root {root} --fleet --node-name n1 -o {out}",
    "probe --python {missing} --format json",
    "check --python {python} --format json",
    "check --snapshot {ok} --format JSON",  # click's door on both: its one-line error
    "rules",
    "rules --format json",
    "explain ED100",
    "explain --format=json ed701",
    "explain ED999",
]


@pytest.mark.parametrize("case", CASES)
def test_both_doors_write_the_same(tmp_path, case):
    snaps = _snapshots(tmp_path)
    root, bindir = _fake_machine(tmp_path)
    # probe answers kept between runs are keyed by the whole environment, and the doors' differ by
    # ENVDOCTOR_NO_FAST_ARGV: both probe afresh, so that only the doors are compared (tests/test_cache.py)
    env = _env(tmp_path, bindir, ENVDOCTOR_NO_CACHE="1")
    results = []
    for fast in (True, False):
        door = tmp_path / ("fast" if fast else "click")
        door.mkdir()
        out = door / "out.txt"
        argv = case.format(ok=snaps["ok"], bad=snaps["bad"], root=root, out=out, missing=tmp_path / "missing",
                           python=sys.executable).split()
        if fast:
            _run(argv, env, door, fast=True)  # warm the caches (the binaries probe's, the data's) for both doors
        proc = _run(argv, env, door, fast=fast)
        results.append((proc.returncode, _same(proc.stdout), _same(proc.stderr),
                        _same(out.read_text()) if out.exists() else None))
    assert results[0] == results[1]
    assert cli_spec.parse(argv) is not None or "JSON" in case  # the fast door did take it
    rc, stdout, stderr, written = results[0]
    assert rc in (0, 1, 2) and "Traceback" not in stderr
    assert stdout or written or rc == 2, results[0]


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as in a terminal (see tests/test_cli.py)


def test_ctrl_c_reads_the_same_on_both_doors(tmp_path):
    """SIGINT during a probe: click ends the ^C line with a blank line, then one line, exit 130; so does the fast
    door."""
    hang = tmp_path / "cuda" / "bin"  # a toolkit's bin/ (envdoctor.probes.toolkits)
    started = tmp_path / "nvcc-started"
    make_exe(hang / "nvcc", f"touch {started}\nsleep 30")
    env = _env(tmp_path, hang)
    seen = []
    for fast in (True, False):
        if started.exists():
            started.unlink()
        e = dict(env) if fast else dict(env, ENVDOCTOR_NO_FAST_ARGV="1")
        proc = subprocess.Popen([sys.executable, "-m", "envdoctor", "probe", "--timeout", "20"], env=e,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_default_sigint,
                                cwd=str(tmp_path))
        deadline = time.monotonic() + 60
        while not started.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert started.exists(), proc.communicate(timeout=30)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        seen.append((proc.returncode, out, err))
    assert seen[0] == seen[1]
    assert seen[0][0] == 130 and seen[0][2] == "\nenvdoctor: interrupted\n", seen[0]


def test_a_closed_stdout_reads_the_same_on_both_doors(tmp_path):
    snap = _snapshots(tmp_path)["bad"]
    seen = []
    for fast in (True, False):
        read_end, write_end = os.pipe()
        os.close(read_end)  # nobody reads: the report's write fails with EPIPE
        try:
            e = _env(tmp_path) if fast else _env(tmp_path, ENVDOCTOR_NO_FAST_ARGV="1")
            proc = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--snapshot", str(snap)],
                                  stdout=write_end, stderr=subprocess.PIPE, text=True, env=e, cwd=str(tmp_path),
                                  timeout=120)
        finally:
            os.close(write_end)
        seen.append((proc.returncode, proc.stderr))
    assert seen[0] == seen[1] == [(1, "")][0], seen
