"""check's text report: a framework's own line is never ✓ while a finding about it sits under another area.

The reported case: an RTX 5090 (sm_120) with torch 2.6.0+cu124, whose arch error is filed under GPUs (as
https://github.com/pytorch/pytorch/issues/150733 and https://github.com/Hellod035/LeggedLab/issues/26 report: "sm_120
is not compatible with the current PyTorch installation"), showed "[✓] PyTorch"."""
from __future__ import annotations

import subprocess
import sys

from tests import snapfactory as sf


def _check_text(tmp_path, snap) -> str:
    path = tmp_path / "s.json"
    path.write_text(snap.to_json())
    p = subprocess.run([sys.executable, "-m", "envdoctor", "check", "--snapshot", str(path)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    return p.stdout


def _line(text: str, title: str) -> str:
    return next(ln for ln in text.splitlines() if ln.startswith("[") and f"] {title}" in ln)


def test_framework_line_carries_an_error_filed_under_gpus(tmp_path):
    snap = sf.machine(driver="570.124.04", driver_cuda="12.8", gpus=["NVIDIA GeForce RTX 5090:12.0"],
                      frameworks=[sf.torch("2.6.0+cu124", cuda="12.4")])
    out = _check_text(tmp_path, snap)
    assert _line(out, "GPUs").startswith("[✗]")
    assert _line(out, "PyTorch").startswith("[✗]"), out
    assert "see ED200 under GPUs" in out


def test_framework_line_stays_fine_when_nothing_is_wrong(tmp_path):
    snap = sf.machine(driver="570.124.04", driver_cuda="12.8", gpus=["NVIDIA GeForce RTX 5090:12.0"],
                      frameworks=[sf.torch("2.7.0+cu128", cuda="12.8")])
    out = _check_text(tmp_path, snap)
    assert _line(out, "PyTorch").startswith("[✓]"), out
    assert "see ED" not in out
