"""The image reader on real image files built here (tests/imagefactory.py): OCI layouts, OCI tarballs and
docker-save tarballs, gzip / zstd / plain layers, whiteouts and opaque folders, links, and hostile members."""
from __future__ import annotations

import json
import shutil

import pytest

from envdoctor.errors import BadInput
from envdoctor.image.root import ImageRoot
from envdoctor.image.tree import Limits
from tests import imagefactory as F

CUDA_JSON = json.dumps({"cuda": {"name": "CUDA SDK", "version": "12.4.1"},
                        "cuda_cudart": {"name": "CUDA Runtime (cudart)", "version": "12.4.127"}}).encode()
OS_RELEASE = b'NAME="Ubuntu"\nVERSION_ID="22.04"\nID=ubuntu\n'
TORCH_VERSION = b"__version__ = '2.5.1+cu124'\ncuda = '12.4'\ngit_version = 'abc'\n"
SP = "/usr/local/lib/python3.11/site-packages"


def _layers():
    base = F.layer_tar({
        "/etc/os-release": OS_RELEASE,
        "/usr/local/cuda-12.4/version.json": CUDA_JSON,
        "/usr/local/cuda": ("link", "/usr/local/cuda-12.4"),
        "/opt/old/readme.txt": b"gone",
        "/opt/keep/a.txt": b"kept",
        "/var/cache/x/1": b"1",
        "/var/cache/x/2": b"2",
    })
    upper = F.layer_tar({
        "/opt/old": None,                                   # whiteout of a folder of the layer below
        "/var/cache/x": "opaque",                            # everything below in x hidden ...
        "/var/cache/x/3": b"3",                              # ... but what this layer adds stays
        f"{SP}/torch/version.py": TORCH_VERSION,
        f"{SP}/torch-2.5.1+cu124.dist-info/METADATA": b"Metadata-Version: 2.1\nName: torch\nVersion: 2.5.1+cu124\n",
        f"{SP}/torch/lib/libtorch_cuda.so": b"\x7fELF" + b"\0" * 4096,
        "/etc/os-release2": ("hard", "etc/os-release"),
    })
    return [base, upper]


@pytest.mark.parametrize("how", ["gzip", "zstd", "none"])
def test_oci_layout_merged_with_whiteouts(tmp_path, how):
    if how == "zstd" and shutil.which("zstd") is None:
        pytest.skip("no zstd program to write a zstd layer")
    layout = F.oci_layout(tmp_path / "img", _layers(), {"CUDA_VERSION": "12.4.1", "PATH": "/usr/bin"}, how=how)
    try:
        root = ImageRoot.open(str(layout))
    except BadInput as exc:  # zstd without a reader: one line naming the fix
        assert how == "zstd" and "zstandard" in str(exc)
        return
    assert root.read_text("/etc/os-release") == OS_RELEASE.decode()
    assert root.read_text("/usr/local/cuda/version.json") == CUDA_JSON.decode()  # through the symlink
    assert root.realpath("/usr/local/cuda/version.json") == "/usr/local/cuda-12.4/version.json"
    assert not root.exists("/opt/old/readme.txt") and not root.exists("/opt/old")
    assert root.read_text("/opt/keep/a.txt") is None and root.exists("/opt/keep/a.txt")  # not a file probes read
    assert root.listdir("/var/cache/x") == ["3"]
    assert root.read_text(f"{SP}/torch/version.py") == TORCH_VERSION.decode()
    assert root.is_file(f"{SP}/torch/lib/libtorch_cuda.so")
    assert root.glob(f"{SP}/torch-*.dist-info/METADATA") == [f"{SP}/torch-2.5.1+cu124.dist-info/METADATA"]
    assert root.read_text("/etc/os-release2") == OS_RELEASE.decode()  # a hard link to a lower layer's file
    facts = root.facts()
    assert facts["env"] == {"CUDA_VERSION": "12.4.1", "PATH": "/usr/bin"}
    assert facts["tags"] == ["test:1"] and facts["layers"] == 2 and not facts["partial"]
    # nothing of the image is a local path: a probe opening root.path() finds nothing
    assert not root.path("/etc/os-release").exists()


def test_oci_tarball_and_docker_save_read_alike(tmp_path):
    layout = F.oci_layout(tmp_path / "img", _layers(), {"CUDA_VERSION": "12.4.1"})
    oci_tar = F.tar_folder(layout, tmp_path / "img.tar")
    docker = F.docker_save(tmp_path / "docker.tar", _layers(), {"CUDA_VERSION": "12.4.1"})
    seen = []
    for path in (oci_tar, docker):
        root = ImageRoot.open(str(path))
        seen.append((root.listdir("/var/cache/x"), root.read_text("/usr/local/cuda/version.json"),
                     root.exists("/opt/old"), root.image.env))
    assert seen[0] == seen[1]
    assert ImageRoot.open(str(docker)).image.kind == "docker-save"
    assert ImageRoot.open(str(oci_tar)).image.kind == "oci-tarball"


def test_hostile_members_are_skipped_and_links_stay_inside(tmp_path):
    layer = F.layer_tar({"/etc/passwd-link": ("link", "../../../../etc/passwd"),
                         "/abs": ("link", "/etc/os-release"), "/etc/os-release": OS_RELEASE},
                        raw_names=[("../../escape.txt", b"x"), ("usr/../../escape2", b"y")])
    root = ImageRoot.open(str(F.oci_layout(tmp_path / "img", [layer], {})))
    assert root.tree.skipped_count == 2
    assert "leaves the root" in root.tree.skipped[0]
    # a relative link climbing out stops at the image's root: the host's /etc/passwd is never read
    assert root.read_text("/etc/passwd-link") is None and not root.exists("/etc/passwd-link")
    assert root.read_text("/abs") == OS_RELEASE.decode()  # an absolute target means the image's root
    assert not (tmp_path / "escape.txt").exists() and not (tmp_path.parent / "escape.txt").exists()


def test_bounds_make_the_tree_partial_not_complete(tmp_path):
    big = F.layer_tar({f"/data/f{i}": b"z" * 1000 for i in range(50)})
    layout = F.oci_layout(tmp_path / "img", [big, F.layer_tar({"/etc/os-release": OS_RELEASE})], {})
    root = ImageRoot.open(str(layout), limits=Limits(streamed_bytes=20_000))
    assert "bound" in root.tree.partial and root.facts()["partial"]
    assert not root.exists("/etc/os-release")  # the layer after the bound was never read
    root = ImageRoot.open(str(layout), limits=Limits(members=10))
    assert "members" in root.tree.partial


@pytest.mark.parametrize("make, message", [
    (lambda d: d / "nothing-here", "no such file"),
    (lambda d: (d / "junk.tar").write_bytes(b"not a tar at all" * 100) and d / "junk.tar", "not an image tarball"),
    (lambda d: (d / "empty").mkdir() or d / "empty", "neither an OCI image layout"),
])
def test_not_an_image_is_one_line(tmp_path, make, message):
    with pytest.raises(BadInput) as exc:
        ImageRoot.open(str(make(tmp_path)))
    assert message in str(exc.value) and "\n" not in str(exc.value)


def test_a_digest_that_is_a_path_is_refused(tmp_path):
    layout = F.oci_layout(tmp_path / "img", [F.layer_tar({"/a": b"a"})], {})
    index = json.loads((layout / "index.json").read_text())
    index["manifests"][0]["digest"] = "sha256:../../../../etc/passwd"
    (layout / "index.json").write_text(json.dumps(index))
    with pytest.raises(BadInput) as exc:
        ImageRoot.open(str(layout))
    assert "algorithm:hex" in str(exc.value)
