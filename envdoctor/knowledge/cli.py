"""``envdoctor matrices list | show | verify | refresh``: the compatibility data, inspected and kept current.

Exit codes: 0 fine; 1 ``verify`` found a disagreement (with ``--strict`` also a release the index lacks);
2 bad usage, no index configured, index unreachable / broken, cache not writable.

The index client, verify and refresh are imported by the sub-commands that use them (start-up speed: `matrices
list` and `show` load no network code).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import click

from envdoctor.cli_options import Count, Seconds, complete_table
from envdoctor.errors import BadInput
from envdoctor.knowledge import bundled_dir, default_cache_dir, load_matrices
from envdoctor.knowledge.rows import TABLE_NAMES, row_dict, table_rows
from envdoctor.progress import Status
from envdoctor.snapshot_io import dump_json

def _load(cache_dir: Optional[str]):
    return load_matrices(cache_dir=Path(cache_dir) if cache_dir else None)


def _where(m, table: str) -> Dict[str, Any]:
    parts = [p for p in (m.sources.get(table) or "").split(" + ") if p]
    bundled = str(bundled_dir())
    cache = [p for p in parts if not p.startswith(bundled)]
    return {"bundled": any(p.startswith(bundled) for p in parts), "cache": cache[0] if cache else None, "files": parts}


@click.group(name="matrices")
def matrices() -> None:
    """The compatibility data: list and show the tables, verify them against the package index, refresh them."""


@matrices.command(name="list")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
@click.option("--cache-dir", metavar="DIR", help="Read refreshed tables from DIR instead of the default user cache.")
def list_cmd(fmt: str, cache_dir: Optional[str]) -> None:
    """Each table: rows, when collected, where loaded from, how many rows are UNVERIFIED."""
    m = _load(cache_dir)
    out = []
    for table in TABLE_NAMES:
        rows = table_rows(m, table)
        all_rows = [r for rs in rows.values() for r in rs]
        where = _where(m, table)
        cache_rows = sum(1 for r in all_rows if where["cache"] and str(r.origin).startswith(where["cache"]))
        out.append({
            "table": table,
            "rows": len(all_rows),
            "by_kind": {k: len(v) for k, v in rows.items()},
            "collected": (m.table_collected or {}).get(table),
            "loaded_from": "bundled + user cache" if where["cache"] and where["bundled"] else
                           ("user cache" if where["cache"] else ("bundled" if where["bundled"] else "nothing")),
            "files": where["files"],
            "cache_rows": cache_rows,
            "unverified": sum(1 for r in all_rows if getattr(r, "unverified", False)),
        })
    if fmt == "json":
        click.echo(dump_json({"collected": m.collected, "tables": out, "warnings": list(m.warnings)}))
        return
    click.echo(f"{'table':<18} {'rows':>5}  {'collected':<10}  {'UNVERIFIED':>10}  loaded from")
    for t in out:
        where = t["loaded_from"]
        if t["cache_rows"]:
            where += f" ({t['cache_rows']} rows from {Path(t['files'][-1])})"
        click.echo(f"{t['table']:<18} {t['rows']:>5}  {t['collected'] or '?':<10}  {t['unverified']:>10}  {where}")
    for w in m.warnings:
        click.echo(f"warning: {w}", err=True)


# long prose fields: in the JSON and TOML views, not in the table's cells
_PROSE = ("source", "verified", "note", "why", "summary")
_CELL = 28


def _cell(v: Any) -> str:
    text = v if isinstance(v, str) else ("yes" if v is True else "no" if v is False else
                                         ", ".join(map(str, v)) if isinstance(v, (list, tuple)) else
                                         "" if v is None else str(v))
    text = " ".join(str(text).split())
    return text if len(text) <= _CELL else text[:_CELL - 1] + "…"


def _table_text(rows: List[Dict[str, Any]]) -> str:
    """One table per row kind: a column per field (prose fields left out), the row's file:line last."""
    out: List[str] = []
    for kind in dict.fromkeys(r["kind"] for r in rows):
        group = [r for r in rows if r["kind"] == kind]
        cols = [k for k in dict.fromkeys(k for r in group for k in r)
                if k not in ("kind", "origin", "unverified", *_PROSE) and not k.endswith("_note")
                and not all(isinstance(r.get(k), (dict, type(None))) for r in group)]
        cells = [[_cell(r.get(c)) for c in cols] + [("UNVERIFIED " if r["unverified"] else "")
                                                    + Path(str(r.get("origin", ""))).name] for r in group]
        head = cols + ["from"]
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(head)]
        out.append(f"{kind} ({len(group)} rows)")
        out.append("  ".join(h.ljust(w) for h, w in zip(head, widths)).rstrip())
        out.append("  ".join("-" * w for w in widths))
        out += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
        out.append("")
    out.append("source and verified of each row: --format toml (or json)")
    return "\n".join(out)


@matrices.command(name="show")
@click.argument("table", shell_complete=complete_table)
@click.option("--format", "fmt", type=click.Choice(("text", "toml", "json")), default="text", show_default=True,
              help="text: a table per row kind; toml: every field of every row, with the file:line it came from; "
                   "json: a list of row objects.")
@click.option("--cache-dir", metavar="DIR", help="Read refreshed tables from DIR instead of the default user cache.")
def show_cmd(table: str, fmt: str, cache_dir: Optional[str]) -> None:
    """The rows of TABLE (json: a list of row objects with source and verified)."""
    name = table.strip().lower()
    if name not in TABLE_NAMES:
        raise BadInput(f"unknown table {table!r}; tables: {', '.join(TABLE_NAMES)}")
    m = _load(cache_dir)
    rows = [row_dict(kind, r) for kind, rs in table_rows(m, name).items() for r in rs]
    if fmt == "json":
        click.echo(dump_json(rows))
        return
    if fmt == "text":
        click.echo(_table_text(rows))
        return
    from envdoctor.knowledge.refresh import _toml_key, _toml_value

    lines = []
    for row in rows:
        flag = "  # UNVERIFIED" if row["unverified"] else ""
        lines.append(f"[[{row['kind']}]]  # {row.get('origin', '')}{flag}")
        for k, v in row.items():
            if k in ("kind", "origin", "unverified"):
                continue
            lines.append(f"{_toml_key(k)} = {_toml_value(v)}")
        lines.append("")
    click.echo("\n".join(lines).rstrip("\n"))


def _client(index_urls, timeout: float):
    from envdoctor.knowledge.index import IndexClient, configured_indexes

    conf = configured_indexes(explicit=index_urls)
    return IndexClient(conf.urls, timeout=timeout, cert=conf.cert), conf


_index_option = click.option(
    "--index-url", "index_urls", multiple=True, metavar="URL",
    help="Package index (simple API; http(s):// or file://) to read instead of the ones pip is configured with. "
         "Repeatable.")
_timeout_option = click.option("--timeout", type=Seconds(0.1, 600), default=15.0, show_default=True,
                               help="Seconds each index request may take in all, connect to last byte (each is retried twice).")


@matrices.command(name="verify")
@_index_option
@click.option("--table", "tables", type=click.Choice(("pytorch", "tensorflow", "jax", "all")), default="all",
              show_default=True)
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
@click.option("--strict", is_flag=True, help="Also fail (exit 1) when a covered release is not on the index.")
@_timeout_option
@click.option("--total-timeout", type=Seconds(1, 3600), default=600.0, show_default=True,
              help="Seconds all range reads of wheels without a metadata file may take together.")
@click.option("--workers", type=Count(1, 32), default=8, show_default=True,
              help="Wheels read at the same time (HTTP range requests).")
@click.option("--cache-dir", metavar="DIR", help="Verify the tables as overlaid by the cache in DIR.")
@click.option("--sample", type=Count(0, 100000), default=48, show_default=True,
              help="Other wheels of the releases (every platform and Python tag) read besides each release's first "
                   "Linux x86_64 wheel, drawn at random; 0: the first wheels only.")
@click.option("--seed", type=Count(0, 2 ** 31), default=0, show_default=True,
              help="Seed of the sample's draw (the same seed draws the same wheels from the same index).")
def verify_cmd(index_urls, tables: str, fmt: str, strict: bool, timeout: float, total_timeout: float, workers: int,
               cache_dir: Optional[str], sample: int, seed: int) -> None:
    """Compare the tables with the index's metadata. Exit 0 all agree, 1 a disagreement, 2 index unusable."""
    from envdoctor.knowledge.verify import TABLE_CHOICES, render_text, verify

    client, _ = _client(index_urls, timeout)
    m = _load(cache_dir)
    chosen = TABLE_CHOICES if tables == "all" else (tables,)
    with Status() as status:
        result = verify(m, client, chosen, workers=workers, total_timeout=total_timeout, status=status,
                        sample=sample, seed=seed)
    if fmt == "json":
        click.echo(dump_json(result.to_dict(strict)))
    else:
        click.echo(render_text(result, strict))
    sys.exit(result.exit_code(strict))


@matrices.command(name="refresh")
@_index_option
@click.option("--cache-dir", metavar="DIR",
              help="Write the tables to DIR (default: $ENVDOCTOR_CACHE_DIR/matrices, $XDG_CACHE_HOME/envdoctor/matrices "
                   "or ~/.cache/envdoctor/matrices).")
@click.option("--dry-run", is_flag=True, help="Show what would be added; write nothing.")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
@_timeout_option
def refresh_cmd(index_urls, cache_dir: Optional[str], dry_run: bool, fmt: str, timeout: float) -> None:
    """Add releases newer than the bundled data, derived from index metadata, to the user cache."""
    from envdoctor.knowledge.refresh import refresh, render_text, write_cache

    client, _ = _client(index_urls, timeout)
    result = refresh(client)
    target = Path(cache_dir) if cache_dir else default_cache_dir()
    if dry_run:
        result.dry_run = True
    else:
        write_cache(result, target)
    if fmt == "json":
        data = result.to_dict()
        data["cache_dir"] = str(target)
        click.echo(dump_json(data))
    else:
        click.echo(render_text(result))
