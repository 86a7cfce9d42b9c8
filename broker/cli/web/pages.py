"""The pages a person looks at: cluster, topics, a topic, its messages, groups, a group, security."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse

from broker.cli.web.charts import bar_chart, line_chart
from broker.cli.web.cluster_data import cluster_view
from broker.cli.web.context import console_of, render
from broker.cli.web.groups_data import group_view, list_groups
from broker.cli.web.messages import MAX_RECORDS, MODES, VIEWS, browse, query_from
from broker.cli.web.security_data import security_view
from broker.cli.web.topics_data import topic_list, topic_view

MAX_SEARCH = 200


async def cluster_page(request: Request) -> HTMLResponse:
    view = await console_of(request).ask(cluster_view)
    rows = [(f"broker {b.node_id}", (b.leaders, b.replicas)) for b in view.brokers]
    chart = bar_chart(rows, ("leaders", "replicas"), "partitions per broker")
    return render(request, "cluster.html", view=view, distribution=chart)


async def topics_page(request: Request) -> HTMLResponse:
    console = console_of(request)
    search = request.query_params.get("q", "")[:MAX_SEARCH]
    listing = await console.ask(lambda s: topic_list(s, search))
    rates = {row.name: console.history.latest_rate(("end", row.name)) for row in listing.rows}
    return render(request, "topics.html", listing=listing, search=search, rates=rates)


async def topic_page(request: Request) -> HTMLResponse:
    console = console_of(request)
    name = request.path_params["name"]
    view = await console.ask(lambda s: topic_view(s, name))
    produced = line_chart(
        console.history.rate(("end", name)), f"records produced per second to {name}", "rec/s"
    )
    consumed = line_chart(
        console.history.rate(("committed", name)), f"records consumed per second from {name}", "rec/s"
    )
    return render(request, "topic.html", view=view, produced=produced, consumed=consumed)


async def messages_page(request: Request) -> HTMLResponse:
    name = request.path_params["name"]
    params = dict(request.query_params)
    query = query_from(params)
    page = await console_of(request).ask(lambda s: browse(s, name, query))
    return render(
        request,
        "messages.html",
        topic=name,
        query=query,
        params=params,
        page=page,
        modes=MODES,
        views=VIEWS,
        max_records=MAX_RECORDS,
    )


async def groups_page(request: Request) -> HTMLResponse:
    console = console_of(request)
    groups = await console.ask(lambda s: list_groups(s, s.metadata([])))
    lags = {g.group_id: console.history.latest(("lag", g.group_id)) for g in groups}
    return render(request, "groups.html", groups=groups, lags=lags)


async def group_page(request: Request) -> HTMLResponse:
    console = console_of(request)
    group = request.path_params["group"]
    view = await console.ask(lambda s: group_view(s, group))
    lag = [(t, float(v)) for t, v in console.history.series(("lag", group))]
    chart = line_chart(lag, f"lag of group {group}", "records")
    return render(request, "group.html", view=view, chart=chart)


async def security_page(request: Request) -> HTMLResponse:
    view = await console_of(request).ask(security_view)
    return render(request, "security.html", view=view)
