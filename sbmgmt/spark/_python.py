"""Which Python interpreter Spark's Python workers run, for a local master.

PySpark starts its workers with ``PYSPARK_PYTHON``, else ``python3`` from ``PATH``.
A script run as ``.venv/bin/python script.py`` without activating the venv therefore
gets workers from another interpreter, which cannot import ``sbmgmt`` (Spark fails
deep inside a task with ``ModuleNotFoundError``). On a local master (``local``,
``local[N]``, ``local-cluster[...]``) the workers run on this machine, so
:func:`use_driver_python` points them at the driver's own interpreter, unless the
user chose one; a chosen one that cannot import ``sbmgmt`` fails at once, in one line.
On a cluster the choice stays the user's (executors need ``sbmgmt`` installed).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

__all__ = ["WorkerPythonError", "use_driver_python"]

_CONF = "spark.pyspark.python"


class WorkerPythonError(RuntimeError):
    """Spark's Python workers would run an interpreter that cannot import sbmgmt."""


def _can_import_sbmgmt(python: str) -> bool:
    try:
        done = subprocess.run([python, "-c", "import sbmgmt"], capture_output=True,
                              timeout=60, check=False)
    except OSError:
        return False
    return done.returncode == 0


def use_driver_python(spark: Any) -> None:
    """On a local master, make Spark's Python workers run this interpreter unless
    ``PYSPARK_PYTHON`` or ``spark.pyspark.python`` names one; raise
    :class:`WorkerPythonError` if the named one cannot import ``sbmgmt``."""
    try:
        context = spark.sparkContext
    except Exception:  # Spark Connect: the server picks its workers' Python
        return
    if not str(context.master).startswith("local"):
        return
    chosen = os.environ.get("PYSPARK_PYTHON") or context.getConf().get(_CONF)
    if not chosen:
        context.pythonExec = sys.executable
        return
    if os.path.realpath(chosen) == os.path.realpath(sys.executable):
        return
    if not _can_import_sbmgmt(chosen):
        raise WorkerPythonError(
            f"Spark's Python workers run {chosen!r} (PYSPARK_PYTHON / {_CONF}), which "
            f"cannot import sbmgmt: set PYSPARK_PYTHON to {sys.executable!r} or to "
            "another interpreter with sbmgmt[spark] installed")
