"""Dynamic configs: the brokers' cluster-wide default, each broker's own layer, and group configs.

Kafka keeps ``kafka-configs --alter --entity-type brokers|groups`` changes in its metadata log;
Odradek keeps them in the ``dynamic-configs.json`` document (:mod:`broker.state.documents`): a
file in a single node's data directory, or one etcd key every broker of a cluster watches. It
holds ``{"default": {...}, "nodes": {"<node id>": {...}}, "groups": {group: {...}}}``: the
cluster-wide default, each broker's own layer under its node id (the document is shared, so one
broker's layer must not become another's) and the groups' configs. Each broker puts the default
and its own layer over its static config.

A single node used to keep its layer under ``"node"``. Such a document is read as the reading
broker's own layer: a data directory written before clusters loads as it did, and a node's file
carried into a cluster keeps its layer. Until the first change rewrites the document, every broker
of that cluster reads the layer as its own; the change stores it under the id of the broker that
made it.

A change is checked by Kafka's rules (:mod:`broker.config.dynamic_config`) against the content
it replaces, and takes effect when the document announces it, on every broker alike: the broker
layers are checked again as at start-up, since a broker may have another static config than the
one that made the change (invalid ones are left out with an ERROR, as Kafka skips invalid dynamic
configs, and the layers before stay in force), then the ``on_change`` callbacks run (the broker
gives its open logs their new defaults, the group coordinator its groups' configs).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from broker.config.config import BrokerConfig, ConfigError
from broker.config.dynamic_config import DEFAULT_ENTITY, DynamicConfigError, check_broker_layer
from broker.config.dynamic_rules import check_thread_counts, is_static
from broker.config.group_configs import MAX_CONFIGURED_GROUPS, check_group_configs
from broker.config.kafka_values import InvalidValue
from broker.state.documents import Change, Document, DocumentUnavailable
from wire.error_codes import ErrorCode

log = logging.getLogger(__name__)

Layer = dict[str, str]
Update = Callable[[Layer], Layer]
"""A resource's new configs from its current ones (what a request's changes make of them)."""


@dataclass(frozen=True)
class Saved:
    """The document's content."""

    default: Layer
    nodes: dict[str, Layer]
    groups: dict[str, Layer]

    def without_static(self) -> Saved:
        """The broker layers without keys Kafka keeps static (an older Odradek could save
        ``log.retention.hours``): the next change stores them no more."""
        return Saved(
            _dynamic_only(self.default),
            {node: _dynamic_only(layer) for node, layer in self.nodes.items()},
            self.groups,
        )


class DynamicConfigStore:
    """The dynamic configs this broker applies, and the document they come from."""

    FILE_NAME = "dynamic-configs.json"

    def __init__(self, document: Document, config: BrokerConfig) -> None:
        self._document = document
        self._config = config
        self._node = str(config.node_id)
        self.groups: dict[str, Layer] = {}
        self.on_change: list[Callable[[], None]] = []
        self._adopt(document.current())
        document.listen(self._adopt)

    async def alter_broker(self, entity: str, update: Update, *, validate_only: bool = False) -> None:
        """Change the cluster-wide default (``entity == DEFAULT_ENTITY``) or this broker's layer.

        Refused (:class:`DynamicConfigError`) by Kafka's rules, as a start-up config would be
        (types, the log settings derived from it), and when the running broker would refuse it
        as Kafka's does (thread counts that more than halve or double at once)."""
        await self._store(partial(self._broker_change, entity, update), validate_only)

    async def alter_group(self, group: str, update: Update, *, validate_only: bool = False) -> None:
        """Change a group's configs (none left: the group is forgotten)."""
        await self._store(partial(self._group_change, group, update), validate_only)

    async def _store(self, change: Change, validate_only: bool) -> None:
        if validate_only:
            change(self._document.current())
        else:
            await self._document.replace(change)

    def _broker_change(self, entity: str, update: Update, current: bytes | None) -> bytes:
        saved = self._readable(current)
        default, node = saved.default, saved.nodes.get(self._node, {})
        if entity == DEFAULT_ENTITY:
            default = update(default)
        else:
            node = update(node)
        result = _layered(self._config, default, node)
        try:
            check_thread_counts(self._config.configured, result.configured)
        except InvalidValue as exc:
            raise DynamicConfigError(str(exc)) from None
        return _encode(Saved(default, {**saved.nodes, self._node: node}, saved.groups))

    def _group_change(self, group: str, update: Update, current: bytes | None) -> bytes:
        saved = self._readable(current)
        updated = update(saved.groups.get(group, {}))
        check_group_configs(self._config, updated)
        if updated and group not in saved.groups and len(saved.groups) >= MAX_CONFIGURED_GROUPS:
            raise DynamicConfigError(
                f"At most {MAX_CONFIGURED_GROUPS} groups may have configs; delete some group's configs first",
                ErrorCode.POLICY_VIOLATION,
            )
        groups = {name: configs for name, configs in saved.groups.items() if name != group}
        if updated:
            groups[group] = updated
        return _encode(Saved(saved.default, saved.nodes, groups))

    def _readable(self, current: bytes | None) -> Saved:
        try:
            return _decode(current, self._node).without_static()
        except ValueError as exc:  # overwriting what cannot be read would lose every config in it
            raise DocumentUnavailable(
                f"the stored dynamic configs ({self._document.name}) cannot be read ({exc}); "
                "restore them, then retry"
            ) from exc

    def _adopt(self, content: bytes | None) -> None:
        """Apply the document's content; what cannot be read (another broker's) changes nothing."""
        try:
            saved = _decode(content, self._node)
        except ValueError as exc:
            log.error(
                "the new %s cannot be read (%s); the dynamic configs read before stay in force",
                self._document.name,
                exc,
            )
            return
        self._apply_layers(saved.default, saved.nodes.get(self._node, {}))
        self.groups = saved.groups
        for changed in self.on_change:
            changed()

    def _apply_layers(self, default: Layer, node: Layer) -> None:
        """Put the layers under the config. Keys Kafka keeps static are dropped with a WARNING;
        layers the static config makes invalid are left out with an ERROR."""
        static = sorted(key for key in (*default, *node) if is_static(key))
        if static:
            log.warning("ignoring saved dynamic broker configs Kafka keeps static: %s", ", ".join(static))
        default, node = _dynamic_only(default), _dynamic_only(node)
        try:
            _layered(self._config, default, node)
        except DynamicConfigError as exc:
            log.error("ignoring the dynamic broker configs in %s: %s", self._document.name, exc)
            return
        self._config.set_dynamic(default, node)


def _layered(config: BrokerConfig, default: Layer, node: Layer) -> BrokerConfig:
    """``config`` under these layers, each checked by Kafka's rules, and the whole as a start-up
    config would be."""
    check_broker_layer(default, per_broker=False)
    check_broker_layer(node, per_broker=True)
    result = config.with_dynamic(default, node)
    try:
        result.validate()
    except ConfigError as exc:
        raise DynamicConfigError(str(exc)) from None
    return result


def _dynamic_only(layer: Layer) -> Layer:
    return {key: value for key, value in layer.items() if not is_static(key)}


def _decode(content: bytes | None, node: str) -> Saved:
    """The document's content (None: nothing saved yet), a legacy ``"node"`` layer as ``node``'s;
    malformed content raises ValueError."""
    if content is None:
        return Saved({}, {}, {})
    saved = json.loads(content)
    if not isinstance(saved, dict):
        raise ValueError("not a JSON object")
    nodes = saved["nodes"] if "nodes" in saved else {node: saved.get("node", {})}
    return Saved(_layer(saved.get("default", {})), _layers(nodes), _layers(saved.get("groups", {})))


def keyed_by_node(content: bytes, node_id: int) -> bytes:
    """A single node's document with its legacy ``"node"`` layer keyed by ``node_id``, as
    ``odradek cluster-import`` carries it into a cluster (where every broker would otherwise
    read an unkeyed layer as its own). Malformed content raises ValueError."""
    return _encode(_decode(content, str(node_id)))


def _layers(value: object) -> dict[str, Layer]:
    if not isinstance(value, dict):
        raise ValueError(f"not a JSON object: {value!r:.80}")
    return {name: _layer(layer) for name, layer in value.items()}


def _layer(value: object) -> Layer:
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise ValueError(f"not an object of strings: {value!r:.80}")
    return value


def _encode(saved: Saved) -> bytes:
    nodes = {node: layer for node, layer in saved.nodes.items() if layer}
    document = {"default": saved.default, "nodes": nodes, "groups": saved.groups}
    return json.dumps(document, indent=1, sort_keys=True).encode()
