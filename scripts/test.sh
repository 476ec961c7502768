#!/usr/bin/env bash
# Runs every Switchyard test: Go (vet, gofmt, race tests) and, when the web
# UI is present, its unit and browser tests. CI calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== go vet"
go vet ./...

echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './web/node_modules/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

# YAML script nodes with runtime bun run for real in the tests.
if ! command -v bun >/dev/null 2>&1; then
  echo "== installing bun (npm)"
  npm install -g bun >/dev/null 2>&1 || echo "bun could not be installed: its tests will skip"
fi

echo "== go test -race"
go test -race -count=1 -timeout 20m ./...

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
