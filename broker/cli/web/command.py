"""``odradek console``: serve the web console for the cluster at ``--bootstrap``.

Why this web stack.  The console is its own process (never the broker's trio loop), its Kafka
calls are the blocking ones of :class:`broker.client.admin_client.KafkaConnection`, and its
pages are server-rendered HTML with a few lines of the project's own JavaScript.  So it needs a
small web framework that can hand blocking work to a thread pool, serve its own static files
and render templates safely, and a server that runs it without compiled extras:

- Starlette: a maintained, widely used ASGI toolkit (routing, responses, static files,
  ``run_in_threadpool``) with no ORM, form or session layer the console would not use.  Flask
  would serve too, but its development server is not for use beyond a laptop; Django brings far
  more than a console needs.
- uvicorn: the ASGI server Starlette's authors recommend, here on h11 (pure Python), which the
  project already has through httpx.
- Jinja2: HTML templates with autoescaping, so a record's bytes are always text on the page.

Charts are SVG drawn by :mod:`broker.cli.web.charts`; no file of another project is served or
committed, and a page needs no network but the console's own.  The console listens on
127.0.0.1 unless ``--listen`` says otherwise, and changes nothing on the cluster unless
started with ``--allow-writes``.
"""

from __future__ import annotations

import argparse
import logging

from broker.cli.registry import CONNECTION, AdminError
from broker.cli.web.sampler import INTERVAL_S, Sampler

DEFAULT_LISTEN = "127.0.0.1:8080"
MAX_CONNECTIONS = 64
"""Browser connections served at once; beyond, uvicorn answers 503 (requests queue behind one
lock to the broker anyway, and each holds a worker thread while it waits)."""
BROKER_TIMEOUT_S = 10.0
"""How long one request to a broker may take before the page says it stopped answering."""


def listen_address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise AdminError(f"--listen expects HOST:PORT, got {text!r}")
    return host or "127.0.0.1", int(port)


def run_console(args: argparse.Namespace) -> None:
    """Serve until Ctrl-C or SIGTERM (uvicorn's own handling); the sampler stops with it."""
    import uvicorn

    from broker.cli.web.app import build_app
    from broker.cli.web.context import Console
    from broker.cli.web.history import History
    from broker.cli.web.links import BrokerLinks

    host, port = listen_address(args.listen)
    if not 0.5 <= args.sample_seconds <= 3600:
        raise AdminError("--sample-seconds must be between 0.5 and 3600")
    links = BrokerLinks(args.bootstrap, BROKER_TIMEOUT_S, args.security)
    history = History()
    console = Console(links, history, Sampler(links, history, args.sample_seconds), args.allow_writes)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    mode = "read-write" if args.allow_writes else "read-only"
    logging.getLogger("odradek.console").info(
        "Odradek Console (%s) for %s on http://%s:%d/", mode, args.bootstrap, host, port
    )
    uvicorn.run(
        build_app(console),
        host=host,
        port=port,
        log_level="warning",
        access_log=False,
        limit_concurrency=MAX_CONNECTIONS,
    )


def add_web_console_command(commands: argparse._SubParsersAction) -> None:
    """Register ``console``."""
    console = commands.add_parser(
        "console",
        help="serve the web console (topics, messages, groups, lag) in a browser",
        parents=[CONNECTION],
    )
    console.set_defaults(run=run_console)
    console.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"where to serve it (default {DEFAULT_LISTEN})",
    )
    console.add_argument(
        "--sample-seconds",
        type=float,
        default=INTERVAL_S,
        metavar="S",
        help=f"how often the charts' figures are sampled (default {INTERVAL_S:g}; the last hour is kept at 5 s)",
    )
    console.add_argument(
        "--allow-writes",
        action="store_true",
        help="offer forms that change the cluster: create topics, alter configs, produce, reset offsets, delete records",
    )
