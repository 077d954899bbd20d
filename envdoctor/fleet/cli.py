"""`envdoctor fleet ...`: ingest snapshots of many nodes, report, gate, drift, and collection manifests.

Exit codes: 0 done; 1 `fleet gate` found nodes that would fail (with `fleet ingest --strict`: a bad snapshot);
2 bad usage or input: also a store that is missing, damaged or cannot be read (report, gate, drift), and an
ingest where an input could not be read at all (missing, not a regular file, over the per-input cap: the other
inputs are ingested) or the store could not be written (it is left as it was). The work is in the fleet
package's modules; this one translates the options.
"""
from __future__ import annotations

import functools
import sys
from typing import Any, Callable, List, Optional, Tuple

import click

from envdoctor.cli_options import Count
from envdoctor.doctor import prepare_judgement, split_ids
from envdoctor.emit import emit
from envdoctor.errors import BadInput
from envdoctor.fleet import drift as D
from envdoctor.fleet import gate as G
from envdoctor.fleet import manifests as M
from envdoctor.fleet import report as R
from envdoctor.fleet.ingest import DEFAULT_MAX_INPUT, open_store, parse_labels, parse_size
from envdoctor.fleet.ingest import ingest as do_ingest
from envdoctor.progress import Status
from envdoctor.fleet.store import Store, store_path
from envdoctor.snapshot_io import dump_json

REPORT_FORMATS = ("text", "json", "markdown", "html")


def store_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    @click.option("--store", "store_file", metavar="FILE", envvar="ENVDOCTOR_FLEET_STORE",
                  help="The fleet store (SQLite). Default: $ENVDOCTOR_FLEET_STORE or ./envdoctor-fleet.db.")
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


def where_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    @click.option("--where", "where", multiple=True, metavar="KEY=VALUE",
                  help="Only nodes with this label (from `fleet ingest --label`), e.g. partition=gpu (repeatable).")
    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    return wrapper


def _open(store_file: Optional[str]) -> Store:
    """The store, read-only: report, gate and drift never write it (a damaged one: one line, exit 2)."""
    return open_store(store_path(store_file))


def _emit(data: Any, fmt: str, text_fn: Optional[Callable[[Any], str]], output: Optional[str]) -> None:
    if fmt == "json" or text_fn is None:  # every text format names its renderer
        emit(dump_json(data), output)
    else:
        emit(text_fn(data), output)


@click.group(name="fleet")
def fleet() -> None:
    """Many nodes: ingest their snapshots, group them by configuration, gate an install against all of them."""


@fleet.command()
@click.argument("paths", nargs=-1, metavar="PATH...")
@store_option
@click.option("--label", "labels", multiple=True, metavar="KEY=VALUE",
              help="Label every snapshot of this ingest (e.g. partition=gpu); `--where` selects by it.")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
@click.option("--strict", is_flag=True, help="Exit 1 when a snapshot was bad (they are skipped either way).")
@click.option("--max-input", "max_input", metavar="SIZE", default=None,
              help=f"The most one input (a file, a tarball member, stdin) may hold, e.g. 512M, 4G "
                   f"(default {DEFAULT_MAX_INPUT // 1024 ** 3}G); a larger one is refused unread.")
@click.option("--rebuild", is_flag=True,
              help="Rebuild the store from its inputs ledger (done anyway when the store is damaged); PATH optional.")
def ingest(paths: Tuple[str, ...], store_file: Optional[str], labels: Tuple[str, ...], fmt: str, strict: bool,
           max_input: Optional[str], rebuild: bool) -> None:
    """Read snapshots from folders, JSON-lines files, tarballs or - (stdin) into the store.

    Ingesting the same snapshot (node and time) twice is a no-op; a bad snapshot is reported with its file and
    skipped. Exit 2 when an input could not be read at all (the others are ingested) or the store could not be
    written (it is left as it was)."""
    if not paths and not rebuild:
        raise BadInput("name the snapshots to ingest (PATH..., - for stdin), or --rebuild")
    if list(paths).count("-") > 1:
        raise BadInput("- (stdin) can be named once")
    cap = parse_size(max_input) if max_input is not None else DEFAULT_MAX_INPUT
    notes: List[str] = []
    with Status() as status:
        result = do_ingest(store_path(store_file), list(paths), parse_labels(labels), notes, max_input=cap,
                           rebuild=rebuild, progress=status)
    for n in notes:
        click.echo(f"envdoctor: {n}", err=True)
    for where, why in result.refused:
        click.echo(f"envdoctor: cannot ingest {where}: {why}", err=True)
    for where, why in result.bad:
        click.echo(f"envdoctor: skipped {where}: {why}", err=True)
    if fmt == "json":
        _emit(result.to_dict(), "json", None, None)
    else:
        click.echo(f"{result.read} snapshots read: {result.new} new, {result.duplicates} already in the store, "
                   f"{len(result.bad)} bad (skipped)"
                   + (f"; {len(result.refused)} inputs not read" if result.refused else ""))
    sys.exit(2 if result.refused else 1 if strict and result.bad else 0)


@fleet.command()
@store_option
@where_option
@click.option("--format", "fmt", type=click.Choice(REPORT_FORMATS), default="text", show_default=True)
@click.option("--only", multiple=True, metavar="IDS", help="Run only these rules (as check --only).")
@click.option("--skip", multiple=True, metavar="IDS", help="Skip these rules.")
@click.option("-o", "--output", metavar="FILE", help="Write the report to FILE (atomically) instead of stdout.")
def report(store_file: Optional[str], where: Tuple[str, ...], fmt: str, only: Tuple[str, ...], skip: Tuple[str, ...],
           output: Optional[str]) -> None:
    """Nodes grouped by configuration: the majority, each minority and what differs, findings per configuration,
    nodes needing a reboot, lost or hidden GPUs."""
    prepared = prepare_judgement(split_ids(only), split_ids(skip))
    store = _open(store_file)
    try:
        rep = R.build(store, parse_labels(where), prepared)
    finally:
        store.close()
    renderer: Optional[Callable[[Any], str]] = {"text": R.render_text, "markdown": R.render_markdown, "html": R.render_html}.get(fmt)
    _emit(rep, fmt, renderer, output)


@fleet.command(name="gate")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@store_option
@where_option
@click.option("--strict", is_flag=True, help="Warnings fail a node too.")
@click.option("--fresh", is_flag=True, help="Install into an empty environment (ignore what the nodes have installed).")
@click.option("--pre", is_flag=True, help="Allow pre-releases, as pip --pre.")
@click.option("--only", multiple=True, metavar="IDS", help="Run only these rules.")
@click.option("--skip", multiple=True, metavar="IDS", help="Skip these rules.")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
@click.option("-o", "--output", metavar="FILE", help="Write the answer to FILE (atomically) instead of stdout.")
def gate_cmd(files: Tuple[str, ...], store_file: Optional[str], where: Tuple[str, ...], strict: bool, fresh: bool,
             pre: bool, only: Tuple[str, ...], skip: Tuple[str, ...], fmt: str, output: Optional[str]) -> None:
    """Would this requirements / pyproject / lock install work on every node? `envdoctor gate` judged against each
    distinct configuration: which nodes would fail and why. Exit 1 when any would."""
    store = _open(store_file)
    try:
        res = G.run(store, files, parse_labels(where), strict=strict, only=split_ids(only), skip=split_ids(skip),
                    fresh=fresh, pre=pre)
    finally:
        store.close()
    _emit(res, fmt, G.render_text, output)
    sys.exit(1 if res["failing_nodes"] else 0)


@fleet.command()
@click.option("--since", required=True, metavar="DATE", help="Compare each node's state at DATE (ISO 8601)...")
@click.option("--until", metavar="DATE", help="...with its state at DATE (default: its latest snapshot).")
@store_option
@where_option
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
def drift(since: str, until: Optional[str], store_file: Optional[str], where: Tuple[str, ...], fmt: str) -> None:
    """What changed on each node since DATE: driver, CUDA, frameworks, GPUs, labels; new and vanished nodes."""
    store = _open(store_file)
    try:
        res = D.run(store, D.parse_date(since, "--since"), D.parse_date(until, "--until") if until else None,
                    parse_labels(where))
    finally:
        store.close()
    _emit(res, fmt, D.render_text, None)


@fleet.command()
@click.argument("engine", type=click.Choice(("k8s", "slurm", "ansible")))
@click.option("--nodes", type=Count(1, 100_000), default=1, show_default=True, help="Slurm / k8s --job: how many nodes.")
@click.option("--partition", metavar="NAME", help="Slurm: the partition (also labels the ingest line it prints).")
@click.option("--dir", "out_dir", default="envdoctor-fleet", show_default=True, metavar="DIR",
              help="Where the snapshots go (Slurm: a shared folder; k8s: a hostPath on each node; Ansible: here).")
@click.option("--image", default="envdoctor:latest", show_default=True, help="k8s: an image with envdoctor installed.")
@click.option("--namespace", default="default", show_default=True, help="k8s: the namespace.")
@click.option("--job", is_flag=True, help="k8s: an Indexed Job over --nodes nodes instead of a DaemonSet.")
@click.option("--runtime-class", default="nvidia", show_default=True, help="k8s: runtimeClassName ('' for none).")
@click.option("--hosts", default="gpu", show_default=True, help="Ansible: the inventory group.")
@click.option("--envdoctor", "command", default="envdoctor", show_default=True, metavar="CMD",
              help="Slurm: how the nodes run envdoctor (e.g. /shared/venv/bin/envdoctor).")
@click.option("-o", "--output", metavar="FILE", help="Write to FILE instead of stdout.")
def manifest(engine: str, nodes: int, partition: Optional[str], out_dir: str, image: str, namespace: str, job: bool,
             runtime_class: str, hosts: str, command: str, output: Optional[str]) -> None:
    """What a scheduler needs to take one snapshot per node: a Kubernetes manifest, an sbatch script, a playbook."""
    if engine == "k8s":
        text = M.k8s_text(M.k8s(image, namespace, out_dir if out_dir.startswith("/") else "/var/lib/" + out_dir,
                                job=job, nodes=nodes, runtime_class=runtime_class or None), namespace)
    elif engine == "slurm":
        text = M.slurm(nodes, out_dir, partition, envdoctor=command)
    else:
        text = M.ansible(hosts, out_dir)
    emit(text, output)
