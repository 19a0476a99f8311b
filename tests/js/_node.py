"""Running the official JavaScript SDK's scripts from pytest: Node with the pinned SDK (a
missing peer skips locally and fails under ``CI=true``), and one script run whose last line
of output is its JSON result."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

from tests._peers import missing_peer

HERE = Path(__file__).parent
SDK = HERE / "node_modules" / "@azure" / "service-bus" / "package.json"
PINNED = json.loads((HERE / "package.json").read_text())["dependencies"]["@azure/service-bus"]


def node_with_the_pinned_sdk() -> str:
    """The ``node`` executable, once the pinned @azure/service-bus is installed here."""
    node = shutil.which("node")
    if node is None:
        missing_peer("Node.js is not installed (the JavaScript SDK's tests need it)")
    if not SDK.exists():
        missing_peer(f"@azure/service-bus is not installed: run `npm ci` in {HERE}")
    installed = json.loads(SDK.read_text())["version"]
    if installed != PINNED:
        missing_peer(f"@azure/service-bus {installed} is installed, the tests pin {PINNED}: "
                     f"run `npm ci` in {HERE}")
    return node


def run_script(script: str, *args: str, timeout: float = 90) -> dict[str, Any]:
    """Run ``tests/js/<script>`` with ``args``; its last line of output, as JSON."""
    node = node_with_the_pinned_sdk()
    done = subprocess.run([node, str(HERE / script), *args], cwd=HERE, capture_output=True,
                          text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"node failed ({done.returncode}): {done.stderr[-4000:]}"
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
