"""Opening a container image as it lies on disk: an OCI image layout folder, or a tarball of one
(`docker save` writes both an OCI layout and its own manifest.json since Docker 25; older ones only manifest.json).

What comes out is the image's config (ENV, the working directory, the user, labels) and its layers in order, each
an opener of the layer's tar stream, decompressed on the fly. Nothing is extracted; every JSON document is read
bounded and parsed with the project's safe JSON reader; blob names come from digests, checked to be plain hex, so a
hostile manifest cannot name a file outside the layout.
"""
from __future__ import annotations

import gzip
import io
import os
import re
import stat
import tarfile
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Dict, List, Optional, Tuple

from envdoctor.errors import BadInput
from envdoctor.infile import loads_json, why

MAX_JSON = 4 * 1024 * 1024       # an index, a manifest or a config: real ones are a few KiB
MAX_LAYERS = 256                 # Docker's own limit is 127 layers
_DIGEST = re.compile(r"^(sha256|sha512):([0-9a-f]{64}|[0-9a-f]{128})$")
_GZIP, _ZSTD = b"\x1f\x8b", b"\x28\xb5\x2f\xfd"


@dataclass(frozen=True)
class Layer:
    """One layer: its digest (or its name in a docker-save tarball) and how to open its tar stream."""
    name: str
    open: Callable[[], IO[bytes]]


@dataclass
class Image:
    source: str
    kind: str                                  # "oci-layout" | "oci-tarball" | "docker-save"
    config: Dict[str, Any] = field(default_factory=dict)
    layers: List[Layer] = field(default_factory=list)
    tags: List[str] = field(default_factory=list)

    @property
    def env(self) -> Dict[str, str]:
        """The config's ENV as a mapping (the last of a repeated name wins, as the runtime does)."""
        out: Dict[str, str] = {}
        for item in (self.config.get("config") or {}).get("Env") or []:
            if isinstance(item, str) and "=" in item:
                k, _, v = item.partition("=")
                out[k] = v
        return out

    @property
    def platform(self) -> str:
        arch = self.config.get("architecture")
        os_ = self.config.get("os")
        return f"{os_}/{arch}" if isinstance(arch, str) and isinstance(os_, str) else ""


class _Source:
    """Named files of a layout folder or of a tarball, read bounded."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._tar: Optional[tarfile.TarFile] = None
        self._members: Dict[str, tarfile.TarInfo] = {}
        try:
            st = os.stat(path)
        except OSError as exc:
            raise BadInput(f"{path}: {why(exc)}") from None
        if stat.S_ISDIR(st.st_mode):
            self.folder = True
        elif stat.S_ISREG(st.st_mode):
            self.folder = False
            try:
                # the outer tarball is plain tar (docker save, skopeo's oci-archive); seekable, so members are
                # opened where they lie instead of streamed
                self._tar = tarfile.open(path, mode="r:")
            except (tarfile.TarError, OSError) as exc:
                raise BadInput(f"{path}: not an image tarball or an OCI layout folder ({_short(exc)})") from None
            count = 0
            for m in self._tar:
                count += 1
                if count > 1_000_000:
                    raise BadInput(f"{path}: more than 1,000,000 members in the image tarball; refused")
                name = _clean(m.name)
                if name is not None and (m.isfile() or m.issym() or m.islnk()):
                    self._members[name] = m
        else:
            raise BadInput(f"{path}: not an image tarball or an OCI layout folder")

    def has(self, name: str) -> bool:
        if self.folder:
            return os.path.isfile(os.path.join(self.path, name))
        return name in self._members

    def open(self, name: str) -> IO[bytes]:
        if self.folder:
            full = os.path.join(self.path, name)
            real = os.path.realpath(full)
            if not real.startswith(os.path.realpath(self.path) + os.sep):
                raise BadInput(f"{self.path}: {name} leads out of the image folder; refused")
            try:
                return open(real, "rb")
            except OSError as exc:
                raise BadInput(f"{self.path}: {name}: {why(exc)}") from None
        member = self._member(name)
        assert self._tar is not None
        f = self._tar.extractfile(member)
        if f is None:
            raise BadInput(f"{self.path}: {name} is not a file in the tarball")
        return f

    def _member(self, name: str, depth: int = 0) -> tarfile.TarInfo:
        m = self._members.get(name)
        if m is None:
            raise BadInput(f"{self.path}: {_quote(name)} is missing from the image tarball")
        if (m.issym() or m.islnk()) and depth < 8:  # docker save links repeated layers to one copy
            target = m.linkname if m.islnk() else os.path.normpath(os.path.join(os.path.dirname(name), m.linkname))
            return self._member(_clean(target) or "", depth + 1)
        if not m.isfile():
            raise BadInput(f"{self.path}: {_quote(name)} is not a file in the tarball")
        return m

    def json(self, name: str) -> Any:
        with self.open(name) as f:
            raw = f.read(MAX_JSON + 1)
        if len(raw) > MAX_JSON:
            raise BadInput(f"{self.path}: {_quote(name)} is larger than {MAX_JSON // (1024 * 1024)} MiB; refused")
        try:
            return loads_json(raw.decode("utf-8"), f"{self.path}: {name}")
        except UnicodeDecodeError:
            raise BadInput(f"{self.path}: {_quote(name)} is not UTF-8 JSON") from None


def open_image(path: str) -> Image:
    """The image at ``path`` (a layout folder or a tarball); BadInput with one line when it is not one."""
    src = _Source(path)
    if src.has("index.json"):
        return _from_oci(src)
    if src.has("manifest.json"):
        return _from_docker(src)
    raise BadInput(f"{path}: neither an OCI image layout (index.json) nor a docker-save tarball (manifest.json)")


def _blob(digest: Any, where: str, path: str) -> str:
    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise BadInput(f"{path}: {where} names a digest that is not algorithm:hex ({_quote(str(digest))}); refused")
    algo, _, hexpart = digest.partition(":")
    return f"blobs/{algo}/{hexpart}"


def _from_oci(src: _Source) -> Image:
    index = src.json("index.json")
    manifests = index.get("manifests") if isinstance(index, dict) else None
    if not isinstance(manifests, list) or not manifests:
        raise BadInput(f"{src.path}: index.json lists no manifest")
    desc = _pick_manifest(src, manifests, 0)
    manifest = src.json(_blob(desc.get("digest"), "index.json", src.path))
    tags = [t for t in [((desc.get("annotations") or {}).get("org.opencontainers.image.ref.name"))] if isinstance(t, str)]
    image = Image(source=src.path, kind="oci-layout" if src.folder else "oci-tarball", tags=tags)
    if not isinstance(manifest, dict):
        raise BadInput(f"{src.path}: the image manifest is not a JSON object")
    config = manifest.get("config") or {}
    image.config = _object(src.json(_blob(config.get("digest"), "the manifest's config", src.path)), src.path)
    layers = manifest.get("layers") or []
    if not isinstance(layers, list) or len(layers) > MAX_LAYERS:
        raise BadInput(f"{src.path}: the manifest lists {len(layers) if isinstance(layers, list) else 'no'} layers;"
                       f" at most {MAX_LAYERS} are read")
    for desc_ in layers:
        if not isinstance(desc_, dict):
            raise BadInput(f"{src.path}: a layer of the manifest is not a JSON object")
        name = _blob(desc_.get("digest"), "a layer", src.path)
        image.layers.append(Layer(name=str(desc_.get("digest")), open=_opener(src, name)))
    return image


def _pick_manifest(src: _Source, manifests: List[Any], depth: int) -> Dict[str, Any]:
    """The linux/amd64 image of an index (or its only one), following nested indexes a few levels deep."""
    def platform(d: Dict[str, Any]) -> Tuple[str, str]:
        p = d.get("platform") or {}
        return (str(p.get("os") or ""), str(p.get("architecture") or ""))

    usable = [d for d in manifests if isinstance(d, dict)]
    # attestation manifests (buildx) say unknown/unknown
    usable = [d for d in usable if platform(d) != ("unknown", "unknown")] or usable
    if not usable:
        raise BadInput(f"{src.path}: index.json lists no manifest")
    chosen = next((d for d in usable if platform(d) == ("linux", "amd64")), usable[0])
    if "index" in str(chosen.get("mediaType") or "") or "manifest.list" in str(chosen.get("mediaType") or ""):
        if depth >= 4:
            raise BadInput(f"{src.path}: image indexes nested more than 4 deep; refused")
        nested = src.json(_blob(chosen.get("digest"), "index.json", src.path))
        inner = nested.get("manifests") if isinstance(nested, dict) else None
        if not isinstance(inner, list) or not inner:
            raise BadInput(f"{src.path}: a nested index lists no manifest")
        found = _pick_manifest(src, inner, depth + 1)
        if not (found.get("annotations") or {}).get("org.opencontainers.image.ref.name"):
            found = dict(found, annotations=chosen.get("annotations") or {})
        return found
    return chosen


def _from_docker(src: _Source) -> Image:
    manifest = src.json("manifest.json")
    if not isinstance(manifest, list) or not manifest or not isinstance(manifest[0], dict):
        raise BadInput(f"{src.path}: manifest.json lists no image")
    first = manifest[0]
    image = Image(source=src.path, kind="docker-save",
                  tags=[t for t in first.get("RepoTags") or [] if isinstance(t, str)])
    config = first.get("Config")
    image.config = _object(src.json(_member_name(config, src.path)), src.path)
    layers = first.get("Layers") or []
    if not isinstance(layers, list) or len(layers) > MAX_LAYERS:
        raise BadInput(f"{src.path}: manifest.json lists too many layers; at most {MAX_LAYERS} are read")
    for name in layers:
        member = _member_name(name, src.path)
        image.layers.append(Layer(name=member, open=_opener(src, member)))
    return image


def _member_name(name: Any, path: str) -> str:
    clean = _clean(name) if isinstance(name, str) else None
    if clean is None:
        raise BadInput(f"{path}: manifest.json names {_quote(str(name))}, not a file inside the tarball; refused")
    return clean


def _object(data: Any, path: str) -> Dict[str, Any]:
    if not isinstance(data, dict):
        raise BadInput(f"{path}: the image config is not a JSON object")
    return data


def _opener(src: _Source, name: str) -> Callable[[], IO[bytes]]:
    return lambda: decompressed(src.open(name), f"{src.path}: layer {name}")


def decompressed(raw: IO[bytes], where: str) -> IO[bytes]:
    """The layer's tar stream: gzip and zstd told by their magic bytes (media types lie in the wild)."""
    head = _peek(raw)
    if head.startswith(_GZIP):
        return gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[return-value]  # optional reader / stdlib typing varies by Python
    if head.startswith(_ZSTD):
        return _zstd(raw, where)
    return raw


def _peek(raw: IO[bytes]) -> bytes:
    if isinstance(raw, io.BufferedReader):
        return raw.peek(4)[:4]
    pos = raw.tell()
    head = raw.read(4)
    raw.seek(pos)
    return head


def _zstd(raw: IO[bytes], where: str) -> IO[bytes]:
    try:  # Python 3.14's standard library
        from compression import zstd as std_zstd  # type: ignore[import-not-found]  # optional reader / stdlib typing varies by Python
        return std_zstd.ZstdFile(raw, mode="rb")  # type: ignore[no-any-return, unused-ignore]  # optional reader / stdlib typing varies by Python
    except ImportError:
        pass
    try:
        import zstandard  # type: ignore[import-not-found, unused-ignore]  # optional reader / stdlib typing varies by Python
    except ImportError:
        raise BadInput(f"{where} is zstd-compressed: pip install 'envdoctor[image]' (zstandard) to read it") from None
    return zstandard.ZstdDecompressor().stream_reader(raw)  # type: ignore[no-any-return, unused-ignore]  # optional reader / stdlib typing varies by Python


def _clean(name: str) -> Optional[str]:
    """A member name as a relative path with no `..`, or None for one that would leave the root."""
    parts = [p for p in name.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts or "\x00" in name:
        return None
    return "/".join(parts)


def _quote(text: str, limit: int = 80) -> str:
    text = "".join(c if c.isprintable() else "?" for c in text)
    return repr(text if len(text) <= limit else text[:limit] + "…")


def _short(exc: BaseException) -> str:
    return _quote(str(exc) or type(exc).__name__, 120)[1:-1]


__all__ = ["Image", "Layer", "open_image", "decompressed"]
