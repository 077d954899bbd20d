"""`envdoctor fleet`: snapshots of many nodes in one embedded store (SQLite), grouped by configuration.

Modules: ingest (read snapshots from folders, JSON lines, tarballs, stdin), store (the SQLite store and its
inputs ledger), fingerprint (the facts that matter for compatibility), report (groups, minorities, findings per
distinct configuration, reboots, lost GPUs), drift, gate, manifests (collection through Slurm, Kubernetes,
Ansible) and cli. docs/fleet.md describes the design.
"""
