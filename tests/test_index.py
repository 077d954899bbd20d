"""The package-index client: pip configuration, the simple API (JSON + HTML), PEP 658 metadata, failures.

Everything runs against a local HTTP server on 127.0.0.1 or a file:// index in tmp_path; never the network.
"""
import os
import shutil
import zipfile
from pathlib import Path

import pytest
from packaging.version import Version

from envdoctor.knowledge import index as I
from tests.index_server import FIX, FakeIndex, all_recorded, closed_port_url, recorded_metadata


@pytest.fixture(autouse=True)
def _fast_retries(monkeypatch):
    monkeypatch.setattr(I, "BACKOFF", 0.0)


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# --------------------------------------------------------------------------- pip configuration


@pytest.fixture
def fake_home(tmp_path):
    """An environment whose pip config files all live under tmp_path (never this machine's /etc or ~)."""
    etc = tmp_path / "etc"
    env = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_DIRS": str(tmp_path / "xdg")}
    return env, str(etc)


def test_config_file_order_and_override(tmp_path, fake_home):
    env, etc = fake_home
    _write(tmp_path / "xdg" / "pip" / "pip.conf", "[global]\nindex-url = file:///xdg-global\n")
    _write(Path(etc) / "pip.conf", "[global]\nindex-url = file:///etc-global\nextra-index-url = file:///etc-extra\n")
    cfg = I.configured_indexes(env=env, etc=etc)
    assert cfg.urls == ["file:///etc-global", "file:///etc-extra"]  # /etc/pip.conf is read after /etc/xdg
    assert cfg.origins["file:///etc-global"].endswith("pip.conf [global]")

    # user files override global ones; the XDG user file overrides the legacy ~/.pip one
    _write(tmp_path / "home" / ".pip" / "pip.conf", "[global]\nindex-url = file:///legacy-user\n")
    assert I.configured_indexes(env=env, etc=etc).urls[0] == "file:///legacy-user"
    _write(tmp_path / "home" / ".config" / "pip" / "pip.conf",
           "[global]\nindex_url = file:///user-global\n[install]\nindex-url = file:///user-install\n")
    assert I.configured_indexes(env=env, etc=etc).urls[0] == "file:///user-install"  # [install] beats [global]

    # the site (virtualenv) file overrides user files
    venv = tmp_path / "venv"
    _write(venv / "pip.conf", "[global]\nindex-url = file:///site\n")
    assert I.configured_indexes(env=dict(env, VIRTUAL_ENV=str(venv)), etc=etc).urls[0] == "file:///site"

    # environment variables beat every file; PIP_EXTRA_INDEX_URL is whitespace-separated
    env2 = dict(env, PIP_INDEX_URL="file:///from-env", PIP_EXTRA_INDEX_URL="file:///e1  file:///e2")
    cfg = I.configured_indexes(env=env2, etc=etc)
    assert cfg.urls == ["file:///from-env", "file:///e1", "file:///e2"]
    assert cfg.origins["file:///from-env"] == "PIP_INDEX_URL"


def test_pip_config_file_variable(tmp_path, fake_home):
    env, etc = fake_home
    _write(tmp_path / "home" / ".config" / "pip" / "pip.conf", "[global]\nindex-url = file:///user\n")
    own = _write(tmp_path / "own.conf", "[global]\nextra-index-url = file:///own-extra\n")
    # an existing PIP_CONFIG_FILE: read (lowest priority), and the user files are skipped, as pip does
    cfg = I.configured_indexes(env=dict(env, PIP_CONFIG_FILE=str(own)), etc=etc)
    assert "file:///user" not in cfg.urls and "file:///own-extra" in cfg.urls
    # PIP_CONFIG_FILE=/dev/null disables every file
    files = I.pip_config_files(dict(env, PIP_CONFIG_FILE=os.devnull), etc=etc)
    assert files == []


def test_malformed_config_is_skipped(tmp_path, fake_home):
    env, etc = fake_home
    _write(Path(etc) / "pip.conf", "this is not [an ini file\n")
    _write(tmp_path / "home" / ".config" / "pip" / "pip.conf", "[global]\nindex-url = file:///ok\n")
    assert I.configured_indexes(env=env, etc=etc).urls == ["file:///ok"]


def test_no_index_configured(monkeypatch, fake_home):
    env, etc = fake_home
    monkeypatch.setattr(I, "pip_default_index", lambda: None)
    with pytest.raises(I.NoIndexConfigured) as exc:
        I.configured_indexes(env=env, etc=etc)
    assert str(exc.value) == "no package index configured; pass --index-url or set PIP_INDEX_URL"
    assert exc.value.exit_code == 2


def test_no_index_setting_and_explicit_url(tmp_path, fake_home, monkeypatch):
    env, etc = fake_home
    _write(Path(etc) / "pip.conf", "[global]\nno-index = true\nindex-url = file:///x\n")
    with pytest.raises(I.NoIndexConfigured) as exc:
        I.configured_indexes(env=env, etc=etc)
    assert "no-index" in str(exc.value)
    # an explicit --index-url replaces everything pip's configuration says
    cfg = I.configured_indexes(explicit=["file:///explicit"], env=env, etc=etc)
    assert cfg.urls == ["file:///explicit"] and cfg.origins["file:///explicit"] == "--index-url"


def test_default_index_is_asked_from_pip(monkeypatch, tmp_path, fake_home):
    env, etc = fake_home
    _write(Path(etc) / "pip.conf", "[global]\nextra-index-url = file:///extra\n")
    monkeypatch.setattr(I, "pip_default_index", lambda: "file:///what-pip-says")
    cfg = I.configured_indexes(env=env, etc=etc)
    assert cfg.urls == ["file:///what-pip-says", "file:///extra"]
    assert cfg.origins["file:///what-pip-says"] == "pip's default index"


def test_real_pip_default_lookup_does_not_raise():
    value = I.pip_default_index()
    assert value is None or value.startswith(("http://", "https://", "file://"))


# --------------------------------------------------------------------------- pages


def test_html_page_of_a_real_file_index():
    text = (FIX / "pages" / "file_index_torch.html").read_text()
    page = "file:///opt/pypi-more/simple/torch/"
    files = I.parse_html_page(text, page, "file:///opt/pypi-more/simple/")
    assert len(files) == 1
    f = files[0]
    assert f.filename == "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert f.url == "file:///opt/pypi-more/files/torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    assert f.version == Version("2.14.1") and f.is_manylinux_x86_64 and f.cpython_versions() == [(3, 11)]
    assert f.hashes["sha256"].startswith("305a61f6") and f.metadata is None
    text = (FIX / "pages" / "file_index_torchvision.html").read_text()
    files = I.parse_html_page(text, "file:///opt/pypi-more/simple/torchvision/", "file:///opt/pypi-more/simple/")
    assert sorted(str(f.version) for f in files) == ["0.28.0", "0.29.0", "0.29.1"]
    assert all(f.name == "torchvision" and f.url.startswith("file:///opt/pypi-more/files/") for f in files)


def test_html_data_attributes():
    html = ('<a href="/f/a-1.0-py3-none-any.whl#sha256=ab" data-requires-python="&gt;=3.9,&lt;4" '
            'data-core-metadata="sha256=cd">a</a>'
            '<a href="/f/a-1.1-py3-none-any.whl" data-dist-info-metadata data-yanked="">a</a>'
            '<a href="/f/a-1.2.tar.gz">sdist</a>')
    files = I.parse_html_page(html, "http://127.0.0.1:1/simple/a/", "http://127.0.0.1:1/simple/")
    assert [f.filename for f in files] == ["a-1.0-py3-none-any.whl", "a-1.1-py3-none-any.whl"]
    assert files[0].requires_python == ">=3.9,<4" and files[0].metadata == {"sha256": "cd"}
    assert files[0].url == "http://127.0.0.1:1/f/a-1.0-py3-none-any.whl"
    assert files[1].metadata == {} and files[1].yanked


def test_json_page_and_garbage():
    idx = FakeIndex(recorded_metadata(FIX / "recorded" / "pypi_torch_requires_dist.txt"))
    ctype, body = idx.page("torch", as_json=True)
    assert ctype == "application/vnd.pypi.simple.v1+json"
    files = I.parse_json_page(body.decode(), "http://127.0.0.1:1/simple/torch/", "http://127.0.0.1:1/simple/")
    assert len(files) == len(idx.files)
    assert all(f.metadata and len(f.metadata["sha256"]) == 64 for f in files)
    assert files[0].url.startswith("http://127.0.0.1:1/files/")
    with pytest.raises(ValueError):
        I.parse_json_page("{garbage", "http://x/", "http://x/")
    with pytest.raises(ValueError):
        I.parse_json_page('{"meta": {}}', "http://x/", "http://x/")


# --------------------------------------------------------------------------- metadata and requirements


def test_real_torch_metadata_pins():
    text = (FIX / "metadata" / "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl.metadata").read_text()
    meta = I.parse_metadata(text, "x", "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert meta.name == "torch" and meta.version == "2.14.1" and meta.requires_python == ">=3.10"
    reqs = I.requirements(meta, python="3.11")
    assert str(reqs["nvidia-cudnn-cu13"].specifier) == "==9.24.0.43"
    assert I.exact_pin(str(reqs["cuda-toolkit"].specifier)) == "13.0.3"
    assert "cudart" in reqs["cuda-toolkit"].extras
    assert "optree" not in reqs  # only in an extra
    # triton's marker says python_version < "3.15"
    assert "triton" in reqs and "triton" not in I.requirements(meta, python="3.15")


def test_extras_and_old_style_requirements():
    tf = I.parse_metadata((FIX / "metadata" / "tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl.metadata")
                          .read_text(), "x", "w")
    pins = I.requirements(tf, extra="and-cuda", base=False)
    assert str(pins["nvidia-cudnn-cu12"].specifier) == "<10.0,>=9.3.0.75" and "numpy" not in pins
    rec = all_recorded()
    old = I.parse_metadata(rec["torch-1.13.0-cp310-cp310-manylinux1_x86_64.whl"], "x", "w")
    assert str(I.requirements(old)["nvidia-cudnn-cu11"].specifier) == "==8.5.0.96"  # "(==8.5.0.96)" form
    plugin = I.parse_metadata(rec["jax_cuda12_plugin-0.4.30-cp312-cp312-manylinux2014_x86_64.whl"], "x", "w")
    with_cuda = I.requirements(plugin, extra="with-cuda", base=False)  # recorded as extra == 'with_cuda'
    assert str(with_cuda["nvidia-cudnn-cu12"].specifier) == "<10.0,>=9.0"
    assert "jax-cuda12-pjrt" in I.requirements(plugin) and "jax-cuda12-pjrt" not in with_cuda
    assert I.parse_metadata("not metadata at all", "x", "w") is None


def test_spec_helpers():
    assert I.exact_pin("==13.0.3") == "13.0.3" and I.exact_pin("<=0.4.30,>=0.4.30") == "0.4.30"
    assert I.exact_pin(">=9.1,<10") is None and I.exact_pin("==13.1.1.3.*") is None
    from envdoctor.facts.versions import lower_bound
    assert str(lower_bound("<10.0,>=9.10.2.21")) == "9.10.2.21" and lower_bound("<3") is None
    assert I.same_spec("<10.0,>=9.1", ">=9.1,<10.0") and I.same_spec("(==2.0.0)", "==2.0.0")
    assert not I.same_spec("==8.9.2.26", "==8.9.7.29") and not I.same_spec("==1", None)


def test_pick_wheel_by_tags():
    names = [
        "torch-2.10.0-3-cp310-cp310-manylinux_2_28_x86_64.whl",
        "torch-2.10.0-cp310-cp310-manylinux_2_28_x86_64.whl",
        "torch-2.10.0-cp310-cp310-manylinux_2_28_aarch64.whl",
        "torch-2.10.0-cp310-none-macosx_11_0_arm64.whl",
        "torch-2.10.0-cp310-cp310-win_amd64.whl",
        "torch-2.10.0+cpu-cp39-cp39-manylinux_2_28_x86_64.whl",
        "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl",
    ]
    files = [I._make_file(n, "http://x/" + n, "http://x/", None, {}, False, None) for n in names]
    best = I.pick_wheel(files, "2.10.0")
    assert best.filename == "torch-2.10.0-3-cp310-cp310-manylinux_2_28_x86_64.whl"  # highest build tag
    assert I.pick_wheel(files, "2.10.0+cpu").filename.startswith("torch-2.10.0+cpu")
    assert I.pick_wheel(files, "2.9.0") is None
    only_mac = [f for f in files if "macosx" in f.filename]
    assert I.pick_wheel(only_mac, "2.10.0") is None


# --------------------------------------------------------------------------- the client over HTTP


@pytest.mark.parametrize("mode", ["json", "html"])
def test_client_reads_metadata_without_downloading(mode):
    rec = all_recorded()
    with FakeIndex(rec, mode=mode) as idx:
        c = I.IndexClient([idx.url], timeout=5)
        assert Version("2.15.0") in c.versions("torch") and c.versions("no-such-project") == []
        dist, meta = c.release_metadata("torch", "2.1.2")
        assert dist.filename == "torch-2.1.2-cp310-cp310-manylinux1_x86_64.whl"
        assert meta.source == idx.url.replace("/simple/", "/files/") + dist.filename + ".metadata"
        assert str(I.requirements(meta)["nvidia-cudnn-cu12"].specifier) == "==8.9.2.26"
        assert idx.wheel_downloads() == []
        page_requests = [a for p, a in idx.requests if p.startswith("/simple/")]
        assert all("application/vnd.pypi.simple.v1+json" in a for a in page_requests)


def test_client_without_metadata_files_does_not_download():
    with FakeIndex(all_recorded(), mode="nometa") as idx:
        c = I.IndexClient([idx.url], timeout=5)
        dist, meta = c.release_metadata("torch", "2.1.2")
        assert dist is not None and meta is None and idx.whole_wheel_requests() == []


def test_metadata_hash_mismatch():
    rec = all_recorded()
    with FakeIndex(rec) as idx:
        c = I.IndexClient([idx.url], timeout=5)
        dist = c.pick_wheel("torch", "2.1.2")
        idx.files[dist.filename] = idx.files[dist.filename].replace("8.9.2.26", "8.9.7.29")  # changed after listing
        with pytest.raises(I.IndexUnavailable) as exc:
            c.metadata(dist)
        assert "sha256" in str(exc.value)


@pytest.mark.parametrize("mode, needle, requests", [
    ("500", "HTTP 500", 3),  # 1 try + 2 retries
    ("garbage", "not valid PEP 691 JSON", 1),
])
def test_server_errors(mode, needle, requests):
    with FakeIndex(all_recorded(), mode=mode) as idx:
        c = I.IndexClient([idx.url], timeout=5)
        with pytest.raises(I.IndexUnavailable) as exc:
            c.project_files("torch")
        assert needle in str(exc.value) and "\n" not in str(exc.value)
        assert len(idx.requests) == requests


def test_timeout_and_refused():
    with FakeIndex(all_recorded(), mode="slow", delay=2.0) as idx:
        c = I.IndexClient([idx.url], timeout=0.3, retries=1)
        with pytest.raises(I.IndexUnavailable) as exc:
            c.project_files("torch")
        assert "timed out" in str(exc.value) and "tried 2 times" in str(exc.value)
    c = I.IndexClient([closed_port_url()], timeout=2)
    with pytest.raises(I.IndexUnavailable) as exc:
        c.project_files("torch")
    assert "cannot reach package index" in str(exc.value) and "\n" not in str(exc.value)


def test_unsupported_scheme():
    with pytest.raises(I.IndexUnavailable):
        I.IndexClient(["ftp://127.0.0.1/simple/"])


# --------------------------------------------------------------------------- file:// indexes


def _file_index(tmp_path: Path, with_sidecar: bool) -> str:
    """A file:// index shaped like this machine's (simple/<project>/index.html + files/*.whl)."""
    root = tmp_path / "pypi"
    page = root / "simple" / "torch" / "index.html"
    page.parent.mkdir(parents=True)
    shutil.copy(FIX / "pages" / "file_index_torch.html", page)
    wheel = root / "files" / "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    wheel.parent.mkdir()
    meta = (FIX / "metadata" / (wheel.name + ".metadata")).read_text()
    with zipfile.ZipFile(wheel, "w") as zf:
        zf.writestr("torch/__init__.py", "")
        zf.writestr("torch-2.14.1.dist-info/METADATA", meta)
    if with_sidecar:  # a PEP 658 file next to the wheel, announced on the page
        (root / "files" / (wheel.name + ".metadata")).write_text(meta)
        page.write_text(page.read_text().replace('">torch', '" data-core-metadata="true">torch'))
    return (root / "simple").as_uri()


@pytest.mark.parametrize("with_sidecar", [False, True])
def test_file_index(tmp_path, with_sidecar):
    url = _file_index(tmp_path, with_sidecar)
    c = I.IndexClient([url])
    assert c.versions("torch") == [Version("2.14.1")] and c.project_files("jax") == []
    dist, meta = c.release_metadata("torch", "2.14.1")
    assert meta.version == "2.14.1"
    assert str(I.requirements(meta)["nvidia-cudnn-cu13"].specifier) == "==9.24.0.43"
    if with_sidecar:
        assert meta.source.endswith(".whl.metadata")
    else:  # the page names no metadata file, so the member inside the local wheel is read
        assert meta.source.endswith("(METADATA inside the wheel)")


@pytest.mark.skipif(not Path("/opt/pypi-more/simple/torch/index.html").exists(),
                    reason="this machine's file:// extra index is not present")
def test_this_machines_file_index():
    c = I.IndexClient(["file:///opt/pypi-more/simple"])
    versions = c.versions("torch")
    assert versions
    dist, meta = c.release_metadata("torch", str(versions[-1]))
    assert meta is not None and meta.name == "torch"
    assert any(k.startswith("nvidia-cudnn") for k in I.requirements(meta, python=I.python_for(dist)))
