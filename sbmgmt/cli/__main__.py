"""``python -m sbmgmt.cli``: the same as the ``sbmgmt`` command, the missing-extra hint
included."""

from sbmgmt._console import main

main()
