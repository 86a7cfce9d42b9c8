"""``odradek cluster-import``: carry a single node's ACLs, SCRAM credentials, client quotas,
dynamic configs and client-metrics subscriptions into a cluster.

A single node keeps each of these in a file of its data directory; a cluster keeps each in one
etcd key that every broker watches (``broker/state/documents.py``), holding the very same bytes.
So moving a node into a cluster is copying its files into those keys, which this command does,
once per document and only where the cluster has none yet (a cluster's own ACLs are never
overwritten by an old file). The dynamic configs' per-broker layer is keyed by the node's id on
the way (``node.id`` from the data directory's ``meta.properties``, or ``--node-id``). Run it
before the brokers start, or while they run: they take the imported documents at once.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from broker.cli.registry import AdminError
from broker.cli.table import render_table
from broker.services.cluster.layout import DEFAULT_ROOT, Layout

if TYPE_CHECKING:
    from broker.services.cluster.etcd_client import EtcdClient


def add_cluster_import_command(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "cluster-import",
        help="copy a single node's ACLs, SCRAM users, quotas, dynamic configs and subscriptions into a cluster",
    )
    parser.add_argument("--data-dir", required=True, help="the single node's data directory (log.dirs)")
    parser.add_argument("--cluster", required=True, metavar="etcd://HOST:PORT,...", help="the cluster's etcd")
    parser.add_argument(
        "--prefix", default=DEFAULT_ROOT, help=f"cluster.etcd.prefix (default {DEFAULT_ROOT})"
    )
    parser.add_argument("--node-id", type=int, help="the node whose dynamic broker configs these are")
    parser.set_defaults(run=run_cluster_import)


def documents() -> tuple[str, ...]:
    """The file names of the documents a single node keeps and a cluster shares, in import order."""
    # The stores (and the log package under them) load when the command runs, not with the CLI.
    from broker.services.security.acl_store import ACL_FILE
    from broker.services.security.scram_store import ScramCredentialStore
    from broker.state.client_metrics_store import SubscriptionStore
    from broker.state.dynamic_config_store import DynamicConfigStore
    from broker.state.quota_store import QuotaStore

    return (
        ACL_FILE,
        ScramCredentialStore.FILE_NAME,
        QuotaStore.FILE_NAME,
        DynamicConfigStore.FILE_NAME,
        SubscriptionStore.FILE_NAME,
    )


def node_id_of(data_dir: Path) -> int:
    """``node.id`` from the data directory's ``meta.properties``."""
    try:
        lines = (data_dir / "meta.properties").read_text().splitlines()
    except OSError as exc:
        raise AdminError(f"{data_dir} has no readable meta.properties ({exc}); pass --node-id") from None
    values = dict(line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    return int(values.get("node.id", "1"))


def run_cluster_import(args: argparse.Namespace) -> str:
    # The etcd client (httpx) is imported when the command runs: the CLI's other commands start
    # without it (broker/cli/main.py).
    from broker.services.cluster.etcd_client import parse_endpoints

    data_dir = Path(args.data_dir)
    node_id = args.node_id if args.node_id is not None else node_id_of(data_dir)
    try:
        endpoints = parse_endpoints(args.cluster)
    except ValueError as exc:
        raise AdminError(f"--cluster: {exc}") from None
    rows = trio.run(import_documents, data_dir, endpoints, Layout(args.prefix), node_id)
    return render_table(["document", "bytes", "result"], rows)


async def import_documents(
    data_dir: Path, endpoints: list[str], layout: Layout, node_id: int
) -> list[tuple[str, str, str]]:
    """Each document of ``data_dir`` put under its key where the cluster has none: a row each."""
    from broker.services.cluster.etcd_client import EtcdClient, EtcdError

    rows = []
    try:
        async with EtcdClient(endpoints) as client:
            for name in documents():
                rows.append(await _import_one(client, layout, data_dir / name, node_id))
    except EtcdError as exc:
        raise AdminError(f"the cluster's etcd did not answer ({exc}); check --cluster") from None
    return rows


async def _import_one(client: EtcdClient, layout: Layout, path: Path, node_id: int) -> tuple[str, str, str]:
    from broker.services.cluster.etcd_client import Compare, Put
    from broker.services.cluster.etcd_documents import MAX_DOCUMENT_BYTES
    from broker.state.dynamic_config_store import DynamicConfigStore, keyed_by_node

    if not path.exists():
        return path.name, "-", "not in the data directory"
    content = path.read_bytes()
    if path.name == DynamicConfigStore.FILE_NAME:
        try:
            content = keyed_by_node(content, node_id)
        except ValueError as exc:
            return path.name, str(len(content)), f"not imported: unreadable ({exc})"
    if len(content) > MAX_DOCUMENT_BYTES:
        return (
            path.name,
            str(len(content)),
            f"not imported: over the {MAX_DOCUMENT_BYTES} bytes of one etcd key",
        )
    key = layout.document(path.name)
    result = await client.txn([Compare.create_revision(key, 0)], [Put(key, content)], [])
    return (
        path.name,
        str(len(content)),
        "imported" if result.succeeded else "skipped: the cluster has its own",
    )
