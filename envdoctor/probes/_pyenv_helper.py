# envdoctor's helper, run inside the *target* Python interpreter (python -c <this source>).
#
# It lists the GPU-relevant distributions installed there and reads the version files they
# ship, as text. It NEVER imports any of them: it only walks sys.path, reads
# *.dist-info/METADATA (or *.egg-info/PKG-INFO) headers and a few known files by path.
#
# Constraints: standard library only, no envdoctor imports, runs on Python 3.6+ (so no
# `from __future__ import annotations`, no walrus, no f-string `=`), prints one line:
#     @@ENVDOCTOR-PYENV@@ {json}
# It imports neither json nor re (nor platform, which imports re): in a plain venv those are most of
# the helper's own time, and it runs in every check. `dumps` writes the JSON itself.
import sys

if __name__ == "__main__":
    # The script comes in with -c, so sys.path[0] is '' (the current directory): drop it before
    # importing anything, so that a json.py or re.py lying in the user's cwd is never picked up.
    sys.path[:] = [p for p in sys.path if p not in ("", ".")]

import os  # noqa: E402

MARKER = "@@ENVDOCTOR-PYENV@@ "
MAX_FILE = 64 * 1024
MAX_WITNESS = 4096

# While main(witness=True) runs: [path, signature] of every path the walk looked at (a folder listed, a file read, a
# path found absent), the interpreter's own files and the .pth files that shaped sys.path. envdoctor keeps the
# answer with it and gives it again while every signature holds (envdoctor.cache).
_SEEN = None  # type: list | None  # a type comment: the helper runs on Python 3.6+


def _sig(st):
    return [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]  # as envdoctor.cache.signature


def _note(path, st=None):
    """Put `path` (with `st`, its os.stat, when known) in the witness, when one is kept."""
    if _SEEN is None or len(_SEEN) >= MAX_WITNESS:
        return
    if st is None:
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            _SEEN.append([path, None])
            return
    _SEEN.append([path, _sig(st)])

EXACT = set([
    "torch", "torchvision", "torchaudio", "triton", "pytorch-triton", "pytorch-triton-rocm",
    "pytorch-triton-xpu", "tensorflow", "tensorflow-cpu", "tensorflow-gpu", "tensorflow-intel",
    "tensorflow-macos", "tensorflow-metal", "tensorflow-rocm", "tensorflow-aarch64",
    "tf-nightly", "tf-nightly-cpu", "tf-nightly-gpu", "tf-keras", "jax", "jaxlib", "cupy",
    "paddlepaddle", "paddlepaddle-gpu", "onnxruntime", "onnxruntime-gpu", "onnxruntime-rocm",
    "nvidia-ml-py", "nvidia-ml-py3", "pynvml", "tensorrt", "libtpu",
])
# listed too (numpy's ABI, other accelerators' extensions), but not GPU pins in a framework's Requires-Dist
# (onnx, onnxscript: torch.onnx.export(dynamo=True) needs both)
ALSO_LISTED = set(["numpy", "torch-npu", "intel-extension-for-pytorch", "onnx", "onnxscript"])
PREFIXES = ("nvidia-", "cuda-", "cupy-", "jax-cuda", "jax-rocm", "tensorrt-", "onnxruntime-")

# version files each distribution ships, relative to its site-packages directory
FILES = {
    "torch": ["torch/version.py"],
    "torchvision": ["torchvision/version.py"],
    "torchaudio": ["torchaudio/version.py"],
    "jax": ["jax/version.py"],
    "jaxlib": ["jaxlib/version.py"],
    "onnxruntime": ["onnxruntime/capi/build_and_package_info.py"],
    "paddlepaddle": ["paddle/version/__init__.py"],
    "paddlepaddle-gpu": ["paddle/version/__init__.py"],
}
# TensorFlow 1.15 / 2.0 wheels keep the real package in tensorflow_core/ (tensorflow/ is a shim without build_info)
TF_FILES = ["tensorflow/python/platform/build_info.py", "tensorflow_core/python/platform/build_info.py"]
# folders inside a distribution's package that may bundle CUDA libraries (older torch wheels: torch/lib/libcudnn.so.8,
# libcudart-<hash>.so.11.0); only the file names are listed, at most MAX_BUNDLED of them
BUNDLE_DIRS = {"torch": ["torch/lib"], "jaxlib": ["jaxlib/cuda", "jaxlib/lib"]}
BUNDLED_FAMILIES = ("cudnn", "cublas", "cublasLt", "cudart", "nccl", "nvrtc", "nvJitLink", "cufft", "curand", "cusolver",
                    "cusparse")
MAX_BUNDLED = 64
CUPY_FILES = ["cupy/_version.py"]


def normalize(name):
    """PEP 503: runs of "-", "_", "." become one "-", lower case (re.sub(r"[-_.]+", "-", name).lower())."""
    text = name.replace("_", "-").replace(".", "-")
    while "--" in text:
        text = text.replace("--", "-")
    return text.lower()


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
# the same escapes as a str.translate table over ASCII: what _string's loop writes for each ASCII character
_ASCII_TABLE = dict((code, _ESCAPES.get(chr(code), "\\u%04x" % code)) for code in list(range(0x20)) + [0x7F])
_ASCII_TABLE.update((ord(ch), esc) for ch, esc in _ESCAPES.items())


def _string(text):
    """A JSON string as json.dumps(text, ensure_ascii=True) writes it."""
    try:
        text.encode("ascii")
    except UnicodeEncodeError:
        return _string_loop(text)
    if text.isprintable() and '"' not in text and "\\" not in text:
        return '"' + text + '"'  # nothing to escape (the common case: names, versions, paths)
    return '"' + text.translate(_ASCII_TABLE) + '"'  # the version files' texts: at C speed, not a loop


def _string_loop(text):
    """_string character by character: any text (non-ASCII ones are written as \\u escapes)."""
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        elif code > 0xFFFF:
            code -= 0x10000
            out.append("\\u%04x\\u%04x" % (0xD800 | (code >> 10), 0xDC00 | (code & 0x3FF)))
        else:
            out.append("\\u%04x" % code)
    out.append('"')
    return "".join(out)


def dumps(value):
    """json.dumps(value, ensure_ascii=True, sort_keys=True) for str, int, bool, None, float, lists and dicts."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}[repr(value)]
        return float.__repr__(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(dumps(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(_string(str(k)) + ": " + dumps(value[k]) for k in sorted(value)) + "}"
    raise TypeError("not JSON: %r" % type(value))


def relevant(norm, listed=False):
    if listed and norm in ALSO_LISTED:
        return True
    if norm in EXACT:
        return True
    for p in PREFIXES:
        if norm.startswith(p):
            return True
    return False


def files_for(norm):
    if norm in FILES:
        return FILES[norm]
    if norm.startswith("tensorflow") or norm.startswith("tf-nightly"):
        return TF_FILES
    if norm == "cupy" or norm.startswith("cupy-"):
        return CUPY_FILES
    if norm.startswith("onnxruntime"):
        return FILES["onnxruntime"]
    parts = norm.split("-")  # jax-(cuda|rocm)N-(plugin|pjrt)
    if len(parts) == 3 and parts[0] == "jax" and parts[1][:4] in ("cuda", "rocm") and parts[2] in ("plugin", "pjrt"):
        kind, number = parts[1][:4], parts[1][4:]
        if number and all("0" <= c <= "9" for c in number):
            if parts[2] == "plugin":
                return ["jax_%s%s_plugin/version.py" % (kind, number)]
            return ["jax_plugins/xla_%s%s/version.py" % (kind, number)]
    return []


def read_text(path, limit=MAX_FILE):
    try:
        with open(path, "rb") as fh:
            if _SEEN is not None:
                _note(path, os.fstat(fh.fileno()))
            data = fh.read(limit)
    except (OSError, IOError, ValueError):
        _note(path)
        return None
    if b"\x00" in data:
        return None
    return data.decode("utf-8", "replace")


_ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"


def requirement_name(line):
    """The normalized name a Requires-Dist line requires ("" for garbage): "torch>=2.0; extra == 'x'" -> "torch"
    (a name is [A-Za-z0-9][A-Za-z0-9._-]*)."""
    text = line.lstrip()
    end = 0
    while end < len(text) and (text[end] in _ALNUM or text[end] in "._-"):
        end += 1
    return normalize(text[:end]) if end and text[0] in _ALNUM else ""


def parse_headers(text):
    """Headers of a METADATA / PKG-INFO file (RFC 822 style), up to the first blank line."""
    headers = []
    last = None
    for line in text.splitlines():
        if not line:  # the blank line before the body; a whitespace-only line is a continuation (License texts)
            break
        if line[:1] in (" ", "\t") and last is not None:
            headers[-1] = (headers[-1][0], headers[-1][1] + " " + line.strip())
            continue
        if ":" in line:
            key, _, value = line.partition(":")
            headers.append((key.strip().lower(), value.strip()))
            last = key
    return headers


def egg_requires(path):
    """requires.txt of an egg-info, turned into Requires-Dist style lines."""
    text = read_text(os.path.join(path, "requires.txt"))
    out = []  # type: list[str]  # a type comment: the helper runs on Python 3.6+
    if not text:
        return out
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            continue
        if section:
            extra, _, marker = section.partition(":")
            conds = []
            if marker:
                conds.append("(%s)" % marker)
            if extra:
                conds.append('extra == "%s"' % extra)
            out.append("%s; %s" % (line, " and ".join(conds)))
        else:
            out.append(line)
    return out


def candidate_name(entry):
    """The distribution name part of a '*.dist-info' / '*.egg-info' / '*.egg' entry name."""
    stem = entry.rsplit(".", 1)[0]
    return stem.split("-", 1)[0]


def read_dist(base, entry):
    """Metadata of one distribution directory entry under `base`; None if unreadable."""
    path = os.path.join(base, entry)
    if entry.endswith(".dist-info"):
        meta_path = os.path.join(path, "METADATA")
    elif entry.endswith(".egg-info"):
        meta_path = os.path.join(path, "PKG-INFO") if os.path.isdir(path) else path
    else:  # an .egg directory
        meta_path = os.path.join(path, "EGG-INFO", "PKG-INFO")
    text = read_text(meta_path, 256 * 1024)
    if text is None:
        return None
    headers = parse_headers(text)
    name = version = requires_python = None
    requires = []
    for key, value in headers:
        if key == "name" and name is None:
            name = value
        elif key == "version" and version is None:
            version = value
        elif key == "requires-python":
            requires_python = value
        elif key == "requires-dist":
            requires.append(value)
    if not name:
        return None
    if entry.endswith(".egg-info") and os.path.isdir(path) and not requires:
        requires = egg_requires(path)
    elif entry.endswith(".egg"):
        requires = egg_requires(os.path.join(path, "EGG-INFO"))
    location = path if entry.endswith(".egg") else base
    installer = None
    if entry.endswith(".dist-info"):
        installer = (read_text(os.path.join(path, "INSTALLER"), 200) or "").strip() or None
    return {
        "name": name,
        "normalized": normalize(name),
        "version": version or "",
        "location": location,
        "metadata_path": meta_path,
        "requires_dist": requires,
        "requires_python": requires_python,
        "installer": installer,
    }


def find_file(rel, location, search_path):
    """The shipped file `rel` next to the dist (its location), else on another sys.path entry
    (an editable install keeps the package elsewhere)."""
    parts = rel.split("/")
    for base in [location] + [p for p in search_path if p != location]:
        candidate = os.path.join(base, *parts)
        if os.path.isfile(candidate):
            return candidate
        _note(candidate)
    return None


def _so_tail(rest):
    """Whether `rest` matches ([-_.].*)?\\.so(\\.[0-9.]+)?$ (no re: see the top)."""
    i = rest.find(".so")
    while i >= 0:
        head, tail = rest[:i], rest[i + 3:]
        if tail.endswith("\n"):  # $ also matches before a final newline
            tail = tail[:-1]
        if (not head or head[0] in "-_.") and "\n" not in head and (
                not tail or (tail[0] == "." and len(tail) > 1 and all(c in "0123456789." for c in tail[1:]))):
            return True
        i = rest.find(".so", i + 1)
    return False


def is_bundled_lib(name):
    """lib(cudnn|cublas|...)([-_.].*)?.so(.[0-9.]+)?: a CUDA library file name (libcudart-1b2c.so.11.0)."""
    if not name.startswith("lib"):
        return False
    for family in BUNDLED_FAMILIES:
        if name.startswith(family, 3) and _so_tail(name[3 + len(family):]):
            return True
    return False


def bundled_libs(norm, location, search_path):
    """Paths of the CUDA libraries a distribution's own package folders hold (names only, nothing opened)."""
    out = []  # type: list[str]  # a type comment: the helper runs on Python 3.6+
    for rel in BUNDLE_DIRS.get(norm, []):
        parts = rel.split("/")
        for base in [location] + [p for p in search_path if p != location]:
            d = os.path.join(base, *parts)
            _note(d)
            if not os.path.isdir(d):
                continue
            try:
                names = sorted(os.listdir(d))
            except OSError:
                names = []
            for name in names:
                if is_bundled_lib(name) and len(out) < MAX_BUNDLED:
                    out.append(os.path.join(d, name))
            break
    return out


def site_dirs():
    out = []
    try:
        import site
        if hasattr(site, "getsitepackages"):
            out.extend(site.getsitepackages())
        if hasattr(site, "getusersitepackages"):
            user = site.getusersitepackages()
            if user:
                out.append(user)
    except Exception:  # noqa: BLE001 - an odd site.py never breaks the probe
        pass
    return out


def python_version(implementation=False):
    """platform.python_version() (or python_implementation().lower()), without importing platform: the
    first word of sys.version is that version ("3.11.7", "3.13.0rc1")."""
    words = sys.version.split()
    if implementation or not words:
        import platform
        return platform.python_implementation().lower() if implementation else platform.python_version()
    return words[0]


def platform_tag():
    """sysconfig.get_platform(), without importing sysconfig on Linux (~1 ms of the helper): there every version
    since 3.6 answers "<os.uname sysname, lower case, no '/'>-<machine, ' ' as '_', '/' as '-'>" unless
    _PYTHON_HOST_PLATFORM says otherwise (a cross build) or it is Android (3.13 names that "android-...")."""
    uname = getattr(os, "uname", None)
    if os.name == "posix" and uname is not None and sys.platform == "linux" and "_PYTHON_HOST_PLATFORM" not in os.environ:
        osname, _, _, _, machine = uname()
        osname = osname.lower().replace("/", "")
        if osname[:5] == "linux":
            return "%s-%s" % (osname, machine.replace(" ", "_").replace("/", "-"))
    import sysconfig
    return sysconfig.get_platform()


def collect(path_entries):
    """The report as a dict, from the distributions on `path_entries` (sys.path of the target)."""
    if _SEEN is not None:
        for p in path_entries:
            if p:
                _note(p)
    search_path = [p for p in path_entries if p and os.path.isdir(p)]
    dists = {}  # type: dict[str, dict]  # a type comment: the helper runs on Python 3.6+
    order = []
    for base in search_path:
        try:
            entries = sorted(os.listdir(base))
        except OSError:
            continue
        for entry in entries:
            if not (entry.endswith(".dist-info") or entry.endswith(".egg-info") or entry.endswith(".egg")):
                continue
            if not relevant(normalize(candidate_name(entry)), True):
                continue
            info = read_dist(base, entry)
            if info is None or not relevant(info["normalized"], True):
                continue
            key = info["normalized"]
            if key in dists:  # first on sys.path wins, like the import system; keep the rest as shadowed
                dists[key]["shadowed"].append({"version": info["version"], "location": info["location"],
                                               "metadata_path": info["metadata_path"]})
                continue
            info["shadowed"] = []
            dists[key] = info
            order.append(key)
    for key in order:
        info = dists[key]
        files = {}
        for rel in files_for(key):
            path = find_file(rel, info["location"], search_path)
            if path is not None:
                text = read_text(path)
                if text is not None:
                    files[rel] = {"path": path, "text": text}
        info["files"] = files
        libs = bundled_libs(key, info["location"], search_path)
        if libs:
            info["bundled"] = libs

    impl = getattr(sys, "implementation", None)
    result = {
        "helper": 1,
        "executable": sys.executable,
        "version": python_version(),
        "implementation": impl.name if impl is not None else python_version(implementation=True),
        "prefix": sys.prefix,
        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
        "real_prefix": getattr(sys, "real_prefix", None),
        "platform": platform_tag(),
        "sys_path": list(path_entries),
        "site_dirs": site_dirs(),
        "dists": [dists[k] for k in order],
    }
    if _SEEN is not None:
        _note_startup(result["site_dirs"])
        result["witness"] = _SEEN
    return result


def _note_startup(sites):
    """What made this interpreter's sys.path besides the folders on it: its executable and pyvenv.cfg, the
    files of the modules and shared libraries it loaded to start (site, a sitecustomize, libpython), the site
    folders (one that does not exist yet, the user's, counts as absent), their .pth files and the folders those
    name (site adds only the ones that exist)."""
    exe = sys.executable
    if exe:
        _note(exe)
        here = os.path.dirname(exe)
        _note(os.path.join(here, "pyvenv.cfg"))
        _note(os.path.join(os.path.dirname(here), "pyvenv.cfg"))
    for name in sorted(sys.modules):
        path = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(path, str) and name != __name__:
            _note(path)
    maps = ""
    if sys.platform.startswith("linux"):
        try:  # not read_text: /proc/self/maps itself is no witness (it is another file in every process)
            with open("/proc/self/maps", "rb") as fh:
                maps = fh.read(1024 * 1024).decode("utf-8", "replace")
        except (OSError, IOError, ValueError):
            pass
    seen = set()
    for line in maps.splitlines():
        fields = line.split(None, 5)
        if len(fields) == 6 and fields[5].startswith("/") and fields[5] not in seen:
            seen.add(fields[5])
            _note(fields[5])
    for site_dir in sites:
        _note(site_dir)
        try:
            names = sorted(os.listdir(site_dir))
        except OSError:
            continue
        for name in names:
            if not name.endswith(".pth"):
                continue
            text = read_text(os.path.join(site_dir, name)) or ""
            for line in text.splitlines():
                line = line.rstrip()
                if line and not line.startswith("#") and not line.startswith(("import ", "import\t")):
                    _note(os.path.join(site_dir, line))


def main(witness=False):
    global _SEEN
    if witness:
        _SEEN = []
    result = collect(list(sys.path))
    out = MARKER + dumps(result) + "\n"
    stream = getattr(sys.stdout, "buffer", None)
    if stream is not None:
        stream.write(out.encode("ascii"))
        stream.flush()
    else:
        sys.stdout.write(out)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
