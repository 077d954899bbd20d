"""METADATA of wheels read with HTTP range requests (envdoctor/knowledge/lazywheel.py), and
`envdoctor matrices verify` on an index that, like the public index reached from here, serves no
PEP 658 metadata file.

The wheels are real zip files built by tests/index_server.py around the RECORDED real metadata
(tests/fixtures/index/recorded, SOURCES.toml), laid out like the real ones (hundreds of members, a
large payload, the dist-info directory last, or first for tensorflow as bazel writes it).
"""
import json
import threading
import time
import zipfile

import pytest

from envdoctor.knowledge import index as I
from envdoctor.knowledge import lazywheel as LW
from envdoctor.knowledge import load_matrices
from envdoctor.knowledge.verify import same_meaning, verify
from packaging.version import Version
from tests.index_server import FakeIndex, all_recorded, build_wheel
from tests.test_verify_refresh import _isolated, run  # noqa: F401 - the same isolation (autouse) and CLI runner

TORCH = "torch-2.1.1-cp310-cp310-manylinux1_x86_64.whl"
TF = "tensorflow-2.15.0-cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"


def _one(rec, *names):
    return {n: rec[n] for n in names}


def _wheel_url(idx, filename):
    return idx.url.replace("/simple/", f"/files/{filename}")


@pytest.mark.parametrize("wheel", [TORCH, TF])
def test_metadata_read_by_ranges_is_the_recorded_text_and_costs_little(wheel):
    rec = all_recorded()
    assert wheel in rec
    with FakeIndex(_one(rec, wheel), mode="lazy") as idx:
        client = I.IndexClient([idx.url], timeout=5)
        text = LW.read_remote_metadata_text(client, _wheel_url(idx, wheel))
        size = len(idx.wheel(wheel))
        served, requests = idx.bytes_served, idx.range_requests
    assert text == rec[wheel]
    # the wheel is a real zip whose directory is bigger than one range read
    with zipfile.ZipFile(__import__("io").BytesIO(build_wheel(wheel, rec[wheel]))) as zf:
        names = zf.namelist()
        assert len(names) > 600 and zf.read([n for n in names if n.endswith("/METADATA")][0]).decode() == rec[wheel]
    assert size > 250_000
    assert served < 3 * LW.TAIL_BYTES + 4096, (served, size)  # tail, (directory head,) one member
    assert requests <= 3


def test_pick_and_metadata_through_the_client():
    rec = all_recorded()
    with FakeIndex(_one(rec, TORCH), mode="lazy") as idx:
        client = I.IndexClient([idx.url], timeout=5)
        dist, meta = client.release_metadata("torch", "2.1.1")
        assert dist.metadata is None  # the page offers no metadata file
        assert meta is not None and meta.version == "2.1.1"
        assert meta.requires_dist == [line[len("Requires-Dist: "):] for line in rec[TORCH].splitlines()
                                      if line.startswith("Requires-Dist: ")]
        assert meta.source.endswith("(METADATA read with HTTP range requests)")
        before = idx.bytes_served
        assert client.metadata(dist) is meta  # read once per client
        assert idx.bytes_served == before
    st = LW.stats(client)
    assert st.wheels == 1 and 0 < st.bytes < 3 * LW.TAIL_BYTES + 4096


def test_server_that_ignores_range_is_not_downloaded_from():
    rec = all_recorded()
    with FakeIndex(_one(rec, TORCH), mode="lazy-norange") as idx:
        client = I.IndexClient([idx.url], timeout=5)
        dist, meta = client.release_metadata("torch", "2.1.1")
        size = len(idx.wheel(TORCH))
    assert meta is None
    assert "ignores HTTP range requests" in LW.failure(client, dist)
    assert LW.stats(client).bytes <= LW.TAIL_BYTES + 64 * 1024 < size


def test_not_a_zip_and_bad_crc_are_reasons_not_tracebacks(monkeypatch):
    rec = all_recorded()
    with FakeIndex(_one(rec, TORCH), mode="lazy") as idx:
        idx._wheels[TORCH] = b"x" * 100_000
        client = I.IndexClient([idx.url], timeout=5)
        dist, meta = client.release_metadata("torch", "2.1.1")
        assert meta is None and "not a zip file" in LW.failure(client, dist)
    with FakeIndex(_one(rec, TORCH), mode="lazy") as idx:
        # a stored METADATA whose bytes are changed after the CRC was written
        import io

        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
            zf.writestr("pkg/a.py", b"x" * 40_000)
            zf.writestr("torch-2.1.1.dist-info/METADATA", rec[TORCH].encode())
        data = bytearray(buf.getvalue())
        at = data.index(b"Name: torch")
        data[at:at + 11] = b"Name: xorch"
        idx._wheels[TORCH] = bytes(data)
        client = I.IndexClient([idx.url], timeout=5)
        dist, meta = client.release_metadata("torch", "2.1.1")
        assert meta is None and "CRC-32" in LW.failure(client, dist)


def test_retries_with_backoff_after_a_503():
    rec = all_recorded()
    with FakeIndex(_one(rec, TORCH), mode="lazy-flaky") as idx:
        client = I.IndexClient([idx.url], timeout=5, retries=2, backoff=0.0)
        dist, meta = client.release_metadata("torch", "2.1.1")
        assert meta is not None and meta.version == "2.1.1"
    with FakeIndex(_one(rec, TORCH), mode="lazy-flaky") as idx:
        client = I.IndexClient([idx.url], timeout=5, retries=0, backoff=0.0)
        dist, meta = client.release_metadata("torch", "2.1.1")
        assert meta is None and "HTTP 503" in LW.failure(client, dist)


def test_prefers_a_local_file_copy_of_the_same_wheel(tmp_path):
    rec = all_recorded()
    data = build_wheel(TORCH, rec[TORCH])
    root = tmp_path / "simple"
    (root / "torch").mkdir(parents=True)
    (tmp_path / "files").mkdir()
    (tmp_path / "files" / TORCH).write_bytes(data)
    (root / "torch" / "index.html").write_text(f'<a href="../../files/{TORCH}">{TORCH}</a>\n')
    with FakeIndex(_one(rec, TORCH), mode="lazy") as idx:
        client = I.IndexClient([idx.url, root.as_uri() + "/"], timeout=5)
        remote = [f for f in client.project_files("torch") if f.url.startswith("http")]
        assert [f.filename for f in remote] == [TORCH]
        meta = client.metadata(remote[0])
        assert meta is not None and meta.version == "2.1.1" and meta.source.startswith("file://")
        assert idx.range_requests == 0 and idx.bytes_served == 0
    st = LW.stats(client)
    assert st.wheels == 0 and st.local == 1


def test_same_meaning_compares_the_versions_admitted():
    assert same_meaning("==0.4.31", ">=0.4.31,<=0.4.31")
    assert not same_meaning("==0.4.31", "<=0.4.31,>=0.4.30")
    assert same_meaning("<10.0,>=9.1", ">=9.1,<10")
    assert not same_meaning(">=9.1", ">9.1")
    assert not same_meaning("==1.0", None)
    # releases of the project on the index are probes too: >1.0 and >=1.0.1 differ by 1.0.0.1
    assert same_meaning(">1.0", ">=1.0.1")
    assert not same_meaning(">1.0", ">=1.0.1", [Version("1.0.0.1")])


# --------------------------------------------------------------------------- verify on a lazy index


def test_verify_reads_every_release_by_ranges_through_the_cli(capsys):
    rec = all_recorded()
    with FakeIndex(rec, mode="lazy") as idx:
        code, out, err = run(capsys, "matrices", "verify", "--index-url", idx.url, "--format", "json")
        wheels = len(idx._wheels)
        served = idx.bytes_served
        total = sum(len(w) for w in idx._wheels.values())
    data = json.loads(out)
    assert code == 0, out + err
    assert data["disagreements"] == []
    assert not [m for m in data["missing"] if m["why"] != "not on index"], data["missing"]
    assert data["releases_read"] == data["range_reads"]["wheels"] == wheels > 70
    assert data["compared"] > 300
    # a few kB per wheel, never the wheels
    assert served / wheels < 3 * LW.TAIL_BYTES + 4096 and served < total / 5


def test_verify_on_a_lazy_index_reports_a_tampered_pin(capsys):
    rec = all_recorded()
    wheel = "torch-2.1.1-cp310-cp310-manylinux1_x86_64.whl"
    assert "nvidia-cudnn-cu12 (==8.9.2.26)" in rec[wheel]
    rec[wheel] = rec[wheel].replace("nvidia-cudnn-cu12 (==8.9.2.26)", "nvidia-cudnn-cu12 (==8.9.7.29)")
    with FakeIndex(rec, mode="lazy") as idx:
        code, out, err = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "pytorch")
    assert code == 1
    assert "torch 2.1.1: cudnn (variant cu121): table says 8.9.2.26, index says 8.9.7.29" in out
    assert "(METADATA read with HTTP range requests)" in out
    assert "wheels without a metadata file:" in out


def test_verify_stops_at_the_total_timeout(capsys):
    rec = {k: v for k, v in all_recorded().items() if k.startswith("jax-0.")}
    with FakeIndex(rec, mode="lazy-slow", delay=3.0) as idx:
        code, out, err = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "jax",
                             "--total-timeout", "1", "--workers", "2", "--format", "json")
    data = json.loads(out)
    assert code == 2  # nothing could be read in time: not a success
    assert any("total timeout" in m["why"] or "ran out" in m["why"] for m in data["missing"]), data["missing"]


def test_verify_joins_its_workers_within_the_total_timeout(capsys):
    # The server holds every wheel answer far past the budget: the readers must be cut at the deadline and joined,
    # not left running after the command returns.
    rec = {k: v for k, v in all_recorded().items() if k.startswith("jax-0.")}
    before = set(threading.enumerate())
    with FakeIndex(rec, mode="lazy-slow", delay=8.0) as idx:
        start = time.monotonic()
        code, out, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "jax",
                           "--total-timeout", "1", "--workers", "2", "--format", "json")
        took = time.monotonic() - start
        ours = [t.name for t in threading.enumerate() if t not in before and t.name.startswith("envdoctor-")]
    assert code == 2, out
    assert ours == []
    assert took < 6, took  # the budget (1 s) and the index pages, never the server's 8 s per wheel


def test_verify_keeps_to_the_concurrency_limit(capsys):
    rec = {k: v for k, v in all_recorded().items() if k.startswith("jax-0.")}
    with FakeIndex(rec, mode="lazy-slow", delay=0.2) as idx:
        code, out, _ = run(capsys, "matrices", "verify", "--index-url", idx.url, "--table", "jax", "--workers", "2")
        most = idx.max_parallel
    assert "metadata files read" in out
    assert 1 <= most <= 2


def test_verify_library_call_counts_range_reads():
    m = load_matrices()
    rec = {k: v for k, v in all_recorded().items() if k.startswith(("jax-0.", "jax_cuda"))}
    with FakeIndex(rec, mode="lazy") as idx:
        result = verify(m, I.IndexClient([idx.url], timeout=5), ("jax",), workers=4, total_timeout=120)
    assert result.disagreements == [], [d.line() for d in result.disagreements]
    assert result.range_reads["wheels"] == result.releases_read > 20
