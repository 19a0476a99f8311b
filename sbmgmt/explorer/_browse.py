"""The explorer's pages that read: the namespace, one entity's properties, messages,
sessions and rules (each page one request that peeks or reads what it shows, renders it,
and forgets it; the counts refresh themselves through their fragments)."""

from __future__ import annotations

import fnmatch
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from ._form_values import choice_value, number_value, text_value, trail_value
from ._message_view import body_view, fields_of, system_fields, utf8_text
from ._pages import MAX_PAGE, StateFilter, SubQueue, peek_page, queue_path, trail_after
from ._site import Site, here

__all__ = ["routes"]

_DEFAULT_PAGE = 50
_SESSIONS_PAGE = 100
#: A listing is refreshed no more often than every this many times its duration.
_SLOW_LISTING = 5


class _Browse:
    """The reading pages' handlers."""

    def __init__(self, site: Site) -> None:
        self._site = site

    async def home(self, request: Request) -> Response:
        """The namespace: every entity with its counts (refreshed by the table's fragment)."""
        return await self._site.reading(request, "namespace.html", lambda: self._listing(request),
                                   **self._listing_defaults(request))

    async def entities_table(self, request: Request) -> Response:
        """The namespace's table alone (what the page polls)."""
        return await self._site.reading(request, "_entities.html", lambda: self._listing(request),
                                   **self._listing_defaults(request))

    def _listing_defaults(self, request: Request) -> dict[str, Any]:
        """What the listing's templates need when the listing failed."""
        return {"match": request.query_params.get("match", "").strip(),
                "poll": self._site.refresh}

    def _listing(self, request: Request) -> dict[str, Any]:
        match = request.query_params.get("match", "").strip()
        started = time.monotonic()
        listed = self._site.ns.entities()
        listed_in = time.monotonic() - started
        if match:
            pattern = match.lower() if any(c in match for c in "*?[") else f"*{match.lower()}*"
            listed = [e for e in listed if fnmatch.fnmatchcase(e.name.lower(), pattern)]
        # The next refresh: the chosen interval, or longer for a namespace whose listing is
        # slow, so that refreshing never keeps the server (and the service) busy.
        poll = max(self._site.refresh, round(_SLOW_LISTING * listed_in, 1))
        return {"entities": listed, "match": match, "listed_in": listed_in, "poll": poll}

    # --- one entity ---------------------------------------------------------------------

    async def entity_properties(self, request: Request) -> Response:
        """An entity's properties."""
        path = text_value(request.query_params, "path")

        def read() -> dict[str, Any]:
            found = self._site.ns.properties(path)
            return {"counts": found.counts, "properties": fields_of(found.properties)}

        return await self._site.reading(request, "properties.html", read, tab="properties")

    async def entity_counts(self, request: Request) -> Response:
        """An entity's counts alone (what its pages poll)."""
        path = text_value(request.query_params, "path")
        return await self._site.reading(
            request, "_counts.html", lambda: {"counts": self._site.ns.properties(path).counts})

    async def messages(self, request: Request) -> Response:
        """One page of an entity's messages, from one sub-queue, maybe of one state."""
        query = request.query_params
        path = text_value(query, "path")
        queue = choice_value(query, "queue", SubQueue, SubQueue.MAIN)
        state = choice_value(query, "state", StateFilter, StateFilter.ALL)
        start = number_value(query, "from", 1, minimum=1)
        size = number_value(query, "size", _DEFAULT_PAGE, minimum=1, maximum=MAX_PAGE)
        trail = trail_value(query.get("trail", ""))

        def read() -> dict[str, Any]:
            page = peek_page(self._site.ns.entity(queue_path(path, queue)), start, size, state)
            return {"page": page, "next_trail": ",".join(map(str, trail_after(trail, start)))}

        back = trail[-1] if trail else None
        return await self._site.reading(
            request, "messages.html", read, tab="messages", queue=queue.value,
            state=state.value, size=size, start=start, back=back, reload=here(request),
            back_trail=",".join(map(str, trail[:-1])), states=[s.value for s in StateFilter])

    async def message(self, request: Request) -> Response:
        """One message in full: its body in the form that fits, every property."""
        query = request.query_params
        path = text_value(query, "path")
        queue = choice_value(query, "queue", SubQueue, SubQueue.MAIN)
        sequence = number_value(query, "seq", 1, minimum=1)

        def read() -> dict[str, Any]:
            peeked = self._site.ns.entity(queue_path(path, queue)).peek_messages(sequence, 1)
            if not peeked or peeked[0].sequence_number != sequence:
                return {"found": None}
            found = peeked[0]
            return {"found": found, "body": body_view(found), "system": system_fields(found),
                    "application": fields_of(found.application_properties),
                    "annotations": fields_of(found.raw_annotations)}

        return await self._site.reading(request, "message.html", read, tab="messages",
                                   queue=queue.value, seq=sequence)

    async def sessions(self, request: Request) -> Response:
        """An entity's sessions, a page of ids at a time."""
        path = text_value(request.query_params, "path")
        skip = number_value(request.query_params, "skip", 0, minimum=0)

        def read() -> dict[str, Any]:
            ids = self._site.ns.entity(path).list_sessions(skip=skip, top=_SESSIONS_PAGE)
            more = len(ids) == _SESSIONS_PAGE
            return {"ids": ids, "skip": skip, "next_skip": skip + len(ids) if more else None}

        return await self._site.reading(request, "sessions.html", read, tab="sessions")

    async def session(self, request: Request) -> Response:
        """One session's state (as text when it is UTF-8, else as hex), with its forms."""
        path = text_value(request.query_params, "path")
        session_id = text_value(request.query_params, "id")

        def read() -> dict[str, Any]:
            with self._site.ns.entity(path).session(session_id) as held:
                state = held.get_state()
            text = None if state is None else utf8_text(state)
            return {"session_id": session_id, "state": state, "state_text": text,
                    "state_hex": None if state is None else state.hex(" ")}

        return await self._site.reading(request, "session.html", read, tab="sessions")

    async def rules(self, request: Request) -> Response:
        """A subscription's rules, with the form that adds one."""
        path = text_value(request.query_params, "path")
        fragment = request.query_params.get("fragment") == "table"

        def read() -> dict[str, Any]:
            return {"rules": self._site.ns.entity(path).list_rules(top=100)}

        if fragment:
            return await self._site.reading(request, "_rules_table.html",
                                       lambda: {**read(), "path": path})
        return await self._site.reading(request, "rules.html", read, tab="rules")

    async def nothing(self, request: Request) -> Response:
        """An empty answer: what a Cancel button swaps in."""
        return HTMLResponse("")



def routes(site: Site) -> list[Route]:
    """The reading pages' routes."""
    views = _Browse(site)
    return [
        Route("/", views.home),
        Route("/entities", views.entities_table),
        Route("/entity", views.entity_properties),
        Route("/entity/counts", views.entity_counts),
        Route("/messages", views.messages),
        Route("/message", views.message),
        Route("/sessions", views.sessions),
        Route("/session", views.session),
        Route("/rules", views.rules),
        Route("/nothing", views.nothing),
    ]
