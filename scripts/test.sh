#!/usr/bin/env bash
# Runs every Switchyard test: Go (vet, gofmt, go mod tidy, staticcheck, race
# tests) and, when the web UI is present, its unit and browser tests. CI
# calls exactly this. A failing Go test does not hide the web tests: every
# stage runs, and the script fails at the end if any stage failed.
#
#   bash scripts/test.sh            everything
#   bash scripts/test.sh --short    the inner loop: go test -short, no web
#   bash scripts/test.sh --stress   the whole suite while eight busy loops
#                                   (SWITCHYARD_HOGS) hog the cores: proves
#                                   no test is timing-bound
set -uo pipefail
cd "$(dirname "$0")/.."

mode=full
for arg in "$@"; do
  case "$arg" in
    --short) mode=short ;;
    --stress) mode=stress ;;
    *) echo "usage: $0 [--short|--stress]" >&2; exit 2 ;;
  esac
done

failed=()
stage() { # stage NAME CMD...: runs CMD, remembers a failure, goes on
  local name=$1; shift
  echo "== $name"
  local start=$SECONDS
  if ! "$@"; then
    failed+=("$name")
    echo "!! $name failed"
  fi
  echo "   ($name: $((SECONDS - start)) s)"
}

check_gofmt() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './web/node_modules/*'))
  if [ -n "$unformatted" ]; then
    echo "gofmt would change:"; echo "$unformatted"; return 1
  fi
}

check_tidy() {
  # go mod tidy -diff prints what tidy would change and fails if anything.
  go mod tidy -diff
}

# staticcheck is pinned; go run fetches it from the module proxy once.
check_staticcheck() { go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...; }

# The UI's API types are generated from web/src/api/openapi.json (which a Go
# test keeps equal to the server's document): regenerate and compare.
check_api_types() {
  local gen=web/src/api/schema.gen.ts saved
  saved=$(mktemp)
  cp "$gen" "$saved"
  if ! npm run --silent gen:api >/dev/null; then rm -f "$saved"; return 1; fi
  if ! cmp -s "$gen" "$saved"; then
    echo "$gen is stale: run npm run gen:api and commit it"; diff "$saved" "$gen" | head -20
    cp "$saved" "$gen"; rm -f "$saved"; return 1
  fi
  rm -f "$saved"
}

stage "go vet" go vet ./...
stage "gofmt" check_gofmt
stage "go mod tidy" check_tidy
if [ "$mode" != short ]; then
  stage "staticcheck" check_staticcheck
fi

# The PostgreSQL store's tests run a private cluster (internal/pgtest); they
# fail under CI=true when no server binaries are installed.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  echo "== installing PostgreSQL (apt)"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null \
      || echo "PostgreSQL could not be installed: its tests will skip (fail under CI=true)"
  else
    echo "PostgreSQL is missing and cannot be installed here (needs root and apt-get)"
  fi
fi

# YAML script nodes with runtime bun run for real in the tests.
if ! command -v bun >/dev/null 2>&1; then
  echo "== installing bun (npm)"
  npm install -g bun >/dev/null 2>&1 || echo "bun could not be installed: its tests will skip"
fi

# The Go tests of mcp/ run a third-party MCP server from npm
# (@modelcontextprotocol/server-everything, a root devDependency): npm ci
# comes before them. It installs the web workspace too, so the web stage
# below needs no second install. The inner loop installs only when missing.
if [ -f package.json ] && command -v npm >/dev/null 2>&1; then
  if [ "$mode" = full ] || [ ! -e node_modules/.bin/mcp-server-everything ]; then
    stage "npm ci (the Go tests start an MCP server from node_modules; the web UI's packages)" npm ci --no-audit --no-fund
  fi
else
  echo "npm is missing: the MCP tests that need a server from npm will skip (fail under CI=true)"
fi

case "$mode" in
  short)
    stage "go test -short -race" go test -race -short -count=1 -timeout 10m ./...
    ;;
  stress)
    # The hogs stay for the web stages too (they are killed on exit).
    echo "== hogging the cores with ${SWITCHYARD_HOGS:-8} busy loops"
    hogs=()
    for _ in $(seq "${SWITCHYARD_HOGS:-8}"); do sh -c 'while :; do :; done' & hogs+=($!); done
    trap 'kill "${hogs[@]}" 2>/dev/null' EXIT
    stage "go test -race (cores hogged)" go test -race -count=1 -timeout 60m ./...
    ;;
  full)
    stage "go test -race" go test -race -count=1 -timeout 20m ./...
    ;;
esac

if [ "$mode" != short ] && [ -f web/package.json ] && [ "${SWITCHYARD_SKIP_WEB:-}" != "1" ]; then
  stage "web: API types match the OpenAPI document" check_api_types
  stage "web: typecheck" npm run typecheck:web
  stage "web: unit tests" npm run test:web
  if [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    else
      echo "chromium is missing and cannot be installed here (needs root and apt-get)"
    fi
  fi
  stage "web: browser end-to-end tests (real server, fake LLM, Debian Chromium)" npm run test:e2e
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED stages: ${failed[*]}"
  exit 1
fi
echo "all stages passed"
