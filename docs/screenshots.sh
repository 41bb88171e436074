#!/usr/bin/env bash
# Regenerates the admin guide's pictures (docs/admin.md) from the browser tests that draw them:
# each role's home, the lists reviewers work through, the graph view. Needs what ./engram test
# needs (it installs Chromium when it can).
set -euo pipefail
cd "$(dirname "$0")/.."
export ENGRAM_SCREENSHOT_DIR="$PWD/docs/images"
./engram test -p no:randomly -n 0 \
  tests/e2e/test_admin_home_browser.py tests/e2e/test_graph_admin_browser.py \
  tests/e2e/test_embeddings_admin_browser.py
