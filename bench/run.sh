#!/usr/bin/env bash
# `make bench`: the benchmark suites in sequence against dist/leadline (see bench/README.md), each
# writing its table to bench/results/<suite>.md and stdout, then all of them to
# bench/results/latest.md, then the report (bench/report.ts) to bench/RESULTS.md. BENCH_SUITES
# selects suites (default: all, in this order; `soak`, which `make soak` runs, `outage` and `sign-in`
# (bench/sign-in.ts) are not among the defaults and write their own sections of bench/RESULTS.md). Each suite
# removes its processes and cluster on exit, failure, SIGINT and SIGTERM. The exit status is 1
# when a suite failed or measured an invalid scenario; a missed target alone does not fail.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

ALL="core messages booking events dni pooled startup first-start text console conversions"
IFS=', ' read -r -a suites <<<"${BENCH_SUITES:-$ALL}"
for s in "${suites[@]}"; do
  [[ " $ALL soak outage sign-in " == *" $s "* ]] || { echo "bench: unknown suite '$s' in BENCH_SUITES (one of: $ALL soak outage sign-in)" >&2; exit 2; }
done

# The text suite runs in process; every other one needs wrk and the executable.
needs_server=0
for s in "${suites[@]}"; do [ "$s" = text ] || needs_server=1; done

if [ "$needs_server" = 1 ] && ! command -v wrk >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "bench: installing wrk" >&2
    apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
  else
    echo "bench: wrk is required (apt-get install wrk, as root)" >&2
    exit 1
  fi
fi
[ "$needs_server" = 0 ] || [ -n "${BENCH_EXE:-}" ] || [ -x dist/leadline ] || { echo "bench: dist/leadline is missing: run make build (or make bench)" >&2; exit 1; }
[ -x node_modules/.bin/bun ] || { echo "bench: node_modules/.bin/bun is missing: run make install" >&2; exit 1; }

mkdir -p bench/results
latest=bench/results/latest.md
{
  echo "# Leadline benchmark, $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo
  echo "Suites: ${suites[*]}."
} >"$latest.tmp"
failed=()
for s in "${suites[@]}"; do
  # A suite that BENCH_ONLY skips writes no table; no stale one may stand in for it.
  rm -f "bench/results/$s.md" "bench/results/$s.json"
  node_modules/.bin/bun "bench/$s.ts"
  rc=$?
  # Interrupted (SIGINT, SIGTERM): stop here.
  if [ "$rc" -ge 128 ]; then rm -f "$latest.tmp"; exit "$rc"; fi
  if [ -f "bench/results/$s.md" ]; then
    { echo; cat "bench/results/$s.md"; } >>"$latest.tmp"
  elif [ "$rc" -ne 0 ]; then
    { echo; echo "## $s: failed (exit $rc), no table; its log is above"; } >>"$latest.tmp"
  fi
  [ "$rc" -eq 0 ] || failed+=("$s")
done
mv "$latest.tmp" "$latest"
echo "bench: written to $latest" >&2
# The report, from the suites' results of this run (a suite not run this time is reported as not run);
# not after the suites that write their own sections alone.
own_sections=1
for s in "${suites[@]}"; do [ "$s" = soak ] || [ "$s" = outage ] || [ "$s" = sign-in ] || own_sections=0; done
if [ "$own_sections" = 0 ]; then
  for s in $ALL; do [[ " ${suites[*]} " == *" $s "* ]] || rm -f "bench/results/$s.json"; done
  node_modules/.bin/bun bench/report.ts || failed+=(report)
fi
if [ "${#failed[@]}" -gt 0 ]; then
  echo "bench: failed or invalid: ${failed[*]}" >&2
  exit 1
fi
