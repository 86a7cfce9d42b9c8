"""Reading Kafka's JAAS configuration lines (``...sasl.jaas.config``).

Kafka brokers take a login module per listener and mechanism, e.g.
``org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="secret";``.
Only the options matter here (PLAIN's ``user_<name>`` entries, OAUTHBEARER's
``unsecuredValidator*`` settings); the module name is checked against the mechanism so a
line pasted under the wrong key fails at start-up instead of refusing every client.
"""

from __future__ import annotations

import re

from broker.config.config import ConfigError

_LINE = re.compile(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\s*(.*?)\s*;?\s*$", re.DOTALL)
_OPTION = re.compile(r'\s*([^\s=]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s;]+)')


def parse_jaas(key: str, text: str, expected_module: str) -> dict[str, str]:
    """The options of one JAAS entry; ConfigError naming ``key`` when it does not parse."""
    match = _LINE.fullmatch(text)
    if match is None:
        raise ConfigError(
            f"{key} is not a JAAS login module line (expected '{expected_module} required key=\"value\" ...;')"
        )
    module, _, rest = match.groups()
    if module != expected_module:
        raise ConfigError(f"{key} names login module {module}; this mechanism needs {expected_module}")
    options: dict[str, str] = {}
    position = 0
    while position < len(rest):
        option = _OPTION.match(rest, position)
        if option is None:
            if rest[position:].strip():
                raise ConfigError(f"{key}: cannot read the options from {rest[position:]!r}")
            break
        name, value = option.groups()
        if value.startswith('"'):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        options[name] = value
        position = option.end()
    return options
