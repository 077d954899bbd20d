"""Collect matrices/gate_wheel_pythons.toml: for compiled packages that ML requirement files pin, the CPython
versions each release series has Linux x86_64 wheels for, whether it has a pure or abi3 wheel, and whether it has a
source distribution (with the Requires-Python the index states for it).

Read from the simple pages of the indexes pip is configured with (nothing is installed or built):

    python dev/collect_wheel_pythons.py > matrices/gate_wheel_pythons.toml.new

The build facts (``sdist_builds``) are not on the index: they are kept from the existing table, each with its own
source, and merged into the rows this writes.
"""
from __future__ import annotations

import datetime
import html
import re
import sys
import tomllib
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import InvalidSdistFilename, InvalidWheelFilename, parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

from envdoctor.knowledge.index import ACCEPT, IndexClient, _LinkParser, configured_indexes

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "matrices" / "gate_wheel_pythons.toml"

# Compiled packages (C / C++ / Rust extensions, no pure-Python fallback wheel for every release) that ML
# requirement files commonly pin, besides the frameworks the main tables hold.
PACKAGES = [
    "numpy", "scipy", "pandas", "scikit-learn", "scikit-image", "matplotlib", "h5py", "numba", "llvmlite",
    "opencv-python", "opencv-python-headless", "opencv-contrib-python", "pillow", "pyarrow", "tokenizers",
    "sentencepiece", "safetensors", "grpcio", "tensorflow-addons", "tensorflow-text", "tensorflow-io-gcs-filesystem",
    "tensorflow-io", "dm-tree", "ml-dtypes", "onnx", "faiss-cpu", "pycocotools", "shapely", "av", "lxml",
    "tiktoken", "pydantic-core", "kiwisolver", "contourpy", "spacy", "thinc", "blis", "mecab-python3",
    "open3d", "decord", "pyzmq", "orjson", "regex", "psutil",
]
LINUX_X86_64 = re.compile(r"^(manylinux\w*_x86_64|linux_x86_64|musllinux_\d+_\d+_x86_64)$")
CPY = re.compile(r"^cp(\d)(\d+)$")
ABI3 = re.compile(r"^cp(\d)(\d+)$")


def page_links(client: IndexClient, index: str, project: str):
    page = urljoin(index, project + "/")
    resp = client.fetch(page, accept=ACCEPT.replace("application/vnd.pypi.simple.v1+json, ", ""))
    if resp.status in (404, 410):
        return []
    parser = _LinkParser()
    parser.feed(resp.body.decode("utf-8"))
    base = urljoin(page, parser.base) if parser.base else page
    out = []
    for link in parser.links:
        full, _ = urldefrag(urljoin(base, link["href"] or ""))
        name = unquote(full.rstrip("/").rsplit("/", 1)[-1])
        rp = link.get("data-requires-python")
        out.append((name, html.unescape(rp) if rp else None, "data-yanked" in link))
    return out


def series_of(v: Version) -> str:
    return f"{v.major}.{v.minor}"


def collect(client: IndexClient, index: str, project: str):
    rows: dict = {}
    for name, rp, yanked in page_links(client, index, project):
        if yanked:
            continue
        if name.endswith(".whl"):
            try:
                _, v, _, tags = parse_wheel_filename(name)
            except (InvalidWheelFilename, ValueError):
                continue
            kind = "wheel"
        else:
            try:
                _, v = parse_sdist_filename(name)
            except (InvalidSdistFilename, ValueError):
                continue
            kind, tags = "sdist", frozenset()
        if v.is_prerelease or v.is_devrelease or v.local:
            continue
        r = rows.setdefault(series_of(v), {"releases": set(), "pythons": set(), "abi3_from": None, "pure": False,
                                           "sdist": False, "sdist_python": set()})
        r["releases"].add(v)
        if kind == "sdist":
            r["sdist"] = True
            if rp:
                r["sdist_python"].add(rp)
            continue
        for t in tags:
            if t.platform == "any":
                if t.interpreter.startswith("py3") or t.interpreter.startswith("py2.py3") or t.interpreter == "py3":
                    r["pure"] = True
                continue
            if not LINUX_X86_64.match(t.platform):
                continue
            m = CPY.match(t.interpreter)
            if not m:
                continue
            py = f"{m.group(1)}.{m.group(2)}"
            if t.abi == "abi3":
                cur = r["abi3_from"]
                if cur is None or Version(py) < Version(cur):
                    r["abi3_from"] = py
            else:
                r["pythons"].add(py)
    return rows


def q(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def main() -> int:
    conf = configured_indexes()
    kept = {}
    if TABLE.exists():
        for r in tomllib.loads(TABLE.read_text()).get("series", []):
            if "sdist_builds" in r:
                kept[(r["package"], r["series"])] = {k: r[k] for k in ("sdist_builds", "sdist_builds_source") if k in r}
    client = IndexClient(conf.urls)
    day = datetime.date.today().isoformat()
    print(HEADER.strip() + "\n")
    print(f'schema = "gate_wheel_pythons/v1"\ncollected = "{day}"\n')
    for project in PACKAGES:
        merged: dict = {}
        for index in client.urls:
            for s, r in collect(client, index, project).items():
                m = merged.setdefault(s, {"releases": set(), "pythons": set(), "abi3_from": None, "pure": False,
                                          "sdist": False, "sdist_python": set()})
                m["releases"] |= r["releases"]
                m["pythons"] |= r["pythons"]
                m["pure"] = m["pure"] or r["pure"]
                m["sdist"] = m["sdist"] or r["sdist"]
                m["sdist_python"] |= r["sdist_python"]
                if r["abi3_from"] and (m["abi3_from"] is None or Version(r["abi3_from"]) < Version(m["abi3_from"])):
                    m["abi3_from"] = r["abi3_from"]
        for s in sorted(merged, key=Version):
            r = merged[s]
            if not r["pythons"] and not r["abi3_from"] and not r["pure"] and not r["sdist"]:
                continue
            pys = sorted(r["pythons"], key=Version)
            print("[[series]]")
            print(f"package = {q(project)}")
            print(f"series = {q(s)}")
            print("releases = [" + ", ".join(q(str(v)) for v in sorted(r["releases"])) + "]")
            print("pythons = [" + ", ".join(q(p) for p in pys) + "]")
            if r["abi3_from"]:
                print(f"abi3_from = {q(r['abi3_from'])}")
            if r["pure"]:
                print("pure = true")
            print(f"sdist = {'true' if r['sdist'] else 'false'}")
            sp = sorted(r["sdist_python"])
            if len(sp) == 1:
                try:
                    SpecifierSet(sp[0])
                    print(f"sdist_requires_python = {q(sp[0])}")
                except InvalidSpecifier:
                    pass
            extra = kept.get((project, s), {})
            for k, val in extra.items():
                print(f"{k} = {q(val)}")
            print(f'source = "index simple page of {project} {s}.x, read {day} (dev/collect_wheel_pythons.py)"')
            print('verified = "wheel file names (cpXY tags) and data-requires-python as the index lists them"')
            print()
    return 0


HEADER = """
# Compiled packages besides the frameworks, as the index's own files show them: per release series, the CPython
# versions that any Linux x86_64 wheel of the series is built for (the union over its releases), whether an abi3 wheel
# (any CPython from abi3_from on) or a pure wheel exists, and whether a source distribution does.
# gate's offline planner says ED803 for a line naming such a package only when no release the line allows has a wheel
# for the target's Python AND no source build can stand in: the series has no sdist, its sdist's Requires-Python
# excludes the Python, or `sdist_builds` (a fact with its own source) says its build fails there. Where an sdist might
# build, the line is "not judged" (gate builds nothing). Written by dev/collect_wheel_pythons.py.
"""

if __name__ == "__main__":
    sys.exit(main())
