#!/usr/bin/env bash
# Screenshots of the built docs site, to look at: the index and one API page, taken by
# headless Chromium from the site served on 127.0.0.1. Not part of the test command.
# Usage: bash scripts/docs_screenshots.sh [OUTPUT_DIR]   (default build/screenshots)
# Needs Debian's chromium (apt-get install chromium) and the docs extra in .venv.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-build/screenshots}"
VENV_PYTHON="${VENV_PYTHON:-.venv/bin/python}"
CHROMIUM="${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}"
[ -n "$CHROMIUM" ] || { echo "no chromium: apt-get install chromium" >&2; exit 2; }
NO_MKDOCS_2_WARNING=1 "$VENV_PYTHON" -m mkdocs build --strict --quiet --site-dir build/site
mkdir -p "$OUT"
PORT="$("$VENV_PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$VENV_PYTHON" -m http.server --bind 127.0.0.1 --directory build/site "$PORT" >/dev/null 2>&1 &
SERVER=$!
PROFILE="$(mktemp -d)"
trap 'kill "$SERVER"; rm -rf "$PROFILE"' EXIT
for _ in $(seq 50); do
    "$VENV_PYTHON" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/')" \
        2>/dev/null && break
    sleep 0.1
done
shoot() {  # shoot PAGE_PATH FILE
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$PROFILE" --hide-scrollbars --window-size=1280,1000 \
        --virtual-time-budget=3000 --screenshot="$OUT/$2" "http://127.0.0.1:$PORT/$1" \
        >/dev/null 2>&1
    echo "$OUT/$2"
}
shoot "" index.png
shoot "api/sbmgmt/" api-sbmgmt.png
[ -z "${DOCS_EXTRA_PAGE:-}" ] || shoot "$DOCS_EXTRA_PAGE" extra.png
