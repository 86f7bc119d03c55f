#!/usr/bin/env bash
# `make bench`: load-tests dist/leadline against a throwaway PostgreSQL with wrk and prints a table
# (also written to bench/results/latest.md). See bench/README.md. bench/core.ts does the work and
# removes its processes and cluster on exit, failure, SIGINT and SIGTERM.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v wrk >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bench: installing wrk" >&2
    apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
  else
    echo "bench: wrk is required (apt-get install wrk, as root)" >&2
    exit 1
  fi
fi
[ -x dist/leadline ] || { echo "bench: dist/leadline is missing: run make build (or make bench)" >&2; exit 1; }
[ -x node_modules/.bin/bun ] || { echo "bench: node_modules/.bin/bun is missing: run make install" >&2; exit 1; }

exec node_modules/.bin/bun bench/core.ts "$@"
