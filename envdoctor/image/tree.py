"""An image's file system, merged from its layers in memory: whiteouts applied, links kept as links, and only the
bytes of the files a probe reads.

Each layer's tar stream is read once, front to back (never extracted, never seeked): a member's name is made a
clean relative path (one that would leave the root is skipped and counted); a whiteout `.wh.NAME` hides NAME of the
layers below, an opaque marker `.wh..wh..opq` hides everything below in its folder (the OCI image spec's rules:
neither touches what its own layer adds). What is kept of each file is decided by ``keep(path, size)`` (bytes to
keep, 0 for none); kept bytes, members and the bytes streamed are each bounded, and a bound reached stops the walk
with the reason recorded — the tree says it is partial instead of reading as complete.
"""
from __future__ import annotations

import tarfile
from dataclasses import dataclass, field
from typing import Callable, Dict, IO, Iterable, List, Optional, Tuple

from envdoctor.image.archive import Image

KeepPolicy = Callable[[str, int], int]

DIR, FILE, LINK = "dir", "file", "link"


@dataclass
class Node:
    kind: str
    size: int = 0
    mode: int = 0
    data: Optional[bytes] = None          # the kept bytes (a prefix when the file is larger than kept)
    target: str = ""                      # a symlink's target, as written
    children: Dict[str, "Node"] = field(default_factory=dict)


@dataclass(frozen=True)
class Limits:
    members: int = 2_000_000              # all layers together
    kept_bytes: int = 512 * 1024 * 1024   # the bytes of kept files together
    streamed_bytes: int = 256 * 1024 ** 3  # decompressed bytes read, all layers (a zip bomb stops here)


class _Counting:
    """A read-only stream that counts what passes and refuses past a bound."""

    def __init__(self, raw: IO[bytes], budget: List[int]) -> None:
        self.raw, self.budget = raw, budget

    def read(self, n: int = -1) -> bytes:
        data = self.raw.read(n)
        self.budget[0] -= len(data)
        if self.budget[0] < 0:
            raise _Bound("more decompressed bytes than the bound on what is read of an image")
        return data


class _Bound(Exception):
    pass


class Tree:
    def __init__(self) -> None:
        self.root = Node(DIR)
        self.skipped: List[str] = []        # why members were skipped (bounded list; `skipped_count` counts all)
        self.skipped_count = 0
        self.partial = ""                   # why the walk stopped early, or ""
        self.kept_bytes = 0
        self.members = 0

    # ---------------------------------------------------------------- building
    def _skip(self, why: str) -> None:
        self.skipped_count += 1
        if len(self.skipped) < 5:
            self.skipped.append(why)

    @classmethod
    def from_image(cls, image: Image, keep: KeepPolicy, limits: Limits = Limits()) -> "Tree":
        tree = cls()
        budget = [limits.streamed_bytes]
        for layer in image.layers:
            try:
                with layer.open() as raw:
                    tree._apply(_Counting(raw, budget), keep, limits)
            except _Bound as exc:
                tree.partial = f"layer {layer.name[:19]}: {exc}"
                break
            except (tarfile.TarError, OSError, EOFError, ValueError) as exc:
                tree.partial = f"layer {layer.name[:19]} is not a readable tar stream ({type(exc).__name__})"
                break
            if tree.partial:
                break
        return tree

    def _apply(self, stream: _Counting, keep: KeepPolicy, limits: Limits) -> None:
        layer = Node(DIR)
        hide: List[Tuple[str, ...]] = []
        opaque: List[Tuple[str, ...]] = []
        with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]  # optional reader / stdlib typing varies by Python
            for m in tar:
                self.members += 1
                if self.members > limits.members:
                    raise _Bound(f"more than {limits.members:,} members")
                parts = _parts(m.name)
                if parts is None:
                    self._skip(f"a member whose path leaves the root ({_show(m.name)})")
                    continue
                base = parts[-1]
                if base == ".wh..wh..opq":
                    opaque.append(parts[:-1])
                    continue
                if base.startswith(".wh."):
                    hide.append(parts[:-1] + (base[4:],))
                    continue
                if m.isdir():
                    _put(layer, parts, Node(DIR, mode=m.mode), merge_dir=True)
                elif m.issym():
                    _put(layer, parts, Node(LINK, mode=m.mode, target=m.linkname))
                elif m.islnk():
                    target = _parts(m.linkname)
                    if target is None:
                        self._skip(f"a hard link out of the root ({_show(m.linkname)})")
                        continue
                    # a hard link names a member of this layer or of one below
                    found = _get(layer, target) or _get(self.root, target)
                    if found is None or found.kind != FILE:
                        self._skip(f"a hard link to a missing file ({_show(m.linkname)})")
                        continue
                    _put(layer, parts, Node(FILE, size=found.size, mode=m.mode, data=found.data))
                elif m.isfile():
                    want = keep("/" + "/".join(parts), m.size)
                    data = None
                    if want > 0 and self.kept_bytes + min(want, m.size) <= limits.kept_bytes:
                        f = tar.extractfile(m)
                        data = f.read(min(want, m.size)) if f is not None else None
                        self.kept_bytes += len(data or b"")
                    _put(layer, parts, Node(FILE, size=m.size, mode=m.mode, data=data))
                # devices, FIFOs: nothing a probe reads
        for p in opaque:
            d = _get(self.root, p)
            if d is not None and d.kind == DIR:
                d.children.clear()
        for p in hide:
            parent = _get(self.root, p[:-1])
            if parent is not None and parent.kind == DIR:
                parent.children.pop(p[-1], None)
        _merge(self.root, layer)

    # ---------------------------------------------------------------- reading
    def lookup(self, path: str, follow: bool = True) -> Optional[Node]:
        """The node at an absolute path, symlinks resolved inside the image (an absolute target means the image's
        root; `..` stops at the root, as it does in a chroot)."""
        parts = [p for p in path.split("/") if p not in ("", ".")]
        node, hops = self.root, 0
        where: List[str] = []
        i = 0
        while i < len(parts):
            name = parts[i]
            if name == "..":
                where = where[:-1]
                node = _get(self.root, tuple(where)) or self.root
                i += 1
                continue
            if node.kind != DIR:
                return None
            child = node.children.get(name)
            if child is None:
                return None
            last = i == len(parts) - 1
            if child.kind == LINK and (follow or not last):
                hops += 1
                if hops > 40:
                    return None
                target = [p for p in child.target.split("/") if p not in ("", ".")]
                base = [] if child.target.startswith("/") else where
                parts = base + target + parts[i + 1:]
                node, where, i = self.root, [], 0
                continue
            node, where = child, where + [name]
            i += 1
        return node

    def realpath(self, path: str) -> str:
        """The path with every symlink resolved (for evidence); the path itself when it does not resolve."""
        parts = [p for p in path.split("/") if p not in ("", ".")]
        where: List[str] = []
        hops = 0
        i = 0
        while i < len(parts):
            name = parts[i]
            if name == "..":
                where = where[:-1]
                i += 1
                continue
            child = _get(self.root, tuple(where + [name]))
            if child is not None and child.kind == LINK and hops < 40:
                hops += 1
                target = [p for p in child.target.split("/") if p not in ("", ".")]
                parts = ([] if child.target.startswith("/") else where) + target + parts[i + 1:]
                where, i = [], 0
                continue
            where.append(name)
            i += 1
        return "/" + "/".join(where)

    def listdir(self, path: str) -> List[str]:
        node = self.lookup(path)
        return sorted(node.children) if node is not None and node.kind == DIR else []

    def walk_files(self) -> Iterable[Tuple[str, Node]]:
        stack: List[Tuple[str, Node]] = [("", self.root)]
        while stack:
            prefix, node = stack.pop()
            for name, child in node.children.items():
                path = f"{prefix}/{name}"
                if child.kind == DIR:
                    stack.append((path, child))
                else:
                    yield path, child


def _parts(name: str) -> Optional[Tuple[str, ...]]:
    parts = tuple(p for p in name.replace("\\", "/").split("/") if p not in ("", "."))
    if not parts or ".." in parts or "\x00" in name:
        return None
    return parts


def _get(root: Node, parts: Tuple[str, ...]) -> Optional[Node]:
    node = root
    for p in parts:
        if node.kind != DIR:
            return None
        nxt = node.children.get(p)
        if nxt is None:
            return None
        node = nxt
    return node


def _put(root: Node, parts: Tuple[str, ...], node: Node, merge_dir: bool = False) -> None:
    parent = root
    for p in parts[:-1]:
        nxt = parent.children.get(p)
        if nxt is None or nxt.kind != DIR:
            nxt = parent.children[p] = Node(DIR)
        parent = nxt
    old = parent.children.get(parts[-1])
    if merge_dir and old is not None and old.kind == DIR:
        old.mode = node.mode
        return
    parent.children[parts[-1]] = node


def _merge(lower: Node, upper: Node) -> None:
    """Lay ``upper`` (one layer) over ``lower`` (the layers below): folders merge, anything else replaces."""
    for name, node in upper.children.items():
        old = lower.children.get(name)
        if node.kind == DIR and old is not None and old.kind == DIR:
            _merge(old, node)
            old.mode = node.mode or old.mode
        else:
            lower.children[name] = node


def _show(name: str) -> str:
    text = "".join(c if c.isprintable() else "?" for c in name)
    return repr(text[:80] + ("…" if len(text) > 80 else ""))


def text_of(node: Optional[Node]) -> Optional[str]:
    if node is None or node.kind != FILE or node.data is None or b"\x00" in node.data:
        return None
    return node.data.decode("utf-8", errors="replace")


__all__ = ["Tree", "Node", "Limits", "KeepPolicy", "text_of"]
