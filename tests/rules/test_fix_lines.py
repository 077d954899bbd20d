"""Fix lines that reinstall torch name the whole installed set: torch with the torchvision / torchaudio
versions that match it (matrices/pytorch.toml patch rows) from the same index -- else the companions,
left at versions built for the old torch, break ("operator torchvision::nms does not exist"). Through `check`."""
from __future__ import annotations

import json
import re

import pytest

from envdoctor.entry import main
from envdoctor.knowledge import load_matrices
from envdoctor.snapshot import Framework
from envdoctor.snapshot_io import dump_json
from tests import snapfactory as sf


def _check(tmp_path, capsys, snap):
    path = tmp_path / "snap.json"
    path.write_text(dump_json(snap.to_dict()))
    with pytest.raises(SystemExit) as exc:
        main(["check", "--snapshot", str(path), "--format", "json"])
    out, err = capsys.readouterr()
    return exc.value.code, json.loads(out)


def _torch_set(*extra):
    return [sf.torch("2.6.0+cu124", cuda="12.4", cudnn="9.1.0"),
            Framework("torchvision", "torchvision", "0.21.0+cu124", build="cuda", cuda_version="12.4"),
            Framework("torchaudio", "torchaudio", "2.6.0+cu124", build="cuda", cuda_version="12.4"), *extra]


def _install_lines(report):
    return [line for f in report["findings"] for line in (f.get("fix") or []) if "pip install" in line and "torch==" in line]


def test_fix_for_an_old_driver_reinstalls_torch_with_matching_companions(tmp_path, capsys):
    snap = sf.machine(driver="470.57.02", driver_cuda="11.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"], frameworks=_torch_set())
    rc, report = _check(tmp_path, capsys, snap)
    assert rc == 1
    lines = _install_lines(report)
    assert lines, report["findings"]
    m = load_matrices()
    for line in lines:
        pins = dict(re.findall(r'"?(torch|torchvision|torchaudio)==([^\s"+]+)(?:\+\w+)?"?', line))
        assert set(pins) == {"torch", "torchvision", "torchaudio"}, line
        row = m.torch_release(pins["torch"]).patch(pins["torch"])
        assert (pins["torchvision"], pins["torchaudio"]) == (row.torchvision, row.torchaudio), line
        assert len(re.findall(r"--index-url ", line)) == 1  # one index for the whole set


def test_fix_names_only_the_companions_that_are_installed(tmp_path, capsys):
    snap = sf.machine(driver="470.57.02", driver_cuda="11.4", gpus=["NVIDIA A100-SXM4-80GB:8.0"],
                      frameworks=_torch_set()[:2])  # no torchaudio
    _, report = _check(tmp_path, capsys, snap)
    lines = _install_lines(report)
    assert lines and all("torchvision==" in ln and "torchaudio" not in ln for ln in lines)

