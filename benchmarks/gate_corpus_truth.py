"""Referee for the held-out gate corpus: rerun the real resolver on every corpus file and keep its raw answer.

The truth in tests/fixtures/gate_corpus/TRUTH.toml must come from the real resolver plus the sourced compatibility
facts in ../shared/reference/*.toml, never from envdoctor.  This script is that resolver run, so every truth can be
audited and rechecked:

    python benchmarks/gate_corpus_truth.py                 # every corpus file x Python 3.10/3.11/3.12/3.13
    python benchmarks/gate_corpus_truth.py --only dinov2   # files whose path contains 'dinov2'
    python benchmarks/gate_corpus_truth.py --summary       # print the framework / CUDA lines of the saved answers

For each file and Python it runs, from the file's own folder (so ``-r`` lines resolve as the project means them):

    uv pip compile FILE --python-version X.Y --python-platform x86_64-manylinux_2_35 --no-build --no-header
                        --no-python-downloads --no-annotate

with the uv of the CI venv (/work/main/.ci-venv/test/bin/uv, or $UV) and uv's default package index (no index is
added).  Inputs:

* requirements files and pyproject.toml are passed as they are;
* a conda environment.yml / conda.yaml: only its ``pip:`` section is resolved (written to a temporary file next to
  it); conda's own part (python=, pytorch=, cudatoolkit=) is NOT resolved, so a conda truth resting on it stays unsure.

When the verbatim run fails only because something off the default index cannot be reached from here (the PyTorch
download index, pypi.nvidia.com, a ``--find-links`` page, a ``git+https`` URL) or uv refuses a line pip would read
another way (``-e git+...``, several requirements on one line), a second run, the ``default-index`` variant, is made
with those lines changed, and both answers are saved: index / find-links options naming an http(s) host are dropped
(also after a requirement on the same line), a line of several requirements is split into one line each, ``-r``
files are inlined (and changed alike), a ``git+`` requirement becomes the PyPI release of the same name (``name @
git+...``, ``#egg=name``, else the repository name or GIT_NAMES), and local-path requirements (``.``,
``submodules/x``: they need a build, which --no-build forbids) are dropped.

When the last run so far fails only because a package has no wheel at all and --no-build forbids its sdist
(fairscale, umap-learn==0.5.1, basicsr: pip builds those on the target), a third run, the ``sdist-allowed`` variant,
drops ``--no-build`` so uv may build their metadata, but keeps ``--only-binary`` for NEVER_BUILD (frameworks and
compiled packages such as numpy, safetensors, sentencepiece, whose old releases have no wheel for a new Python and
whose source build takes a toolchain): a missing wheel for those stays a failure, read as ED803.

The header of each saved answer lists the variant and every change, so a truth resting on a changed input says so.

Each answer goes to benchmarks/gate_corpus_resolutions/<project>__<file>__py<X.Y>.txt (and
``...__py<X.Y>__default-index.txt`` for the variant): a short header (command, variant, exit code, date) and then
uv's pinned list, or its failure text.  At most --jobs resolvers run at a time (default 2).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "gate_corpus"
OUT = ROOT / "benchmarks" / "gate_corpus_resolutions"
UV = os.environ.get("UV", "/work/main/.ci-venv/test/bin/uv")
PYTHONS = ("3.10", "3.11", "3.12", "3.13")
PLATFORM = "x86_64-manylinux_2_35"
FLAGS = ["--python-platform", PLATFORM, "--no-build", "--no-header", "--no-python-downloads", "--no-annotate"]
UNREACHABLE = re.compile(r"dns error|Could not resolve host|Git operation failed|error sending request|"
                         r"Git sources cannot be editable|Trailing `.*` is not allowed|"
                         r"Failed to fetch: https?://(?!pypi\.org|files\.pythonhosted)", re.I)
SDIST_ONLY = re.compile(r"because building from source is disabled")
# Compiled packages whose old releases take a compiler (and often fail) on a new Python: never built by the
# sdist-allowed variant, so a missing wheel for them stays a failure, as it is on the target.
NEVER_BUILD = ("torch", "torchvision", "torchaudio", "tensorflow", "tensorflow-cpu", "tensorflow-gpu", "jax",
               "jaxlib", "numpy", "scipy", "pandas", "scikit-learn", "opencv-python", "safetensors", "tokenizers",
               "xformers", "bitsandbytes", "aiohttp", "pillow", "h5py", "numba", "llvmlite", "sentencepiece")
NOISE = re.compile(r"^warning: The requested Python version .* is not available.*$\n?", re.M)
KEEP = re.compile(r"^(torch|torchvision|torchaudio|jax|jaxlib|jax-cuda\d+-(plugin|pjrt)|tensorflow[a-z-]*|"
                  r"tf-nightly|keras|cuda-toolkit|nvidia-cuda-runtime[a-z0-9-]*|nvidia-cudnn[a-z0-9-]*|xformers|"
                  r"triton)==", re.I)


def corpus_files() -> list[str]:
    truth = tomllib.loads((CORPUS / "TRUTH.toml").read_text())
    return sorted(truth)


def conda_pip_section(text: str) -> list[str]:
    """The entries of a conda file's ``pip:`` list (a tiny YAML reader: ``- pip:`` then deeper ``- item`` lines)."""
    out, indent = [], None
    for line in text.splitlines():
        if re.match(r"^\s*-\s*pip\s*:\s*$", line):
            indent = len(line) - len(line.lstrip())
            continue
        if indent is None:
            continue
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if len(line) - len(line.lstrip()) <= indent:
            break
        if stripped.startswith("- "):
            out.append(stripped[2:].strip())
    return out


# git repositories whose distribution name is neither in an ``#egg=`` nor the repository's last path part
GIT_NAMES = {"mlperf/logging": "mlperf-logging"}


def default_index_variant(lines: list[str], folder: Path, seen: frozenset = frozenset()) -> tuple[list[str], list[str]]:
    """Lines for the default-index variant and the list of changes made (``-r`` files are inlined, changed alike)."""
    kept, changes = [], []
    for raw in lines:
        line = raw.split(" #")[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            kept.append(raw)
            continue
        inc = re.match(r"^(-r|--requirement)[ =]\s*(\S+)$", line)
        if inc and (folder / inc.group(2)).is_file() and inc.group(2) not in seen:
            sub, subchanges = default_index_variant((folder / inc.group(2)).read_text().splitlines(), folder,
                                                    seen | {inc.group(2)})
            kept += sub
            changes += [f"inlined {line!r}"] + [f"{c} (in {inc.group(2)})" for c in subchanges]
            continue
        opt = re.search(r"\s(--(extra-)?index-url|-i|--find-links|-f)[ =]\s*https?://\S+", " " + line)
        if re.match(r"^(--(extra-)?index-url|-i|--find-links|-f)[ =]\s*https?://", line):
            changes.append(f"dropped {line!r}")
            continue
        if opt:  # an index option after requirements on one line: pip and uv reject the line as written
            line = (" " + line).replace(opt.group(0), "").strip()
            changes.append(f"dropped {opt.group(0).strip()!r} from a requirement line")
        if re.match(r"^[A-Za-z0-9_.\-\[\]]+[=<>~!]=?\S*(\s+[A-Za-z0-9_.\-\[\]]+[=<>~!]=?\S*)+$", line):
            parts = line.split()
            kept += parts
            changes.append(f"split {line!r} into {len(parts)} lines")
            continue
        m = re.match(r"^([A-Za-z0-9_.\-\[\],]+)\s*@\s*git\+", line)
        if m:
            kept.append(m.group(1))
            changes.append(f"{line!r} -> {m.group(1)!r} (PyPI release)")
            continue
        g = re.match(r"^(-e\s+)?git\+(\S+)", line)
        if g:
            url = g.group(2)
            egg = re.search(r"egg=([A-Za-z0-9_.\-]+)", url)
            repo = "/".join(url.split("#")[0].rstrip("/").removesuffix(".git").split("/")[-2:])
            name = egg.group(1) if egg else GIT_NAMES.get(repo, repo.split("/")[-1])
            kept.append(name)
            changes.append(f"{line!r} -> {name!r} (PyPI release)")
            continue
        if line == "." or line.startswith(("./", "../", "submodules/", "-e .")):
            changes.append(f"dropped local path {line!r} (needs a build)")
            continue
        kept.append(line if opt else raw)
    return kept, changes


def _run(cmd: list[str], folder: Path, timeout: int) -> tuple[int, str]:
    try:
        p = subprocess.run(cmd, cwd=folder, capture_output=True, text=True, timeout=timeout)
        return p.returncode, NOISE.sub("", p.stdout + p.stderr)
    except subprocess.TimeoutExpired:
        return 124, f"timeout after {timeout} s\n"


def compile_one(folder: Path, input_name: str, py: str) -> tuple[int, str, list[str]]:
    cmd = [UV, "pip", "compile", input_name, "--python-version", py, *FLAGS]
    rc, text = _run(cmd, folder, 600)
    return rc, text, cmd


def _slug(rel: str) -> str:
    project, name = rel.split("/", 1)
    return f"{project}__{name.replace('/', '_')}"


def _write(path: Path, rel: str, variant: str, cmd: list[str], rc: int, text: str, changes: list[str]) -> None:
    head = [f"# input: tests/fixtures/gate_corpus/{rel}", f"# variant: {variant}",
            "# command (from the file's folder): " + " ".join(["uv", *cmd[1:]]),
            f"# exit: {rc}", f"# date: {dt.date.today().isoformat()}"]
    head += [f"# change: {c}" for c in changes]
    path.write_text("\n".join(head) + "\n" + text)


def run_file(rel: str, py: str) -> str:
    src = CORPUS / rel
    folder = src.parent
    is_conda = src.suffix in (".yml", ".yaml")
    lines = conda_pip_section(src.read_text()) if is_conda else src.read_text().splitlines()
    tmp_names = []

    def materialise(tag: str, body: list[str]) -> str:
        name = f".truth_{tag}_{src.stem}_py{py}.txt"
        (folder / name).write_text("\n".join(body) + "\n")
        tmp_names.append(folder / name)
        return name

    try:
        note = ["conda file: only its pip: section is resolved; conda's part is not"] if is_conda else []
        name = materialise("pip", lines) if is_conda else src.name
        rc, text, cmd = compile_one(folder, name, py)
        _write(OUT / f"{_slug(rel)}__py{py}.txt", rel, "verbatim" + (" (pip: section)" if is_conda else ""),
               cmd, rc, text, note)
        result = f"{rel} py{py}: rc={rc}"
        if rc != 0 and UNREACHABLE.search(text):
            if src.name == "pyproject.toml":  # the variant resolves [project] dependencies as requirement lines
                lines = tomllib.loads(src.read_text())["project"].get("dependencies", [])
                note = note + ["pyproject.toml: its [project] dependencies, as requirement lines"]
            kept, changes = default_index_variant(lines, folder)
            rc2, text2, cmd2 = compile_one(folder, materialise("default", kept), py)
            _write(OUT / f"{_slug(rel)}__py{py}__default-index.txt", rel, "default-index", cmd2, rc2, text2,
                   note + changes)
            result += f" default-index rc={rc2}"
            rc, text, name = rc2, text2, cmd2[3]
        if rc != 0 and SDIST_ONLY.search(text):
            flags = [f for f in FLAGS if f != "--no-build"]
            for pkg in NEVER_BUILD:
                flags += ["--only-binary", pkg]
            cmd3 = [UV, "pip", "compile", name, "--python-version", py, *flags]
            rc3, text3 = _run(cmd3, folder, 300)
            _write(OUT / f"{_slug(rel)}__py{py}__sdist-allowed.txt", rel, "sdist-allowed", cmd3, rc3, text3,
                   note + ["--no-build dropped: uv may build the metadata of sdist-only packages, as pip on the "
                           "target would; " + ", ".join(NEVER_BUILD) + " stay wheel-only"])
            result += f" sdist-allowed rc={rc3}"
        return result
    finally:
        for t in tmp_names:
            t.unlink(missing_ok=True)


def summary() -> None:
    for path in sorted(OUT.glob("*.txt")):
        text = path.read_text()
        rc = re.search(r"^# exit: (\d+)", text, re.M).group(1)
        pins = [ln for ln in text.splitlines() if KEEP.match(ln)]
        cuda = sorted({ln for ln in text.splitlines() if re.match(r"^nvidia-.*-cu1[123]==|^nvidia-cublas", ln)})
        body = [ln for ln in text.splitlines() if not ln.startswith("#")]
        tail = "" if rc == "0" else " | " + " ".join(" ".join(body).split())[:600]
        print(f"{path.name}: rc={rc} {' '.join(pins)} [{len(cuda)} nvidia cu1x pins: {' '.join(cuda[:3])}]{tail}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", help="substring of the corpus path (project/file)")
    ap.add_argument("--file", action="append", help="a corpus path (project/file) not yet in TRUTH.toml")
    ap.add_argument("--python", action="append", help="Python version(s); default 3.10-3.13")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--summary", action="store_true", help="print the saved answers' framework lines and stop")
    args = ap.parse_args()
    if args.summary:
        summary()
        return 0
    OUT.mkdir(parents=True, exist_ok=True)
    files = args.file or [f for f in corpus_files() if not args.only or args.only in f]
    jobs = [(f, py) for f in files for py in (args.python or PYTHONS)]
    with cf.ThreadPoolExecutor(max_workers=max(1, min(args.jobs, 2))) as ex:
        for line in ex.map(lambda j: run_file(*j), jobs):
            print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
