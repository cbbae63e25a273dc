#!/usr/bin/env bash
# Install Debian's Chromium (for the headless-browser tests) when it is missing. Idempotent.
set -euo pipefail
if ! command -v chromium >/dev/null 2>&1; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
fi
echo "Chromium ready: $(chromium --version)"
