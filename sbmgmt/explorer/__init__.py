"""The Service Bus explorer in the browser (``sbmgmt explore``; the ``explorer`` extra).

A small server-rendered web app: Starlette routes (``_app.py``) rendering Jinja2 templates
(autoescape on) with htmx (vendored in ``static/``) for the live counts and the forms,
served by uvicorn on loopback (``_server.py``) behind a guard (``_guard.py``: the token,
the Host header, cross-site requests). What it shows and changes goes through the public
clients and the administrator's actions only (``_namespace.py``): peeks page by page
(``_pages.py``), messages shown as text in the form that fits (``_message_view.py``).

May import: the public modules of sbmgmt and ``sbmgmt.actions``; never the private core,
the transport, the CLI or ``fakes`` (the contracts in ``pyproject.toml``). The CLI builds
the [Namespace][sbmgmt.explorer.Namespace] (the clients, the SQL checks) and starts the
[Explorer][sbmgmt.explorer.Explorer].

```python
from sbmgmt.explorer import Explorer, Namespace
```
"""

from ._app import create_app
from ._namespace import Namespace, SqlCheck
from ._server import Explorer

__all__ = ["Explorer", "Namespace", "SqlCheck", "create_app"]
