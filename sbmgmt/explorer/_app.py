"""The explorer's app: its routers mounted over one :class:`~._site.Site` (each area's
routes in a module of its own: ``_site.py`` lists them), its templates and static files.

The explorer is server-rendered pages, htmx for the live parts and the forms.

Every page is one request that reads what it shows through the public clients and
renders it (Jinja2, autoescape on: every value from a message, a property or an entity
name is text). The namespace's counts and an entity's counts refresh themselves (htmx
polls their fragments). A form that changes something is a POST whose answer is a
fragment (what was done, or the error); a destructive one answers first with what it
will do and a second form that does it (``confirmed=yes``). After a change the answer
carries ``HX-Trigger: changed``, on which the lists of the page reload themselves.

Routes read their query and form values through small parsers that answer 400 with the
fault named; a failed reply of the service becomes the page's error, its text redacted
(:meth:`Namespace.redacted`).
"""

from __future__ import annotations

import functools
from pathlib import Path

import jinja2
from starlette.applications import Starlette
from starlette.routing import BaseRoute, Mount
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from .._wording import counted, utc_time
from ..actions.watch import Sampler
from ..rules import CorrelationFilter, RuleFilter, SqlFilter
from . import (
    _browse,
    _deferred_routes,
    _edits,
    _job_pages,
    _purge_found_routes,
    _purge_routes,
    _repair_routes,
    _transfer_routes,
)
from ._charts import chart_routes, sparkline
from ._entity_forms import entity_form_routes
from ._form_values import BadInput
from ._message_view import value_text
from ._namespace import Namespace
from ._search import search_routes
from ._site import Site

__all__ = ["create_app"]

_HERE = Path(__file__).parent


def create_app(namespace: Namespace, *, refresh_seconds: float = 5.0,
               sampler: Sampler | None = None) -> Starlette:
    """The explorer's ASGI app over one namespace (without the guard: see ``serve``).

    Args:
        namespace: What it shows and changes.
        refresh_seconds: How often the counts refresh themselves.
        sampler: What the charts and sparklines draw (``_charts.py``; started by whoever
            serves the app); none: a sampler of the namespace that is never started.

    Returns:
        The Starlette app.
    """
    sampler = sampler or Sampler(namespace.entities)
    environment = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"), autoescape=True,
        undefined=jinja2.StrictUndefined)
    environment.filters["text"] = value_text
    environment.filters["rule_filter"] = _filter_text
    environment.filters["counted"] = counted
    environment.filters["time"] = utc_time
    environment.globals["sparkline"] = functools.partial(sparkline, sampler)
    environment.globals["storage"] = namespace.storage
    site = Site(namespace, Jinja2Templates(env=environment), refresh_seconds)
    routes: list[BaseRoute] = [
        *_browse.routes(site),
        *_edits.routes(site),
        *_job_pages.routes(site),
        *_purge_routes.routes(site),
        *_purge_found_routes.routes(site),
        *_repair_routes.routes(site),
        *_transfer_routes.routes(site),
        *_deferred_routes.routes(site),
        *search_routes(namespace, site.page, site.entity_page),
        *entity_form_routes(namespace, site.page, site.entity_page),
        *chart_routes(sampler, site.page, namespace.redacted),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    return Starlette(routes=routes, exception_handlers={BadInput: site.bad_input})


def _filter_text(rule_filter: RuleFilter) -> str:
    """A rule's filter as one line of text."""
    if isinstance(rule_filter, SqlFilter):
        return rule_filter.expression
    if isinstance(rule_filter, CorrelationFilter):
        pairs = {**rule_filter.model_dump(exclude={"kind", "properties"}, exclude_none=True),
                 **rule_filter.properties}
        return "correlation: " + ", ".join(f"{k} = {value_text(v)}" for k, v in pairs.items())
    return rule_filter.kind.upper()
