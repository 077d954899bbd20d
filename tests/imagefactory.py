"""Real container images built in a temporary folder: an OCI image layout (the OCI image spec's blobs/, index.json,
oci-layout), the same as a tarball, and a docker-save tarball (manifest.json with Config and Layers). Each layer is a
real tar stream (gzip, zstd or plain) made with tarfile, so the reader meets what `docker save` / `skopeo copy
oci:` write."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

# a layer: path -> bytes (a file), ("link", target) a symlink, ("hard", target) a hard link, ("dir",) a folder,
# None a whiteout of that path, "opaque" the opaque marker of that folder
Entry = Union[bytes, Tuple[str, ...], None, str]


def layer_tar(entries: Dict[str, Entry], raw_names: Optional[List[Tuple[str, bytes]]] = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path, what in entries.items():
            head, base = os.path.split(path.strip("/"))
            if what is None:
                ti = tarfile.TarInfo(os.path.join(head, ".wh." + base))
                tar.addfile(ti, io.BytesIO(b""))
            elif what == "opaque":
                tar.addfile(tarfile.TarInfo(os.path.join(path.strip("/"), ".wh..wh..opq")), io.BytesIO(b""))
            elif isinstance(what, tuple) and what[0] == "dir":
                ti = tarfile.TarInfo(path.strip("/"))
                ti.type, ti.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(ti)
            elif isinstance(what, tuple):
                ti = tarfile.TarInfo(path.strip("/"))
                ti.type = tarfile.SYMTYPE if what[0] == "link" else tarfile.LNKTYPE
                ti.linkname = what[1]
                tar.addfile(ti)
            else:
                assert isinstance(what, bytes)
                ti = tarfile.TarInfo(path.strip("/"))
                ti.size, ti.mode = len(what), 0o755
                tar.addfile(ti, io.BytesIO(what))
        for name, data in raw_names or []:  # names tarfile would write as given (hostile ones)
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tar.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def compress(data: bytes, how: str) -> bytes:
    if how == "gzip":
        return gzip.compress(data, mtime=0)
    if how == "zstd":
        return subprocess.run(["zstd", "-q", "-c"], input=data, capture_output=True, check=True).stdout
    return data


def _digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def config_json(env: Dict[str, str]) -> bytes:
    return json.dumps({"architecture": "amd64", "os": "linux",
                       "config": {"Env": [f"{k}={v}" for k, v in env.items()]},
                       "rootfs": {"type": "layers", "diff_ids": []}}).encode()


def oci_layout(dest: Path, layers: List[bytes], env: Dict[str, str], how: str = "gzip", tag: str = "test:1") -> Path:
    blobs = dest / "blobs" / "sha256"
    blobs.mkdir(parents=True)

    def put(data: bytes) -> str:
        d = _digest(data)
        (blobs / d.split(":")[1]).write_bytes(data)
        return d

    cfg = config_json(env)
    media = {"gzip": "application/vnd.oci.image.layer.v1.tar+gzip", "zstd": "application/vnd.oci.image.layer.v1.tar+zstd",
             "none": "application/vnd.oci.image.layer.v1.tar"}[how]
    descs = []
    for layer in layers:
        blob = compress(layer, how)
        descs.append({"mediaType": media, "digest": put(blob), "size": len(blob)})
    manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                           "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": put(cfg),
                                      "size": len(cfg)}, "layers": descs}).encode()
    md = put(manifest)
    (dest / "oci-layout").write_text('{"imageLayoutVersion": "1.0.0"}')
    (dest / "index.json").write_text(json.dumps({"schemaVersion": 2, "manifests": [
        {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": md, "size": len(manifest),
         "annotations": {"org.opencontainers.image.ref.name": tag},
         "platform": {"architecture": "amd64", "os": "linux"}}]}))
    return dest


def tar_folder(folder: Path, dest: Path) -> Path:
    with tarfile.open(dest, "w") as tar:
        for p in sorted(folder.rglob("*")):
            tar.add(p, arcname=str(p.relative_to(folder)), recursive=False)
    return dest


def docker_save(dest: Path, layers: List[bytes], env: Dict[str, str], tag: str = "test:1") -> Path:
    """The pre-OCI docker-save layout: <id>/layer.tar, <config>.json, manifest.json (Docker before 25)."""
    work = dest.with_suffix(".d")
    work.mkdir()
    cfg = config_json(env)
    cfg_name = hashlib.sha256(cfg).hexdigest() + ".json"
    (work / cfg_name).write_bytes(cfg)
    names = []
    for i, layer in enumerate(layers):
        d = work / f"{i:02d}{hashlib.sha256(layer).hexdigest()[:20]}"
        d.mkdir()
        (d / "layer.tar").write_bytes(layer)
        names.append(f"{d.name}/layer.tar")
    (work / "manifest.json").write_text(json.dumps([{"Config": cfg_name, "RepoTags": [tag], "Layers": names}]))
    tar_folder(work, dest)
    shutil.rmtree(work)
    return dest
