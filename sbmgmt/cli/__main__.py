"""``python -m sbmgmt.cli``: the same as the ``sbmgmt`` command, the missing-extra hint
included."""

from ._console import main

main()
