"""Every numeric option of every command takes a finite number in its range, or fails with one line, exit 2
(`--timeout nan` was accepted, probes failed and a hanging child was never killed)."""
from __future__ import annotations

import click
import pytest

import envdoctor.entry as entry
from envdoctor.cli import cli
from envdoctor.cli_options import Count, Number, Seconds

BAD = ["nan", "NaN", "inf", "-inf", "-1", "0", "1e309", "", "abc", "\u0661\u0662", "1e-400", "0x10"]


def _numeric_options():
    """(command path, option) for every option of every command whose value is a number."""
    found = []

    def walk(cmd, path):
        ctx = click.Context(cli)
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                walk(cmd.get_command(ctx, name), path + [name])
            return
        for p in cmd.params:
            if isinstance(p, click.Option) and isinstance(
                    p.type, (Number, click.types.FloatParamType, click.types.IntParamType)):
                found.append((tuple(path), p))

    walk(cli, [])
    return found


OPTIONS = _numeric_options()
CASES = [(path, p.opts[0]) for path, p in OPTIONS]


def _option(path, opt):
    return next(p for q, p in OPTIONS if q == path and p.opts[0] == opt)
WHOLE = [(path, p.opts[0]) for path, p in OPTIONS if getattr(p.type, "integer", False)]


def test_every_numeric_option_uses_the_shared_type():
    assert CASES, "no numeric option found: the walk is broken"
    assert {" ".join(path) for path, _ in CASES} >= {"probe", "check", "gate", "lock", "smoke", "onboard",
                                                    "matrices verify", "matrices refresh"}
    wrong = [(path, p.opts[0], p.type) for path, p in OPTIONS if not isinstance(p.type, Number)]
    assert not wrong, f"numeric options not declared with a type from envdoctor.cli_options: {wrong}"


def _main(argv, capsys):
    with pytest.raises(SystemExit) as done:
        entry.main(argv)
    out, err = capsys.readouterr()
    return done.value.code, out, err


@pytest.mark.parametrize("value", BAD)
@pytest.mark.parametrize("path, opt", CASES, ids=[" ".join(p) + " " + o for p, o in CASES])
def test_bad_number_is_one_line_and_exit_2(path, opt, value, capsys):
    if value == "0" and _option(path, opt).type.minimum <= 0:
        pytest.skip(f"0 is in the range of {opt} (a sample of none, a seed)")
    code, out, err = _main([*path, opt, value], capsys)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and opt in lines[0] and "Traceback" not in err, err
    assert out == ""


@pytest.mark.parametrize("value", ["2.5", "1e3", "+1.0"])
@pytest.mark.parametrize("path, opt", WHOLE, ids=[" ".join(p) + " " + o for p, o in WHOLE])
def test_whole_number_options_refuse_fractions_and_exponents(path, opt, value, capsys):
    code, out, err = _main([*path, opt, value], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and opt in err, err


def test_equals_form_and_bounds_are_accepted(tmp_path, capsys):
    """In range: the command runs (a saved snapshot: no probing); `--timeout=0.1` and the maximum included."""
    from envdoctor.snapshot import Snapshot

    snap = tmp_path / "s.json"
    snap.write_text(Snapshot(envdoctor_version="t", created="2026-01-01T00:00:00+00:00").to_json())
    for value in ("0.1", "600", "7.5", "1e1", " 3 "):
        code, out, err = _main(["probe", "--snapshot", str(snap), f"--timeout={value}"], capsys)
        assert code == 0, err
    code, _, err = _main(["probe", "--snapshot", str(snap), "--timeout", "600.001"], capsys)
    assert code == 2 and "0.1 to 600 seconds" in err


def test_type_converts_and_refuses():
    t = Seconds(0.5, 86400)
    assert t.convert("2.5", None, None) == 2.5 and t.convert(10, None, None) == 10.0
    for bad in (float("nan"), float("inf"), True, "86401", "0.4"):
        with pytest.raises(click.BadParameter):
            t.convert(bad, None, None)
    n = Count(1, 100)
    assert n.convert(" 12 ", None, None) == 12 and n.convert(3, None, None) == 3
    for bad in ("\u0661\u0662", "12.0", "101", "0", 2.5, float("nan")):
        with pytest.raises(click.BadParameter):
            n.convert(bad, None, None)


@pytest.mark.parametrize("path, option", OPTIONS, ids=[" ".join(p) + " " + o.opts[0] for p, o in OPTIONS])
def test_help_shows_the_option(path, option, capsys):
    code, out, err = _main([*path, "--help"], capsys)
    assert code == 0 and f"{option.opts[0]} {option.type.metavar}" in out, err
