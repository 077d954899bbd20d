"""YAML input (conda environment files) read with PyYAML's safe parser, on terms fit for files other people wrote.

PyYAML reads the whole language conda's own loader reads (block scalars, flow mappings, multi-line strings), so a
valid environment file is judged instead of refused.  What it is not trusted with:

* anchors and aliases are refused: expanding aliases is how a few hundred bytes become gigabytes ("billion
  laughs"), and no environment file needs them;
* nesting depth and the number of nodes are checked on PyYAML's event stream, before the node graph or any Python
  object is built (the node graph is composed recursively);
* the Python objects are built here from the nodes, never by a PyYAML constructor: only mappings, sequences,
  strings, numbers, booleans and null; any other tag (``!!python/object``, ``!!binary``, a local ``!tag``) is refused.

PyYAML is imported when a YAML file is read, not when this module is: ``check`` and the gates of other inputs never
pay for it.  Every refusal is a :class:`YamlError` with a 1-based line (0 where there is none), which gate reports
as one ``file:line: message`` problem (exit code 2)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional

from envdoctor.gate.inputs.interface import MAX_INPUT_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES
from envdoctor.gate.trust import quote_token

if TYPE_CHECKING:
    import yaml

_CORE = "tag:yaml.org,2002:"
# tags written explicitly (``!!str 3.10``) that are read; everything else explicit is refused
_EXPLICIT_TAGS = {_CORE + t for t in ("str", "int", "float", "bool", "null", "seq", "map")}
# PyYAML resolves these implicitly from plain text; they are kept as the text written (no date objects, and '='
# or '<<' as a value is only a string)
_AS_TEXT = {_CORE + "timestamp", _CORE + "value", _CORE + "merge"}
MAX_INT_DIGITS = 4300  # as CPython's default int_max_str_digits: a longer integer is refused, never converted


class YamlError(ValueError):
    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


@dataclass
class YNode:
    kind: str  # scalar | seq | map | null
    value: Any  # scalar: str | int | float | bool; seq: List[YNode]; map: Dict[key, YNode]; null: None
    line: int


def read_yaml(text: str) -> YNode:
    """The document as YNodes (each with its 1-based line).  YamlError (with a line) when the text is not valid
    YAML, uses an anchor, an alias or a tag not read, nests deeper than MAX_YAML_DEPTH or has more than
    MAX_YAML_NODES nodes."""
    try:
        return _read(text)
    except YamlError as exc:
        raise YamlError(exc.line, f"invalid YAML: {exc.message}") from None


def plain(node: YNode) -> Any:
    """The document as plain dict / list / str / int / float / bool / None."""
    if node.kind == "map":
        return {k: plain(v) for k, v in node.value.items()}
    if node.kind == "seq":
        return [plain(v) for v in node.value]
    return node.value


def load_yaml(text: str) -> Any:
    """read_yaml, as plain Python objects."""
    return plain(read_yaml(text))


def _read(text: str) -> YNode:
    if len(text) > MAX_INPUT_BYTES:
        raise YamlError(0, f"more than {MAX_INPUT_BYTES} characters")
    try:
        import yaml
    except ImportError:
        raise YamlError(0, "cannot read YAML: PyYAML is not installed (envdoctor depends on it: pip install "
                           "pyyaml)") from None
    loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    try:
        _check_events(yaml, yaml.parse(text, Loader=loader))
        root = yaml.compose(text, Loader=loader)
    except yaml.MarkedYAMLError as exc:
        raise _syntax_error(text, exc) from None
    except yaml.YAMLError as exc:  # a ReaderError (a character YAML does not allow) has a position, not a mark
        position = getattr(exc, "position", None)
        line = text.count("\n", 0, position) + 1 if isinstance(position, int) else 0
        raise YamlError(line, (str(exc).splitlines() or ["invalid YAML"])[0]) from None
    if root is None:
        return YNode("null", None, 1)
    return _Builder(yaml).node(root)


def _check_events(yaml: Any, events: Any) -> None:
    """Refuse anchors, aliases, tags not read, nesting deeper than MAX_YAML_DEPTH and more than MAX_YAML_NODES
    nodes, streaming PyYAML's events (nothing is kept: a refused file costs one pass and no memory)."""
    depth = nodes = 0
    for event in events:
        line = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            raise YamlError(line, f"aliases (*{event.anchor}) are not read: expanding them can make a few hundred "
                                  f"bytes gigabytes")
        if isinstance(event, (yaml.ScalarEvent, yaml.CollectionStartEvent)):
            if event.anchor is not None:
                raise YamlError(line, f"anchors (&{event.anchor}) and aliases are not read: expanding aliases can "
                                      f"make a few hundred bytes gigabytes")
            tag = event.tag
            if tag is not None and tag != "!" and tag not in _EXPLICIT_TAGS:
                raise YamlError(line, _tag_refused(tag))
            nodes += 1
            if nodes > MAX_YAML_NODES:
                raise YamlError(line, f"more than {MAX_YAML_NODES} values")
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise YamlError(line, f"nested deeper than {MAX_YAML_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


def _tag_refused(tag: str) -> str:
    """The refusal of a tag, its name quoted as any text from the file is (its safe start only)."""
    prefix, name = ("!!", tag[len(_CORE):]) if tag.startswith(_CORE) else ("!", tag.lstrip("!"))
    return (f"tags are not read (found {prefix}{quote_token(name)}): only mappings, lists, strings, numbers, "
            f"booleans and null are")


def _syntax_error(text: str, exc: Any) -> YamlError:
    """PyYAML's error as one line: the problem, where it was found, and the construct it was in."""
    lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    mark, context_mark = exc.problem_mark, exc.context_mark
    line = mark.line + 1 if mark is not None else 0
    if line > lines and context_mark is not None:
        line = context_mark.line + 1  # found at the end of the file: the unclosed construct's line says more
    line = min(line, max(lines, 1))
    message = exc.problem or "invalid YAML"
    if mark is not None and _char_at(text, mark) == "\t":
        message += ": a tab character, and YAML indents with spaces only"
    if exc.context:
        where = f" on line {context_mark.line + 1}" if context_mark is not None else ""
        message += f" ({exc.context}{where})"
    return YamlError(line, message)


def _char_at(text: str, mark: Any) -> str:
    start = 0
    for _ in range(mark.line):
        start = text.find("\n", start) + 1
        if start == 0:
            return ""
    pos = start + mark.column
    return text[pos] if 0 <= pos < len(text) else ""


class _Builder:
    """Plain values from PyYAML's nodes.  Depth and size were bounded by _check_events, so the recursion is too."""

    def __init__(self, yaml: Any) -> None:
        self.yaml = yaml
        # only its scalar converters are used (int, float, bool: YAML 1.1's spellings as PyYAML reads them)
        self.scalars = yaml.constructor.SafeConstructor()

    def node(self, node: "yaml.Node") -> YNode:
        line = node.start_mark.line + 1
        tag = node.tag
        if isinstance(node, self.yaml.MappingNode) and tag == _CORE + "map":
            out: Dict[Any, YNode] = {}
            for key_node, value_node in node.value:
                key = self.key(key_node)
                if key in out:
                    raise YamlError(key_node.start_mark.line + 1, f"duplicate key {quote_token(str(key))}")
                out[key] = self.node(value_node)
            return YNode("map", out, line)
        if isinstance(node, self.yaml.SequenceNode) and tag == _CORE + "seq":
            items: List[YNode] = [self.node(x) for x in node.value]
            return YNode("seq", items, line)
        if isinstance(node, self.yaml.ScalarNode):
            value = self.scalar(node, line)
            return YNode("null", None, line) if value is None else YNode("scalar", value, line)
        raise YamlError(line, _tag_refused(str(tag)))

    def key(self, node: "yaml.Node") -> Any:
        line = node.start_mark.line + 1
        if not isinstance(node, self.yaml.ScalarNode):
            raise YamlError(line, "a mapping key must be a plain value, not a list or a mapping")
        if node.tag == _CORE + "merge":
            raise YamlError(line, "merge keys (<<) are not read")
        return self.scalar(node, line)

    def scalar(self, node: "yaml.ScalarNode", line: int) -> Optional[Any]:
        tag = node.tag
        if tag == _CORE + "str" or tag in _AS_TEXT:
            return str(node.value)
        if tag == _CORE + "null":
            return None
        if tag == _CORE + "bool":
            return self._convert(self.scalars.construct_yaml_bool, node, line)
        if tag == _CORE + "int":
            if len(node.value) > MAX_INT_DIGITS:
                raise YamlError(line, f"an integer of {len(node.value)} characters (at most {MAX_INT_DIGITS} are read)")
            return self._convert(self.scalars.construct_yaml_int, node, line)
        if tag == _CORE + "float":
            return self._convert(self.scalars.construct_yaml_float, node, line)
        raise YamlError(line, _tag_refused(str(tag)))

    def _convert(self, convert: Any, node: "yaml.ScalarNode", line: int) -> Any:
        try:
            return convert(node)
        except (ValueError, KeyError, self.yaml.YAMLError) as exc:
            raise YamlError(line, f"cannot read {quote_token(str(node.value))}: {exc}") from None
