"""Every recorded fixture says where it came from (tests/fixtures/<area>/SOURCES.toml)."""
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python < 3.11
    import tomli as tomllib

FIX = Path(__file__).parent / "fixtures"


def _fixture_files():
    for path in sorted(FIX.rglob("*")):
        if path.is_file() and path.name != "SOURCES.toml" and "__pycache__" not in path.parts:
            yield path


def test_every_fixture_has_a_source():
    missing = []
    for path in _fixture_files():
        area = path.relative_to(FIX).parts[0]
        sources_file = FIX / area / "SOURCES.toml"
        assert sources_file.exists(), f"{sources_file} is missing"
        sources = tomllib.loads(sources_file.read_text())
        key = str(path.relative_to(FIX / area))
        entry = sources.get(key) or sources.get(path.name)
        if not entry or not str(entry.get("source", "")).strip():
            missing.append(str(path.relative_to(FIX)))
    assert not missing, f"fixtures without a source: {missing}"


def test_sources_name_existing_files():
    for sources_file in FIX.glob("*/SOURCES.toml"):
        for key in tomllib.loads(sources_file.read_text()):
            assert (sources_file.parent / key).exists() or any(sources_file.parent.rglob(key)), f"{sources_file}: {key} does not exist"
