#!/usr/bin/env bash
# Debian's chromium for the dashboard's browser tests (tests/browser): Playwright drives it through
# executable_path, so no browser is downloaded. Quiet once installed.
set -euo pipefail
command -v chromium >/dev/null && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "browser tests need chromium: sudo apt-get install chromium (or set RFT_CHROMIUM to a Chromium binary)" >&2
  exit 1
fi
echo "browser_setup: installing chromium from Debian"
apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
