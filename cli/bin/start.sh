#!/usr/bin/env bash
# `npm start` from any checkout, even a fresh clone on a machine whose node is old: install the dependencies first
# (they include Node 24 itself, the `node` package), then run the launcher with that Node.
set -euo pipefail
cd "$(dirname "$0")/../.."

if [ ! -x node_modules/.bin/node ]; then
  echo "npm start: installing dependencies (first run)"
  if [ -f package-lock.json ]; then
    npm ci --no-audit --no-fund
  else
    npm install --no-audit --no-fund
  fi
fi

exec node_modules/.bin/node cli/src/local/start.ts "$@"
