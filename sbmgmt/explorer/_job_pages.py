"""The job pages: a long action's progress while it runs (polled by its fragment), what it
did once it ended, and its Cancel button (``_jobs.py`` says how a job runs)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from ._form_values import text_value
from ._site import Site

__all__ = ["routes"]


def routes(site: Site) -> list[Route]:
    """``GET /job`` and ``POST /job/cancel``."""

    async def job(request: Request) -> Response:
        """A long action's progress, or what it did once it ended."""
        found = site.jobs.get(text_value(request.query_params, "id"))
        if found is None:
            return site.notice(request, "no such job (the explorer was restarted?)",
                               error=True)
        return site.job_page(request, found)

    async def cancel_job(request: Request) -> Response:
        """Ask a long action to stop: it stops at its next step and says what it did."""
        form = await request.form()
        found = site.jobs.get(text_value(form, "id"))
        if found is None:
            return site.notice(request, "no such job", error=True)
        found.cancel.cancel()
        return site.job_page(request, found)

    return [Route("/job", job), Route("/job/cancel", cancel_job, methods=["POST"])]
