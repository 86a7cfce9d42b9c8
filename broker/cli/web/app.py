"""The console's web application: routes, the sampler's lifetime, and pages for failures.

A failure becomes a page a person can act on, with the HTTP status that says what it is: 503
when the broker cannot be reached (which address, what to check), 403 when an ACL is missing
(which one) or the console is read-only, 404 when a topic or group is gone, 400 when the broker
refused what was asked (Kafka's error name and message).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast
from urllib.parse import quote

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from broker.cli.registry import AdminError
from broker.cli.web import actions, pages
from broker.cli.web.context import HERE, TEMPLATES, Console, render
from broker.cli.web.errors import Gone, NotAuthorized
from broker.client.admin_client import BrokerUnreachable

TEMPLATES.env.filters["quote"] = lambda text: quote(str(text), safe="")


def failure(request: Request, status: int, title: str, detail: str, hint: str = "") -> HTMLResponse:
    return render(request, "error.html", status, title=title, detail=detail, hint=hint)


async def unreachable(request: Request, exc: Exception) -> Response:
    return failure(request, 503, "The broker cannot be reached", str(exc))


async def not_authorized(request: Request, exc: Exception) -> Response:
    missing = cast(NotAuthorized, exc)  # registered for NotAuthorized only
    hint = (
        f"The principal the console connects as needs an ALLOW ACL for {missing.acl}, e.g. "
        f"kafka-acls.sh --bootstrap-server {request.app.state.console.links.bootstrap} --add "
        "--allow-principal User:<the console's user> ..."
    )
    return failure(request, 403, "Not authorized", str(exc), hint)


async def gone(request: Request, exc: Exception) -> Response:
    return failure(request, 404, "Not found", str(exc), "Go back to the list to see what exists now.")


async def refused(request: Request, exc: Exception) -> Response:
    return failure(request, 400, "The request was refused", str(exc))


async def http_error(request: Request, exc: Exception) -> Response:
    http = cast(HTTPException, exc)  # registered for HTTPException only
    titles = {403: "Not allowed", 404: "Not found", 413: "Too large", 415: "Not a form"}
    return failure(request, http.status_code, titles.get(http.status_code, "Bad request"), http.detail)


def build_app(console: Console) -> Starlette:
    """The application for ``console``, whose sampler runs while the application does."""

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        console.sampler.start()
        try:
            yield
        finally:
            console.sampler.stop()
            console.links.close()

    routes = [
        Route("/", pages.cluster_page),
        Route("/topics", pages.topics_page),
        Route("/topics", actions.create_topic, methods=["POST"]),
        Route("/topics/{name}", pages.topic_page),
        Route("/topics/{name}/messages", pages.messages_page),
        Route("/topics/{name}/configs", actions.alter_config_action, methods=["POST"]),
        Route("/topics/{name}/produce", actions.produce_action, methods=["POST"]),
        Route("/topics/{name}/delete-records", actions.delete_records_action, methods=["POST"]),
        Route("/groups", pages.groups_page),
        Route("/groups/{group:path}/reset-offsets", actions.reset_offsets, methods=["POST"]),
        Route("/groups/{group:path}", pages.group_page),
        Route("/security", pages.security_page),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(
        routes=routes,
        lifespan=lifespan,
        exception_handlers={
            BrokerUnreachable: unreachable,
            NotAuthorized: not_authorized,
            Gone: gone,
            AdminError: refused,
            HTTPException: http_error,
        },
    )
    app.state.console = console
    return app
