"""Dynamic configs' rules: what a change of a broker layer or a group's configs may be.

The layers and group configs themselves are kept by :mod:`broker.state.dynamic_config_store`.
A broker change is checked by Kafka's rules (:mod:`broker.config.dynamic_rules`); each layer
holds at most ``MAX_LAYER_KEYS`` keys and ``MAX_LAYER_BYTES`` of text (Odradek's bounds: Kafka
keeps any number of custom keys).
"""

from __future__ import annotations

from broker.config.config_defs import ConfigType
from broker.config.dynamic_rules import check_change
from broker.config.kafka_values import InvalidValue, parse
from wire.error_codes import ErrorCode

DEFAULT_ENTITY = ""  # the resource name of the cluster-wide default (``--entity-default``)
MAX_LAYER_KEYS = 1000
MAX_LAYER_BYTES = 1 << 20


class DynamicConfigError(Exception):
    """A change Kafka refuses; ``code`` and the message are Kafka's."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
        super().__init__(message)
        self.code = code


def check_type(key: str, type_: ConfigType, value: str, code: ErrorCode = ErrorCode.INVALID_REQUEST) -> None:
    """Refuse a value that does not parse as ``type_``, in the words of Kafka's ConfigDef."""
    try:
        parse(key, type_, value)
    except InvalidValue as exc:
        raise DynamicConfigError(str(exc), code) from None


def check_broker_layer(updated: dict[str, str], per_broker: bool) -> None:
    """Kafka's rules for a broker resource's new set of configs, then Odradek's size bounds."""
    try:
        check_change(updated, per_broker)
    except InvalidValue as exc:
        raise DynamicConfigError(str(exc)) from None
    size = sum(len(key) + len(value) for key, value in updated.items())
    if len(updated) > MAX_LAYER_KEYS or size > MAX_LAYER_BYTES:
        raise DynamicConfigError(
            f"At most {MAX_LAYER_KEYS} dynamic broker configs of {MAX_LAYER_BYTES} bytes in all may be set "
            f"for one resource (asked: {len(updated)} of {size} bytes); delete some first",
            ErrorCode.POLICY_VIOLATION,
        )
