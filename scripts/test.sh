#!/usr/bin/env bash
# Runs every Switchyard test: Go (vet, gofmt, race tests) and, when the web
# UI is present, its unit and browser tests. CI calls exactly this.
#
# A failing Go step does not stop the script: the web tests still run, and
# the script exits non-zero at the end, naming what failed.
#
#   --stress   run the Go tests while two busy loops hog both cores: every
#              timing-dependent test must still pass (it waits on a
#              condition with a generous deadline, never on a short timeout)
set -euo pipefail

stress=0
for arg in "$@"; do
  case "$arg" in
    --stress) stress=1 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "unknown option: $arg (see --help)" >&2; exit 2 ;;
  esac
done
cd "$(dirname "$0")/.."

failed=() # steps that failed; the others still run
busy=()   # pids of the --stress busy loops
stop_busy() {
  for pid in ${busy[@]+"${busy[@]}"}; do
    kill "$pid" 2>/dev/null || true
  done
  busy=()
}
report() {
  local code=$?
  stop_busy
  if [ ${#failed[@]} -gt 0 ]; then
    echo "== FAILED: ${failed[*]}"
  fi
  exit "$code"
}
trap report EXIT
trap 'exit 130' INT TERM

echo "== go vet"
go vet ./... || failed+=("go vet")

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './web/node_modules/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; failed+=("gofmt")
fi

# YAML script nodes with runtime bun run for real in the tests.
if ! command -v bun >/dev/null 2>&1; then
  echo "== installing bun (npm)"
  npm install -g bun >/dev/null 2>&1 || echo "bun could not be installed: its tests will skip"
fi

if [ "$stress" = 1 ]; then
  echo "== stress: two busy loops hog both cores during the Go tests"
  for _ in 1 2; do
    sh -c 'while :; do :; done' &
    busy+=($!)
  done
fi
echo "== go test -race"
go test -race -count=1 -timeout 20m ./... || failed+=("go test")
stop_busy

if [ -f web/package.json ] && [ "${SWITCHYARD_SKIP_WEB:-}" != "1" ]; then
  echo "== web: npm ci"
  npm ci --no-audit --no-fund
  echo "== web: typecheck + unit tests"
  npm run typecheck:web
  npm run test:web
  echo "== web: browser end-to-end tests (real server, fake LLM, Debian Chromium)"
  if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
      echo "chromium is missing and cannot be installed here (needs root and apt-get)"
    fi
  fi
  npm run test:e2e
fi

if [ ${#failed[@]} -gt 0 ]; then
  exit 1
fi
