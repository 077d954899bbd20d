"""lock and gate never rank a build judged on a fact the data lacks above one whose facts are known.

The report: ``envdoctor lock --tensorflow --gpu sm_50 --driver 535.104.05`` (and ``--gpu sm_90``) wrote
``tensorflow[and-cuda]==2.18.1`` while it rejected 2.21.0 there: 2.18's arch list was missing from the data, the
missing fact counted as "may fit", and newest-first put it above the known older fit (2.14.1).  gate's fix line did
the same (ED100 on driver 470.42.01 named TensorFlow 2.12.1, whose arch list the data lacks, over 2.11.1).

The data under test is controlled here: the newest TensorFlow row of the bundled table is laid over again without
its arch list (a user cache overlay, as ``envdoctor matrices refresh`` writes one), so the case stays "unknown"
however the bundled rows grow.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from packaging.version import Version

from envdoctor.knowledge import load_matrices
from tests.framework_cli import cli

BUNDLED = Path(__file__).resolve().parents[1] / "matrices" / "tensorflow.toml"


def _blocks(text: str) -> Tuple[str, List[str]]:
    """(the table's head, its ``[[...]]`` blocks in order)."""
    parts = re.split(r"(?m)^(?=\[\[)", text)
    return parts[0], parts[1:]


def _newest_release_without_archs(cache: Path) -> str:
    """Write ``cache/matrices/tensorflow.toml``: the bundled head and the newest [[release]] row without
    compute_capabilities (its other facts as bundled).  Returns that release's tested version."""
    head, blocks = _blocks(BUNDLED.read_text(encoding="utf-8"))
    releases = [b for b in blocks if b.startswith("[[release]]")]
    newest = max(releases, key=lambda b: Version(re.search(r'(?m)^tested = "([^"]+)"', b).group(1)))
    tested = re.search(r'(?m)^tested = "([^"]+)"', newest).group(1)
    row = "".join(line for line in newest.splitlines(keepends=True)
                  if not line.startswith(("compute_capabilities", "cc_verified")))
    (cache / "matrices").mkdir(parents=True)
    (cache / "matrices" / "tensorflow.toml").write_text(head + row, encoding="utf-8")
    return tested


@pytest.fixture
def unknown_newest(tmp_path: Path, monkeypatch: Any) -> Tuple[str, Any]:
    cache = tmp_path / "cache"
    tested = _newest_release_without_archs(cache)
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(cache))
    m = load_matrices(cache_dir=cache / "matrices")
    row = m.tf_release(tested)
    assert row is not None and not row.compute_capabilities  # the overlay took: the case under test exists
    return tested, m


TARGET = ["--gpu", "sm_86", "--driver", "580.65.06", "--python-version", "3.12"]  # every recent TF runs here


def _lock(capsys: Any, *args: str) -> Tuple[int, Dict[str, Any]]:
    rc, out, err = cli(["lock", "--format", "json", *args], capsys)
    assert rc == 0, err
    return rc, json.loads(out)


def test_lock_takes_a_known_older_fit_over_a_newer_unknown(unknown_newest: Tuple[str, Any], capsys: Any) -> None:
    tested, m = unknown_newest
    _, data = _lock(capsys, "--tensorflow", *TARGET)
    pick = data["lock"]["picks"][0]
    assert pick["version"] != tested and Version(pick["version"]) < Version(tested)
    assert pick["archs"], pick  # chosen on an arch list the data has
    assert data["lock"]["unknown"] == [] and data["lock"]["chosen_on_unknown"] is False


def test_lock_chooses_an_unknown_only_when_nothing_known_fits_and_says_so(unknown_newest: Tuple[str, Any],
                                                                           capsys: Any) -> None:
    tested, _ = unknown_newest
    _, data = _lock(capsys, f"--tensorflow=={tested}", *TARGET)
    assert data["lock"]["picks"][0]["version"] == tested
    assert data["lock"]["chosen_on_unknown"] is True
    assert any("sm_86" in u and "not known" in u for u in data["lock"]["unknown"]), data["lock"]["unknown"]
    rc, out, err = cli(["lock", f"--tensorflow=={tested}", *TARGET, "-o", "-"], capsys)
    assert rc == 0
    said = [line for line in out.splitlines() if "not known to fit" in line]
    assert len(said) == 1 and "sm_86" in said[0], out  # said once, in the header
    assert "its compiled compute capabilities are not in the data" not in out  # not again as a note
    assert "not known to fit" in err


def test_the_reported_targets_never_get_a_release_without_an_arch_list(capsys: Any, tmp_path: Path,
                                                                         monkeypatch: Any) -> None:
    """The report's own targets on the bundled data: whatever rows the data has an arch list for, the pick has one
    (a known fit exists: 2.14's list holds sm_50 and reaches sm_90 through PTX the R535 driver can JIT)."""
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(tmp_path / "empty"))
    for gpu in ("sm_50", "sm_90"):
        _, data = _lock(capsys, "--tensorflow", "--gpu", gpu, "--driver", "535.104.05", "--python-version", "3.11")
        pick = data["lock"]["picks"][0]
        assert pick["archs"] and not data["lock"]["unknown"], (gpu, pick["label"])


def test_gate_fix_names_a_known_fit_not_a_newer_unknown(tmp_path: Path, monkeypatch: Any, capsys: Any) -> None:
    """gate's ED100 fix ("or install TensorFlow X, which this driver runs") asks the same ranking: with the newest
    release the driver runs made unknown, the release it names has an arch list in the data."""
    cache = tmp_path / "cache"
    head, blocks = _blocks(BUNDLED.read_text(encoding="utf-8"))
    m0 = load_matrices(cache_dir=tmp_path / "none")
    driver, gpu = "470.42.01", "sm_86"  # R470: CUDA 11.x builds only (minor-version compatibility)
    eleven = [r for r in m0.tensorflow_releases if Version(r.cuda).major == 11]
    newest11 = max(eleven, key=lambda r: Version(r.tested))
    rows = [b for b in blocks if b.startswith("[[release]]") and f'tested = "{newest11.tested}"' in b]
    (cache / "matrices").mkdir(parents=True)
    (cache / "matrices" / "tensorflow.toml").write_text(head + "".join(
        "".join(line for line in b.splitlines(keepends=True)
                if not line.startswith(("compute_capabilities", "cc_verified"))) for b in rows), encoding="utf-8")
    monkeypatch.setenv("ENVDOCTOR_CACHE_DIR", str(cache))
    m = load_matrices(cache_dir=cache / "matrices")
    assert not m.tf_release(newest11.tested).compute_capabilities
    newest = max(m.tensorflow_releases, key=lambda r: Version(r.tested))
    req = tmp_path / "requirements.txt"
    req.write_text(f"tensorflow[and-cuda]=={newest.tested}\n")
    rc, out, _ = cli(["gate", str(req), "--offline", "--driver", driver, "--gpu", gpu, "--python-version", "3.10"],
                     capsys)
    assert rc == 1 and "ED100" in out, out
    named = re.search(r"or install TensorFlow (\S+) \(built for CUDA", out)
    assert named is not None, out
    row = m.tf_release(named.group(1))
    assert row is not None and row.compute_capabilities, named.group(0)
    assert "not known to fit" not in out
