#!/usr/bin/env bash
# `npm start` from any checkout, even a fresh clone on a machine whose node is old: install the dependencies first
# (they include Node 24 itself, the `node` package), then run the launcher with that Node.
set -euo pipefail
cd "$(dirname "$0")/../.."

# Only errors: the machine's npm runs on its own (older) Node, so every package that asks for Node 22+ would print an
# engine warning, hundreds of lines about a Node that never runs them (Node 24 comes with the install).
if [ ! -x node_modules/.bin/node ]; then
  echo "npm start: installing dependencies (first run, about a minute)"
  if [ -f package-lock.json ]; then
    npm ci --no-audit --no-fund --loglevel=error
  else
    npm install --no-audit --no-fund --loglevel=error
  fi
fi

exec node_modules/.bin/node cli/src/local/start.ts "$@"
