#!/usr/bin/env bash
# The screenshots of docs/explorer.md (docs/img/explorer-*.png), taken by the explorer's
# browser tests against the embedded fake. Not part of the test command.
# Usage: bash scripts/explorer_screenshots.sh   (needs Debian's chromium and .venv with test)
set -euo pipefail
cd "$(dirname "$0")/.."
EXPLORER_SCREENSHOTS=docs/img .venv/bin/python -m pytest -q -p no:cacheprovider \
    tests/explorer -k "fake and (administration_apis_counts or each_body_kind or dead_letters or rule_is_added or state_is_edited or purge_says or resubmitted_and_gone or deferred_messages_are or key_values_whole)"
# The charts (issue 63): their own module, on the embedded fake only.
EXPLORER_SCREENSHOTS=docs/img .venv/bin/python -m pytest -q -p no:cacheprovider \
    tests/explorer/test_charts.py -k "movers or fit"
ls docs/img/explorer-*.png
