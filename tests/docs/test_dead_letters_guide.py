"""docs/dead-letters.md's shell commands run as written, against a fake on port 0.

The guide's own set-up and export blocks (Python) make the fake namespace, its dead letters
and the export file in a fresh directory; then every ```bash block runs there in order, with
``SERVICEBUS_CONNECTION_STRING`` set to the fake's and ``sbmgmt`` on the PATH, and must
succeed. At the end the queues hold what the guide says: the fixed copies and the
resubmitted ones in ``orders``, the poison originals in ``orders-poison``, an empty
dead-letter queue.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "dead-letters.md"
LIMIT = 120
_FENCE = re.compile(r"^```(?P<lang>[\w+-]*)[^\n]*\n(?P<code>.*?)^```[ \t]*$",
                    flags=re.MULTILINE | re.DOTALL)


def _blocks() -> list[tuple[str, str]]:
    text = GUIDE.read_text(encoding="utf-8")
    return [(m.group("lang"), m.group("code")) for m in _FENCE.finditer(text)]


@pytest.mark.slow("runs the guide's shell commands as written: six sbmgmt processes, "
                  "each about 0.8 CPU-s to start, and their pipes")
@pytest.mark.skipif(shutil.which("jq") is None, reason="jq is not installed")
def test_the_guides_shell_commands_run_against_a_fake(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = _blocks()
    python = [code for lang, code in blocks if lang == "python"]
    shell = [code for lang, code in blocks if lang == "bash"]
    assert len(python) >= 2 and len(shell) >= 5
    scope: dict[str, Any] = {}
    for code in python[:2]:  # the set-up and the export
        exec(compile(code, str(GUIDE), "exec"), scope)
    fake = scope["fake"]
    try:
        env = dict(os.environ)
        env["SERVICEBUS_CONNECTION_STRING"] = scope["conn_str"]
        env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
        env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
        for code in shell:
            done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", code], cwd=tmp_path,
                                  env=env, capture_output=True, text=True, timeout=LIMIT,
                                  check=False)
            assert done.returncode == 0, f"{code}\n{done.stdout}\n{done.stderr}"
        assert (tmp_path / "fixed.ndjson").read_text().count("\n") == 4
        assert fake.accounting("orders")["active"] == 12
        assert fake.accounting("orders-poison")["active"] == 4
        assert fake.accounting("orders/$DeadLetterQueue")["active"] == 0
    finally:
        fake.stop()
