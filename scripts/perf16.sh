#!/usr/bin/env bash
# perf16.sh: issue 25's figures on a many-core machine, in one pass.
#
#   bash scripts/perf16.sh NEW_BINARY [OLD_BINARY] OUTDIR
#
# Needs only bash, taskset and static switchyard binaries (CGO_ENABLED=0):
# the machine may have no Go or Node. Writes into OUTDIR:
#   machine.txt   the CPU model and count, the kernel
#   scale.txt     scripts/scale.sh NEW 5s 1 2 4 8 (both routes)
#   against.txt   NEW against OLD in paired slices (load runs --against),
#                 both routes at 1, 2 and 8 server cores, driver and fake
#                 LLM on CPUs of their own (skipped without OLD)
#   fanout.txt    a 1,000-branch fan-out at 200 ms latency, three on one
#                 fresh server, unpinned and with the server on 2 cores
#   others.txt    load watchers, load watchers --burst, load approvals
#                 --runs 10000
#   profiles.tgz  the server's CPU and mutex profiles of each scale.sh line
# Each step has its own time limit and a failed step does not stop the
# others, so one pass on a borrowed machine brings back what it can.
set -uo pipefail

new=${1:?usage: perf16.sh NEW_BINARY [OLD_BINARY] OUTDIR}
if [ $# -ge 3 ]; then old=$2; out=$3; else old=; out=${2:?usage: perf16.sh NEW_BINARY [OLD_BINARY] OUTDIR}; fi
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
ncpu=$(nproc --all)
{
	grep -m1 'model name' /proc/cpuinfo
	echo "cpus: $ncpu"
	uname -r
} >"$out/machine.txt" 2>&1

step() { # step NAME LIMIT_SECONDS COMMAND...: runs it, appends its output to OUTDIR/NAME.txt
	local name=$1 limit=$2
	shift 2
	echo "== $(date +%T) $*" >>"$out/$name.txt"
	timeout "$limit" "$@" >>"$out/$name.txt" 2>&1 || echo "!! exit $? after $* (limit ${limit}s)" | tee -a "$out/$name.txt"
}

SCALE_PROFILES="$out/prof" step scale 200 bash "$here/scale.sh" "$new" 5s 1 2 4 8
cat "$out/scale.txt"

if [ -n "$old" ] && ((ncpu >= 16)); then
	for route in runs compat; do
		for n in 1 2 8; do
			GOMAXPROCS=4 step against 90 taskset -c 8-11 "$new" load runs --route "$route" --cores "$n" \
				--fake-cpus 12-15 --against "$old" --rounds 4 --duration 2s --quiet
		done
	done
	grep -E '^(==|mean|B against)' "$out/against.txt"
fi

step fanout 60 "$new" load fanout --llm-latency 200ms --repeat 3 --json --quiet
step fanout 60 "$new" load fanout --llm-latency 200ms --repeat 3 --json --quiet --cores 2
grep -E '^==|"(wallMs|startLatencyMs)"|^ +[0-9.]+,?$' "$out/fanout.txt"

step others 90 "$new" load watchers --json --quiet
step others 90 "$new" load watchers --burst --json --quiet
step others 120 "$new" load approvals --runs 10000 --json --quiet
grep -E '^==|"(p99Ms|eventsPerSec|gaps|duplicates|wonTwice|neverWon|serverRssPausedMb)"' "$out/others.txt"

if [ -d "$out/prof" ]; then
	tar -C "$out" -czf "$out/profiles.tgz" prof && rm -rf "$out/prof"
fi
