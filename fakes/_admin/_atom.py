"""The ATOM envelope of every answer: an ``entry`` around one description, a ``feed`` of
entries for a listing, and the service's ``<Error>`` body.

An entry's ``id`` is the entity's URL with the API version, as the service writes it: the
JavaScript SDK takes the entity's names from that URL's path (``<topic>/Subscriptions/<sub>``,
``.../Rules/<rule>``), the Python SDK from ``title`` when it lists. A feed has a ``self`` link
and, when more entries follow, a ``next`` link whose ``$skip`` / ``$top`` the SDKs page with.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._xml import ATOM_NS, attribute, element

__all__ = ["ENTRY_CONTENT_TYPE", "ERROR_CONTENT_TYPE", "FEED_CONTENT_TYPE", "Entry", "entry",
           "error", "feed"]

ENTRY_CONTENT_TYPE = "application/atom+xml;type=entry;charset=utf-8"
FEED_CONTENT_TYPE = "application/atom+xml;type=feed;charset=utf-8"
ERROR_CONTENT_TYPE = "application/xml; charset=utf-8"


@dataclass(frozen=True)
class Entry:
    """One entry: the entity's URL, its title (its own name), times and description."""

    url: str
    title: str
    published: str
    updated: str
    author: str | None
    content: str


def _entry_body(item: Entry) -> str:
    author = "" if item.author is None else f"<author>{element('name', item.author)}</author>"
    return (f"{element('id', item.url)}{element('title', item.title, attribute('type', 'text'))}"
            f"{element('published', item.published)}{element('updated', item.updated)}"
            f"{author}<link{attribute('rel', 'self')}{attribute('href', item.url)}/>"
            f"<content{attribute('type', 'application/xml')}>{item.content}</content>")


def entry(item: Entry) -> bytes:
    """A single entry, the answer of a get, create or update."""
    return (f"<entry{attribute('xmlns', ATOM_NS)}>{_entry_body(item)}</entry>").encode()


def feed(title: str, url: str, updated: str, items: list[Entry], next_url: str | None) -> bytes:
    """A listing (``next_url`` when more entries follow), or with no entries, what the
    service answers a get of a queue or topic that does not exist."""
    links = f"<link{attribute('rel', 'self')}{attribute('href', url)}/>"
    if next_url is not None:
        links += f"<link{attribute('rel', 'next')}{attribute('href', next_url)}/>"
    entries = "".join(f"<entry>{_entry_body(item)}</entry>" for item in items)
    return (f"<feed{attribute('xmlns', ATOM_NS)}>"
            f"{element('title', title, attribute('type', 'text'))}{element('id', url)}"
            f"{element('updated', updated)}{links}{entries}</feed>").encode()


def error(status: int, detail: str) -> bytes:
    """The service's error body: ``<Error><Code>404</Code><Detail>...</Detail></Error>``."""
    return f"<Error>{element('Code', str(status))}{element('Detail', detail)}</Error>".encode()
