"""The forms that change the cluster: served only with ``--allow-writes``, 403 without.

Each posts back to the console, which checks the form (bounded, with the console's token),
sends the one request and shows what happened with a link back to where the person was.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse

from broker.cli.web import writes
from broker.cli.web.context import console_of, render
from broker.cli.web.forms import read_form, whole_number
from broker.cli.web.links import Session
from broker.cli.web.offsets import INT64_MAX

Work = Callable[[Session], str]


async def act(request: Request, back: str, work: Callable[[dict[str, str]], Work]) -> HTMLResponse:
    """Refuse unless writes are allowed; else read the form, do ``work`` and show its result."""
    console = console_of(request)
    if not console.allow_writes:
        raise HTTPException(
            403,
            "this console is read-only: start it with `odradek console --allow-writes` to change the cluster",
        )
    fields = await read_form(request, console.token)
    done = await console.ask(work(fields))
    return render(request, "done.html", message=done, back=back)


def required(fields: dict[str, str], name: str) -> str:
    value = fields.get(name, "").strip()
    if not value:
        raise HTTPException(400, f"{name} is required")
    return value


async def create_topic(request: Request) -> HTMLResponse:
    def work(fields: dict[str, str]) -> Work:
        name = required(fields, "name")
        partitions = whole_number(fields, "partitions", -1)
        return lambda s: writes.create_topic(s, name, partitions or -1, fields.get("configs", ""))

    return await act(request, "/topics", work)


def on_topic(
    action: Callable[[Session, str, dict[str, str]], str],
) -> Callable[[Request], Awaitable[HTMLResponse]]:
    """A form about the topic in the path, whose result page links back to the topic."""

    async def endpoint(request: Request) -> HTMLResponse:
        topic = request.path_params["name"]
        return await act(request, f"/topics/{topic}", lambda fields: lambda s: action(s, topic, fields))

    return endpoint


def alter_config(s: Session, topic: str, fields: dict[str, str]) -> str:
    return writes.alter_config(s, topic, required(fields, "key"), fields.get("value", ""))


def produce(s: Session, topic: str, fields: dict[str, str]) -> str:
    partition = whole_number(fields, "partition")
    return writes.produce(
        s, topic, partition, fields.get("key", ""), fields.get("value", ""), fields.get("headers", "")
    )


def delete_records(s: Session, topic: str, fields: dict[str, str]) -> str:
    partition = whole_number(fields, "partition", 0) or 0
    before = whole_number(fields, "before", -1, INT64_MAX)
    return writes.delete_records(s, topic, partition, -1 if before is None else before)


async def reset_offsets(request: Request) -> HTMLResponse:
    group = request.path_params["group"]

    def work(fields: dict[str, str]) -> Work:
        scenario, topic, target = (
            required(fields, "scenario"),
            fields.get("topic", ""),
            fields.get("target", ""),
        )
        return lambda s: writes.reset_offsets(s, group, scenario, topic.strip(), target.strip())

    return await act(request, f"/groups/{group}", work)


alter_config_action = on_topic(alter_config)
produce_action = on_topic(produce)
delete_records_action = on_topic(delete_records)
