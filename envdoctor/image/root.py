"""A container image read as a :class:`~envdoctor.fsroot.Root`: the probes ask it what they ask a mounted image root
(`--root`), and it answers from the merged layers held in memory.

Nothing of the image is written to disk, so there is no local path for a file of it: ``path()`` maps every path
under ``/dev/null``, a character device under which nothing can exist, so a probe that opens a local path finds
nothing instead of reading the host's file of the same name.
"""
from __future__ import annotations

import fnmatch
import posixpath
from pathlib import Path
from typing import Dict, List, Sequence

from envdoctor.fsroot import MAX_READ, Root
from envdoctor.image.archive import Image, open_image
from envdoctor.image.tree import DIR, FILE, KeepPolicy, Limits, Tree, text_of

NOWHERE = "/dev/null/envdoctor-image"

# What a probe reads of an image, as (glob over the image's absolute path, bytes kept). Small text files only:
# versions, headers, package metadata, the loader's configuration.
KEPT = (
    ("/etc/*release", 64 * 1024), ("/usr/lib/os-release", 64 * 1024), ("/etc/debian_version", 4096),
    ("/etc/ld.so.conf", 64 * 1024), ("/etc/ld.so.conf.d/*", 64 * 1024),
    ("*/cuda*/version.json", 256 * 1024), ("*/cuda*/version.txt", 4096),
    ("*/include/cudnn_version*.h", 256 * 1024), ("*/include/cudnn.h", MAX_READ),
    ("*/include/*/cudnn_version*.h", 256 * 1024),
    ("*/site-packages/*.dist-info/METADATA", MAX_READ), ("*/dist-packages/*.dist-info/METADATA", MAX_READ),
    ("*/site-packages/*.dist-info/top_level.txt", 64 * 1024), ("*/site-packages/*.dist-info/INSTALLER", 4096),
    ("*/site-packages/*.egg-info/PKG-INFO", MAX_READ),
    ("*/site-packages/torch/version.py", 64 * 1024), ("*/dist-packages/torch/version.py", 64 * 1024),
    ("*/tensorflow/python/platform/build_info.py", 64 * 1024), ("*/jaxlib/version.py", 64 * 1024),
    ("*/jax/version.py", 64 * 1024), ("*/cupy/_version.py", 64 * 1024), ("*/onnxruntime/capi/build_and_package_info.py", 64 * 1024),
    ("*/pyvenv.cfg", 4096), ("*/conda-meta/history", MAX_READ),
)


def keep_for_probes(path: str, size: int) -> int:
    for pattern, limit in KEPT:
        if fnmatch.fnmatchcase(path, pattern):
            return min(size, limit)
    return 0


class ImageRoot(Root):
    def __init__(self, image: Image, tree: Tree) -> None:
        super().__init__(NOWHERE)
        self.image = image
        self.tree = tree

    @classmethod
    def open(cls, path: str, keep: KeepPolicy = keep_for_probes, limits: Limits = Limits()) -> "ImageRoot":
        image = open_image(path)
        return cls(image, Tree.from_image(image, keep, limits))

    @property
    def is_live(self) -> bool:
        return False

    def path(self, abs_path: str | object) -> Path:
        rel = str(abs_path).lstrip("/")
        return Path(NOWHERE) / rel

    def display(self, local: str | object) -> str:
        text = str(local)
        return text[len(NOWHERE):] or "/" if text.startswith(NOWHERE) else text

    def exists(self, abs_path: str) -> bool:
        return self.tree.lookup(abs_path) is not None

    def is_dir(self, abs_path: str) -> bool:
        node = self.tree.lookup(abs_path)
        return node is not None and node.kind == DIR

    def is_file(self, abs_path: str) -> bool:
        node = self.tree.lookup(abs_path)
        return node is not None and node.kind == FILE

    def realpath(self, abs_path: str, max_hops: int = 40) -> str:
        return self.tree.realpath(abs_path)

    def read_text(self, abs_path: str, max_bytes: int = MAX_READ) -> str | None:
        node = self.tree.lookup(abs_path)
        if node is None or node.kind != FILE:
            return None
        if node.data is None:
            self.unreadable[str(abs_path)] = "not kept when the image was read (only files a probe reads are)"
            return None
        if node.size > max_bytes:
            self.unreadable[str(abs_path)] = f"larger than {max_bytes} bytes"
            return None
        return text_of(node)

    def listdir(self, abs_path: str) -> list[str]:
        return self.tree.listdir(abs_path)

    def glob(self, pattern: str) -> list[str]:
        """An absolute glob over the image (each part matched by fnmatch; hidden names only by a pattern that
        starts with a dot, as glob does)."""
        parts = [p for p in pattern.split("/") if p]
        found: List[str] = ["/"]
        for part in parts:
            nxt: List[str] = []
            for base in found:
                if not _magic(part):
                    cand = posixpath.join(base, part)
                    if self.tree.lookup(cand) is not None:
                        nxt.append(cand)
                    continue
                for name in self.tree.listdir(base):
                    if (name[:1] != "." or part[:1] == ".") and fnmatch.fnmatchcase(name, part):
                        nxt.append(posixpath.join(base, name))
            found = nxt
            if not found:
                break
        return sorted(found) if parts else []

    def glob_in(self, d: str, patterns: Sequence[str]) -> list[str]:
        return [x for p in patterns for x in self.glob(posixpath.join(d, p))]

    def facts(self) -> Dict[str, object]:
        """What the image's config states (the container runtime's inputs), for the snapshot's image section."""
        env = self.image.env
        return {
            "source": self.image.source, "kind": self.image.kind, "tags": list(self.image.tags),
            "platform": self.image.platform, "layers": len(self.image.layers),
            "env": {k: env[k] for k in ("PATH", "LD_LIBRARY_PATH", "CUDA_VERSION", "NVIDIA_VISIBLE_DEVICES",
                                        "NVIDIA_REQUIRE_CUDA", "NVIDIA_DRIVER_CAPABILITIES", "NV_CUDNN_VERSION",
                                        "CUDNN_VERSION", "PYTORCH_VERSION")
                    if k in env},
            "partial": self.tree.partial, "skipped_members": self.tree.skipped_count,
            "skipped": list(self.tree.skipped), "kept_bytes": self.tree.kept_bytes, "members": self.tree.members,
        }


def _magic(part: str) -> bool:
    return any(c in part for c in "*?[")

