#!/usr/bin/env bash
# scale.sh: how server CPU per run and throughput scale with cores.
#
#   bash scripts/scale.sh /path/to/switchyard [duration] [core counts...]
#   bash scripts/scale.sh ./switchyard 10s 1 2 4 8
#
# Needs only bash, taskset (util-linux) and a static switchyard binary
# (CGO_ENABLED=0 go build -o switchyard ./cmd/switchyard): no Go, no Node.
# For each route (POST /api/runs and AgentFlow's POST /api/run) and each
# core count N, `switchyard load runs` starts the server pinned to CPUs
# 0..N-1 (GOMAXPROCS=N), the fake LLM (`switchyard fake-llm`) pinned to the
# upper half of the machine's CPUs, and runs its 32 clients on the CPUs
# left between them (taskset). It prints one table: cores, runs/s, the
# server's CPU µs per run, the fake LLM's CPU µs per call, and the share
# of the time the store's single writer was busy (near 100 % it, not the
# cores, bounds runs/s; SQLite has one writer a process) and its commits
# per run (fewer when its batches are larger). The fake's
# figure is the same work on every line: when it moves, the machine (not
# the server) changed speed. SCALE_GRAPH=file.json runs that drawn graph.
# SCALE_PROFILES=dir writes the server's CPU and lock-contention profiles
# of each line there (cpu-ROUTE-N.pprof, mutex-ROUTE-N.pprof; go tool
# pprof): what grows with cores shows in the second.
set -euo pipefail

bin=${1:?usage: scale.sh SWITCHYARD_BINARY [duration] [cores...]}
dur=${2:-10s}
shift $(( $# >= 2 ? 2 : 1 ))
counts=("$@")
[ ${#counts[@]} -gt 0 ] || counts=(1 2 4 8)
command -v taskset >/dev/null || { echo "scale.sh: taskset (util-linux) is needed" >&2; exit 2; }
[ -x "$bin" ] || { echo "scale.sh: $bin is not an executable" >&2; exit 2; }

ncpu=$(nproc --all 2>/dev/null || getconf _NPROCESSORS_ONLN)
max=0
for n in "${counts[@]}"; do (( n > max )) && max=$n; done
# Server on 0..max-1; the fake and the driver share what is left, the fake
# on the upper half of it.
free=$(( ncpu - max ))
if (( free >= 2 )); then
	fake_lo=$(( max + free / 2 ))
	fake_args=(--fake-cpus "$fake_lo-$((ncpu - 1))")
	driver_cpus="$max-$((fake_lo - 1))"
	driver_procs=$(( fake_lo - max ))
	where="driver on $driver_cpus, fake LLM on ${fake_args[1]}"
else
	# A small machine (a smoke test): the driver and the fake share every
	# CPU with the server, so the figures are not the scaling's.
	echo "scale.sh: only $ncpu CPUs, $((max + 2)) wanted: the fake and the driver are not kept off the server's CPUs" >&2
	fake_args=()
	driver_cpus="0-$((ncpu - 1))"
	driver_procs=1
	where="driver and fake LLM on every CPU (shared)"
fi
graph_args=()
[ -n "${SCALE_GRAPH:-}" ] && graph_args=(--graph "$SCALE_GRAPH")

echo "# $ncpu CPUs; server on 0..N-1, $where; $dur per line"
printf '%-7s %-6s %10s %16s %16s %12s %12s %12s\n' route cores runs/s "server µs/run" "fake µs/call" "peak RSS MB" "writer busy" "commits/run"
for route in runs compat; do
	for n in "${counts[@]}"; do
		prof_env=()
		if [ -n "${SCALE_PROFILES:-}" ]; then
			mkdir -p "$SCALE_PROFILES"
			prof_env=(SWITCHYARD_CPUPROFILE="$SCALE_PROFILES/cpu-$route-$n.pprof" SWITCHYARD_MUTEXPROFILE="$SCALE_PROFILES/mutex-$route-$n.pprof")
		fi
		out=$(env "${prof_env[@]}" GOMAXPROCS=$driver_procs taskset -c "$driver_cpus" "$bin" load runs --route "$route" \
			--duration "$dur" --quiet --json --cores "$n" "${fake_args[@]}" "${graph_args[@]}") || {
			echo "scale.sh: load failed for $route at $n cores" >&2
			exit 1
		}
		# The summary is one JSON object; pick the fields without jq.
		field() { sed -n "s/.*\"$1\": *\([0-9.e+-]*\).*/\1/p" <<<"$out" | head -1; }
		printf '%-7s %-6s %10.0f %16.0f %16.1f %12.0f %11.0f%% %12.3f\n' "$route" "$n" "$(field completedPerSec)" \
			"$(field serverCpuPerRunUs)" "$(field fakeCpuPerCallUs)" "$(field serverPeakRssMb)" "$(field writerBusyPct)" "$(field commitsPerRun)"
	done
done
