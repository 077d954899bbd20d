"""Bad binaries are recorded as unreadable with the reason: no traceback, no hang, no full read."""
from __future__ import annotations

import os
import resource
import shutil
import struct
from pathlib import Path

import pytest

from envdoctor.binaries.elf import open_elf
from envdoctor.binaries.scan import scan_file
from envdoctor.probes.base import ProbeContext
from envdoctor.probes import binaries as binaries_probe
from envdoctor.snapshot import Snapshot
from tests.binfakes import FIX, fake_venv

GOOD = FIX / "sm80.so"
TEN_GB = 10 * 1024 ** 3


def _copy(tmp_path: Path, name: str = "bad.so") -> Path:
    dest = tmp_path / name
    shutil.copyfile(GOOD, dest)
    return dest


def _fatbin_offset(path: Path):
    with open_elf(str(path)) as e:
        s = e.sections[".nv_fatbin"]
        return s.offset, s.size


def _faults() -> int:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_minflt + ru.ru_majflt


def test_not_elf(tmp_path):
    p = tmp_path / "libtext.so"
    p.write_text("/* GNU ld script */\nGROUP ( libc.so.6 )\n")
    assert scan_file(str(p)).unreadable == "not an ELF file"


def test_empty(tmp_path):
    p = tmp_path / "empty.so"
    p.write_bytes(b"")
    assert scan_file(str(p)).unreadable == "an empty file"


@pytest.mark.parametrize("keep", [40, 200, 4000])
def test_truncated(tmp_path, keep):
    p = _copy(tmp_path)
    with open(p, "r+b") as fh:
        fh.truncate(keep)
    reason = scan_file(str(p)).unreadable
    assert reason.startswith("truncated") or reason.startswith("a corrupt ELF"), reason


def test_container_claims_more_than_the_section(tmp_path):
    p = _copy(tmp_path)
    off, size = _fatbin_offset(p)
    with open(p, "r+b") as fh:
        fh.seek(off + 8)
        fh.write(struct.pack("<Q", 1 << 40))  # the first container's size
    res = scan_file(str(p))
    assert res.cuda is True
    assert "claims 1099511627776 bytes" in res.unreadable and f"{size - 16} remain" in res.unreadable


def test_entry_claims_more_than_its_container(tmp_path):
    p = _copy(tmp_path)
    off, _ = _fatbin_offset(p)
    with open(p, "r+b") as fh:
        fh.seek(off + 16 + 8)  # the first entry's payload size
        fh.write(struct.pack("<Q", 123456789))
    res = scan_file(str(p))
    assert "claims a 123456789-byte payload" in res.unreadable


def test_entry_header_too_small(tmp_path):
    p = _copy(tmp_path)
    off, _ = _fatbin_offset(p)
    with open(p, "r+b") as fh:
        fh.seek(off + 16 + 4)
        fh.write(struct.pack("<I", 8))
    assert "header size 8 < 64" in scan_file(str(p)).unreadable


def test_ten_gb_sparse_file_of_zeros(tmp_path):
    p = tmp_path / "huge.so"
    with open(p, "wb") as fh:
        fh.truncate(TEN_GB)
    before = _faults()
    assert scan_file(str(p)).unreadable == "not an ELF file"
    assert _faults() - before < 2000  # a full read would fault in 2.6 million pages


def test_ten_gb_sparse_elf_whose_fatbin_spans_it_is_not_read_whole(tmp_path):
    """A real .so grown to 10 GB (sparse) whose .nv_fatbin section and first container claim all of it:
    the reader walks entry headers, hits the zeros after the real entries and stops with a reason."""
    p = _copy(tmp_path, "huge_fatbin.so")
    from elftools.elf.elffile import ELFFile

    off, _ = _fatbin_offset(p)
    with open(p, "rb") as fh:
        ef = ELFFile(fh)
        ef_shoff, shentsize = ef.header["e_shoff"], ef.header["e_shentsize"]
        index = [i for i, s in enumerate(ef.iter_sections()) if s.name == ".nv_fatbin"][0]
    with open(p, "r+b") as fh:
        fh.truncate(TEN_GB)
        fh.seek(ef_shoff + index * shentsize + 32)  # Elf64_Shdr.sh_size
        fh.write(struct.pack("<Q", TEN_GB - off))
        fh.seek(off + 8)
        fh.write(struct.pack("<Q", TEN_GB - off - 16))
    before = _faults()
    res = scan_file(str(p))
    assert res.cuda is True and res.sass == ["sm_80"]
    assert "header size 0 < 64" in res.unreadable
    assert _faults() - before < 5000


def test_symlink_loop(tmp_path):
    a, b = tmp_path / "liba.so", tmp_path / "libb.so"
    os.symlink(b, a)
    os.symlink(a, b)
    assert scan_file(str(a)).unreadable == "a symbolic link loop"


def test_fifo_and_directory_are_not_opened(tmp_path):
    fifo = tmp_path / "pipe.so"
    os.mkfifo(fifo)
    assert scan_file(str(fifo)).unreadable == "not a regular file"  # opening it would block
    d = tmp_path / "dir.so"
    d.mkdir()
    assert scan_file(str(d)).unreadable == "not a regular file"


def test_probe_records_every_bad_file_and_goes_on(tmp_path):
    venv = tmp_path / "venv"
    sp = fake_venv(venv, "badpkg", "1.0", {"badpkg/good.so": GOOD, "badpkg/text.so": None,
                                           "badpkg/loop.so": None, "badpkg/pipe.so": None})
    (sp / "badpkg" / "text.so").write_text("not a binary\n")
    os.symlink(sp / "badpkg" / "loop.so", sp / "badpkg" / "loop2.so")
    os.symlink(sp / "badpkg" / "loop2.so", sp / "badpkg" / "loop.so")
    os.mkfifo(sp / "badpkg" / "pipe.so")
    snap = Snapshot()
    snap.python.sys_path = [str(sp)]
    ctx = ProbeContext(env={"ENVDOCTOR_CACHE_DIR": str(tmp_path / "cache"), "PATH": os.environ.get("PATH", "")})
    binaries_probe.probe(ctx, snap)
    bn = snap.binaries
    reasons = {Path(u.path).name: (u.package, u.reason) for u in bn.unreadable}
    assert reasons == {"text.so": ("badpkg", "not an ELF file"), "loop.so": ("badpkg", "a symbolic link loop"),
                       "pipe.so": ("badpkg", "not a regular file")}
    assert [(Path(b.path).name, b.package, b.sass) for b in bn.binaries] == [("good.so", "badpkg", ["sm_80"])]


def test_a_stat_given_to_the_cache_answers_as_its_own_stat(tmp_path):
    """BinaryCache.scan(path, st) takes the probe's os.stat of the file instead of stating it again:
    the same answer and the same cache key as scan(path) for a CUDA binary, a plain file, a directory, a FIFO,
    a link to a file and a dangling link."""
    from envdoctor.binaries.elf import file_key
    from envdoctor.binaries.scan import BinaryCache

    cuda = _copy(tmp_path, "cuda.so")
    plain = tmp_path / "plain.so"
    plain.write_bytes(b"\x7fELF not really")
    folder = tmp_path / "dir.so"
    folder.mkdir()
    fifo = tmp_path / "fifo.so"
    os.mkfifo(fifo)
    link = tmp_path / "link.so"
    link.symlink_to(cuda)
    dangling = tmp_path / "dangling.so"
    dangling.symlink_to(tmp_path / "gone.so")
    for path in (cuda, plain, folder, fifo, link, dangling):
        try:
            st = os.stat(path)
        except OSError:
            st = None
        given, own = BinaryCache(None), BinaryCache(None)
        assert given.scan(str(path), st) == own.scan(str(path)), path
        assert given.data == own.data, path
        if st is not None and path != folder and path != fifo:
            assert file_key(str(path), st) == file_key(str(path))
    assert BinaryCache(None).scan(str(cuda), os.stat(cuda)).cuda
