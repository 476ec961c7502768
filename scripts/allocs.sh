#!/usr/bin/env bash
# allocs.sh: the server's heap allocations per run, for several builds
# of switchyard compared in interleaved passes.
#
#   bash scripts/allocs.sh LOAD_BINARY SERVER_BINARY... [-- passes duration]
#   bash scripts/allocs.sh ./switchyard ./switchyard-before ./switchyard -- 3 6s
#
# For each pass and each SERVER_BINARY in turn it starts the fake LLM
# (LOAD_BINARY fake-llm --whole), the server on CPU 0 with GOMAXPROCS=1
# and a fresh data folder, and drives it with LOAD_BINARY load runs
# --server (which must be a build that reports serverAllocsPerRun: older
# servers can be measured, since the figures come from their /metrics).
# Allocations per run do not move with the machine's speed as CPU per run
# does, but they move a little with how many runs share a commit: compare
# the servers within a pass, not across passes.
set -euo pipefail

load=${1:?usage: allocs.sh LOAD_BINARY SERVER_BINARY... [-- passes duration]}
shift
servers=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do servers+=("$1"); shift; done
[ $# -gt 0 ] && shift
passes=${1:-3}
dur=${2:-6s}
[ ${#servers[@]} -gt 0 ] || { echo "allocs.sh: name at least one server binary" >&2; exit 2; }
for b in "$load" "${servers[@]}"; do
	[ -x "$b" ] || { echo "allocs.sh: $b is not an executable" >&2; exit 2; }
done
pin=()
command -v taskset >/dev/null && pin=(taskset -c 0)
# What a pass started is stopped however the script ends (a failed load
# run exits through set -e).
server="" fake="" dir=""
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null
	[ -n "$fake" ] && kill "$fake" 2>/dev/null
	[ -n "$dir" ] && rm -rf "$dir"
	return 0
}
trap cleanup EXIT

# wait_for FILE PATTERN: until a line of FILE matches (30 s at most).
wait_for() {
	for _ in $(seq 300); do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	echo "allocs.sh: no '$2' in $1:" >&2
	cat "$1" >&2
	return 1
}

printf '%-5s %-40s %8s %12s %10s %14s\n' pass server runs allocs/run KB/run gcs/1000runs
for pass in $(seq "$passes"); do
	for srv in "${servers[@]}"; do
		dir=$(mktemp -d)
		token=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
		"$load" fake-llm --whole --addr 127.0.0.1:0 >"$dir/fake.log" 2>&1 &
		fake=$!
		wait_for "$dir/fake.log" 'http://'
		fake_url=$(grep -o 'http://[^ ]*/v1' "$dir/fake.log" | head -1)
		SWITCHYARD_TOKEN=$token OPENAI_BASE_URL=$fake_url OPENAI_API_KEY=x GOMAXPROCS=1 \
			"${pin[@]}" "$srv" serve --addr 127.0.0.1:0 --data "$dir/data" >"$dir/serve.log" 2>&1 &
		server=$!
		wait_for "$dir/serve.log" 'listening'
		url=$(grep -o 'url=http://[^ ]*' "$dir/serve.log" | head -1 | cut -d= -f2)
		"$load" load runs --server "$url" --token "$token" --fake-url "$fake_url" --duration "$dur" --json --quiet >"$dir/out.json"
		kill "$server" "$fake" 2>/dev/null || true
		wait "$server" "$fake" 2>/dev/null || true
		server="" fake=""
		python3 - "$pass" "$srv" "$dir/out.json" <<'PY' 2>/dev/null || sed -n 's/.*"serverAllocsPerRun":\([0-9.]*\).*/\1/p' "$dir/out.json"
import json, sys
r = json.load(open(sys.argv[3]))["result"]
print("%-5s %-40s %8d %12.1f %10.1f %14.2f" % (sys.argv[1], sys.argv[2][-40:], r["completed"],
      r.get("serverAllocsPerRun", 0), r.get("serverAllocKbPerRun", 0), r.get("serverGcsPer1000Runs", 0)))
PY
		rm -rf "$dir"
		dir=""
	done
done
