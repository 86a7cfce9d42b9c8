"""What every page of a running console shares: its connections, its samples, whether it may
write, and how a page is rendered (one template per page, with the console's own header)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.templating import Jinja2Templates

from broker.cli.web.history import History
from broker.cli.web.links import BrokerLinks, Session
from broker.cli.web.sampler import Sampler

T = TypeVar("T")
HERE = Path(__file__).resolve().parent
TEMPLATES = Jinja2Templates(directory=HERE / "templates")


@dataclass
class Console:
    links: BrokerLinks
    history: History
    sampler: Sampler
    allow_writes: bool
    token: str = field(default_factory=lambda: secrets.token_urlsafe(24))

    async def ask(self, work: Callable[[Session], T]) -> T:
        """``work`` on the connections, in a worker thread (the Kafka calls block)."""
        return await run_in_threadpool(self.links.run, work)


def console_of(request: Request) -> Console:
    console: Console = request.app.state.console
    return console


def render(request: Request, template: str, status: int = 200, **values: Any) -> HTMLResponse:
    """A page: ``template`` with ``values`` and what the header and forms need."""
    console = console_of(request)
    shared = {
        "bootstrap": console.links.bootstrap,
        "allow_writes": console.allow_writes,
        "token": console.token,
        "requests_sent": console.links.count.total,
        "requests_per_minute": console.links.count.per_minute(),
        "sampler_error": console.sampler.last_error,
        "untracked": console.history.untracked,
        "max_series": console.history.max_series,
    }
    return TEMPLATES.TemplateResponse(request, template, {**shared, **values}, status_code=status)
