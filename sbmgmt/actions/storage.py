"""Where an emulator keeps its namespace, when it says: the fake's data directory.

The fake (``python -m fakes``, ``sbmgmt fake serve``, ``FakeNamespace``) answers
``GET /metrics`` on its HTTP port, the emulator's port of ``/health`` and the
administration API, with the Prometheus text format; when it keeps the namespace in a data
directory the page has ``fakes_data_dir_info{path="...",sync="normal"} 1`` (docs/fake.md,
"Metrics" and "A data directory"), and without one it has no such line: it keeps the
namespace in memory. Microsoft's emulator has no ``/metrics`` page and the service no
such port: for them :func:`storage_of` says nothing (None). The page needs no token.
"""

from __future__ import annotations

import http.client
import urllib.request
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

from ..auth import parse_connection_string

__all__ = ["DATA_DIR_METRIC", "Storage", "storage_of"]

#: The fake's line that names its data directory (its labels: ``path``, ``sync``).
DATA_DIR_METRIC = "fakes_data_dir_info"
#: A name only the fake's page has (every fake's page has it, directory or not).
_FAKE_METRIC = "fakes_connections"


@dataclass(frozen=True)
class Storage:
    """Where the fake keeps the namespace: ``data_dir`` (None: in memory only, gone when it
    stops) and how each change is synced there (``sync``: ``normal`` or ``full``)."""

    data_dir: str | None = None
    sync: str | None = None

    def describe(self) -> str:
        """In words, for a page or a terminal."""
        if self.data_dir is None:
            return "kept in memory only (gone when the fake stops)"
        return f"kept in {self.data_dir} (sync: {self.sync})"


def storage_of(connection_string: str, http_port: int, *,
               timeout: float = 5.0) -> Storage | None:
    """Ask an emulator's HTTP port where it keeps the namespace.

    Args:
        connection_string: The emulator's connection string (its host is asked).
        http_port: Its HTTP port.
        timeout: Seconds to wait for the answer.

    Returns:
        Where the fake keeps it; None when the namespace does not say (not the fake, or
        no answer).
    """
    host = parse_connection_string(connection_string).fully_qualified_namespace
    address = f"[{host}]" if ":" in host else host
    try:
        with urllib.request.urlopen(f"http://{address}:{http_port}/metrics",
                                    timeout=timeout) as answer:
            page = answer.read().decode("utf-8", "replace")
    except (OSError, ValueError, http.client.HTTPException):  # no answer, an error status
        return None  # (urllib's URLError and HTTPError are OSErrors), or no HTTP at all
    try:
        samples = [sample for family in text_string_to_metric_families(page)
                   for sample in family.samples]
    except ValueError:  # not the Prometheus text format
        return None
    for sample in samples:
        if sample.name == DATA_DIR_METRIC:
            return Storage(sample.labels.get("path"), sample.labels.get("sync"))
    if any(sample.name == _FAKE_METRIC for sample in samples):
        return Storage()
    return None
