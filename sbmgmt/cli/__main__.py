"""``python -m sbmgmt.cli``: the same as the ``sbmgmt`` command."""

from . import main

main()
