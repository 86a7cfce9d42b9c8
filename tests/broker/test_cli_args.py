"""``odradek serve`` flags are shortcuts for config keys: the flag and the key mean the same."""

from __future__ import annotations

from broker.cli.main import build_parser, config_from_args


def test_log_requests_flag_switches_on_the_request_log() -> None:
    assert config_from_args(build_parser().parse_args(["serve", "--log-requests"])).get_bool(
        "log.requests.enable"
    )
    assert not config_from_args(build_parser().parse_args(["serve"])).get_bool("log.requests.enable")
