"""The small strict reader of the YAML subset conda environment files use: never PyYAML, no anchors or aliases,
nesting at most MAX_YAML_DEPTH levels; every node keeps its line."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Tuple

from envdoctor.gate.inputs.interface import MAX_YAML_DEPTH
from envdoctor.gate.trust import quote_token


class YamlError(ValueError):
    def __init__(self, line: int, message: str, unsupported: bool = False) -> None:
        super().__init__(message)
        self.line = line
        self.message = message
        self.unsupported = unsupported


@dataclass
class YNode:
    kind: str  # scalar | seq | map | null
    value: Any
    line: int


_KEY = re.compile(
    r"""^(?:"(?P<dq>(?:[^"\\]|\\.)*)"|'(?P<sq>(?:[^']|'')*)'"""
    r"""|(?P<plain>[^\s'"#\-?:\[\]{},&*!|>%@`][^#]*?|-[^\s#][^#]*?))\s*:(?:\s+|$)(?P<rest>.*)$""")


def _strip_comment(line: str) -> str:
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"" and (i == 0 or line[i - 1] in " \t[,{:-"):
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


class _YamlSubset:
    """A strict reader for the YAML that conda environment files (and pre-commit / action files) use: block
    mappings and sequences, plain and quoted scalars, one-line flow sequences, comments.  Anchors, tags, block
    scalars and flow mappings raise YamlError(unsupported=True)."""

    def __init__(self, text: str) -> None:
        self.lines: List[Tuple[int, int, str]] = []
        for n, raw in enumerate(text.splitlines(), 1):
            lead = raw[: len(raw) - len(raw.lstrip(" \t"))]
            if "\t" in lead and raw.strip():
                raise YamlError(n, "a tab character is used for indentation (YAML allows spaces only)")
            body = _strip_comment(raw)
            s = body.strip()
            if not s:
                continue
            if s == "---" and not self.lines:
                continue
            if s == "...":
                break
            if s.startswith("%"):
                raise YamlError(n, "YAML directives are not supported", unsupported=True)
            self.lines.append((n, len(body) - len(body.lstrip(" ")), s))
        self.i = 0
        self.depth = 0

    def document(self) -> YNode:
        if not self.lines:
            return YNode("null", None, 1)
        node = self.block(self.lines[0][1])
        if self.i < len(self.lines):
            n, _ind, s = self.lines[self.i]
            raise YamlError(n, f"unexpected indentation or content {quote_token(s)}")
        return node

    @staticmethod
    def _is_item(s: str) -> bool:
        return s == "-" or s.startswith("- ")

    def block(self, indent: int) -> YNode:
        n, ind, s = self.lines[self.i]
        if self._is_item(s):
            return self.seq(ind)
        if _KEY.match(s):
            return self.mapping(ind)
        self.i += 1
        node = self.scalar(s, n)
        if self.i < len(self.lines) and self.lines[self.i][1] > indent:
            raise YamlError(self.lines[self.i][0], "multi-line plain scalars are not supported", unsupported=True)
        return node

    def _nested(self, read: Callable[[int], YNode], indent: int) -> YNode:
        """read(indent) one level deeper; YamlError beyond MAX_YAML_DEPTH (the reader recurses per level)."""
        self.depth += 1
        try:
            if self.depth > MAX_YAML_DEPTH:
                raise YamlError(self.lines[self.i][0], f"nested deeper than {MAX_YAML_DEPTH} levels")
            return read(indent)
        finally:
            self.depth -= 1

    def seq(self, indent: int) -> YNode:
        return self._nested(self._seq, indent)

    def mapping(self, indent: int) -> YNode:
        return self._nested(self._mapping, indent)

    def _seq(self, indent: int) -> YNode:
        items: List[YNode] = []
        start = self.lines[self.i][0]
        while self.i < len(self.lines):
            n, ind, s = self.lines[self.i]
            if ind < indent or not self._is_item(s):
                if ind > indent:
                    raise YamlError(n, "bad indentation: this line is deeper than the sequence entries around it")
                break
            if ind > indent:
                raise YamlError(n, "bad indentation of a sequence entry")
            rest = s[1:].lstrip(" ")
            self.i += 1
            if not rest:
                if self.i < len(self.lines) and self.lines[self.i][1] > indent:
                    items.append(self.block(self.lines[self.i][1]))
                else:
                    items.append(YNode("null", None, n))
                continue
            col = indent + (len(s) - len(rest))
            if self._is_item(rest):
                raise YamlError(n, "nested sequences on one line ('- - x') are not supported", unsupported=True)
            if _KEY.match(rest):
                self.i -= 1  # re-read this line as the mapping's first 'key: value' (in place: no O(n) insert)
                self.lines[self.i] = (n, col, rest)
                items.append(self.mapping(col))
            else:
                items.append(self.scalar(rest, n))
                if self.i < len(self.lines) and self.lines[self.i][1] > indent and not self._is_item(self.lines[self.i][2]):
                    raise YamlError(self.lines[self.i][0], "multi-line plain scalars are not supported", unsupported=True)
        return YNode("seq", items, start)

    def _mapping(self, indent: int) -> YNode:
        out: Dict[str, YNode] = {}
        start = self.lines[self.i][0]
        while self.i < len(self.lines):
            n, ind, s = self.lines[self.i]
            if ind < indent:
                break
            if ind > indent:
                raise YamlError(n, "bad indentation of a mapping entry")
            mm = _KEY.match(s)
            if not mm:
                if self._is_item(s):
                    raise YamlError(n, "a sequence entry where a 'key: value' line was expected")
                raise YamlError(n, f"expected 'key: value', found {quote_token(s)}")
            key = mm.group("dq") if mm.group("dq") is not None else (
                mm.group("sq").replace("''", "'") if mm.group("sq") is not None else mm.group("plain").strip())
            rest = mm.group("rest").strip()
            if key in out:
                raise YamlError(n, f"duplicate key {quote_token(key)}")
            self.i += 1
            if rest:
                value = self.scalar(rest, n)
                if self.i < len(self.lines) and self.lines[self.i][1] > indent:
                    raise YamlError(self.lines[self.i][0], "bad indentation: a value was already given on the line above")
            elif self.i < len(self.lines) and self.lines[self.i][1] > indent:
                value = self.block(self.lines[self.i][1])
            elif self.i < len(self.lines) and self.lines[self.i][1] == indent and self._is_item(self.lines[self.i][2]):
                value = self.seq(indent)
            else:
                value = YNode("null", None, n)
            out[key] = value
        return YNode("map", out, start)

    def scalar(self, s: str, n: int) -> YNode:
        if s[0] in "&*!":
            raise YamlError(n, "anchors, aliases and tags are not supported", unsupported=True)
        if s[0] in "|>":
            raise YamlError(n, "block scalars (| or >) are not supported", unsupported=True)
        if s[0] == "{":
            raise YamlError(n, "flow mappings ({...}) are not supported", unsupported=True)
        if s[0] == "[":
            if not s.endswith("]"):
                raise YamlError(n, "a flow sequence must close on the same line", unsupported=True)
            inner = s[1:-1].strip()
            items = []
            if inner:
                for part in _split_flow(inner, n):
                    items.append(self.scalar(part, n))
            return YNode("seq", items, n)
        if s[0] == '"':
            mm = re.match(r'^"((?:[^"\\]|\\.)*)"$', s)
            if not mm:
                raise YamlError(n, "unterminated or malformed double-quoted string")
            return YNode("scalar", _unescape(mm.group(1), n), n)
        if s[0] == "'":
            mm = re.match(r"^'((?:[^']|'')*)'$", s)
            if not mm:
                raise YamlError(n, "unterminated or malformed single-quoted string")
            return YNode("scalar", mm.group(1).replace("''", "'"), n)
        if s in ("~", "null", "Null", "NULL"):
            return YNode("null", None, n)
        return YNode("scalar", s, n)


def _split_flow(inner: str, n: int) -> List[str]:
    parts, buf, quote = [], "", ""
    for ch in inner:
        if quote:
            buf += ch
            if ch == quote:
                quote = ""
            continue
        if ch in "'\"":
            quote = ch
            buf += ch
        elif ch in "[{":
            raise YamlError(n, "nested flow collections are not supported", unsupported=True)
        elif ch == ",":
            parts.append(buf.strip())
            buf = ""
        else:
            buf += ch
    if quote:
        raise YamlError(n, "unterminated quoted string in a flow sequence")
    if buf.strip():
        parts.append(buf.strip())
    if any(not p for p in parts):
        raise YamlError(n, "empty entry in a flow sequence")
    return parts


def _unescape(body: str, n: int) -> str:
    out, i = [], 0
    simple = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "/": "/", "0": "\0", " ": " "}
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < len(body) else ""
        if nxt in simple:
            out.append(simple[nxt])
            i += 2
        elif nxt in "xuU":
            width = {"x": 2, "u": 4, "U": 8}[nxt]
            hexd = body[i + 2:i + 2 + width]
            if len(hexd) != width or not re.match(r"^[0-9a-fA-F]+$", hexd):
                raise YamlError(n, f"bad escape \\{nxt}{hexd}")
            if int(hexd, 16) > 0x10FFFF:
                raise YamlError(n, f"bad escape \\{nxt}{hexd} (beyond Unicode)")
            out.append(chr(int(hexd, 16)))
            i += 2 + width
        else:
            raise YamlError(n, f"unknown escape \\{nxt}")
    return "".join(out)


def read_yaml(text: str) -> YNode:
    """The document as YNodes (each with its line), read by the built-in subset reader only (never PyYAML: no
    aliases, so no alias bombs; nesting at most MAX_YAML_DEPTH levels).  YamlError (with a line) when the text
    is not valid YAML or uses what the subset does not read."""
    try:
        return _YamlSubset(text).document()
    except YamlError as exc:
        tail = " (by envdoctor's built-in YAML reader)" if exc.unsupported else ""
        raise YamlError(exc.line, f"invalid YAML: {exc.message}{tail}", unsupported=exc.unsupported) from None
