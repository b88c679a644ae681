#!/usr/bin/env bash
# Build the dashboard bundle (api/dashboard/dist) from its locked npm packages; Node.js/npm from Debian when
# missing. Nothing is fetched at run time: the API serves the built files.
set -euo pipefail
cd "$(dirname "$0")/../api/dashboard"
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
  if [ "$(id -u)" != 0 ]; then
    echo "dashboard: Node.js and npm are needed: sudo apt-get install nodejs npm" >&2
    exit 1
  fi
  echo "dashboard: installing nodejs and npm from Debian"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
# exact versions from package-lock.json; esbuild's postinstall is only a speed-up (its binary package is a
# regular optional dependency), so no install script needs to run
npm ci --no-audit --no-fund --ignore-scripts --loglevel=error
node build.mjs
