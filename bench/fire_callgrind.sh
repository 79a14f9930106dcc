#!/bin/sh
# fire_callgrind.sh: deterministic cost of an enabled fire, per consumer: builds
# bench/internal/fireprog, runs it under callgrind, and prints the instructions each
# loop retires per fire (the loop's own two or three included):
#   counter   the site's hit count only (sdt.Enable)
#   trace     a record into the P's trace buffer (control.OpenTrace)
#   count     an aggregation counting by probe (control.OpenAggregation)
#   sum       the same, summing, bounding the argument
#   quantize  the same, and its power-of-two histogram
# Instructions are not time: the trace's RDTSC is one instruction and ~12 ns on the
# AMD EPYC VM of bench/README.md. GODEBUG as in callgrind.sh; GOGC=off, so that no
# collection runs during a loop (callgrind would count it in).
#
# Usage: bench/fire_callgrind.sh [fires]   (default 50000)
set -eu
n=${1:-50000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here" && go build -o "$tmp/fireprog" ./internal/fireprog)
for loop in Counter Trace Count Sum Quantize; do
	# Only the instructions retired while main.loop<name> runs are counted.
	GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --smc-check=all \
		--collect-atstart=no --toggle-collect="main.loop$loop" \
		--callgrind-out-file="$tmp/cg.$loop" "$tmp/fireprog" -n "$n" >"$tmp/run" 2>"$tmp/valgrind" || {
		cat "$tmp/valgrind" "$tmp/run" >&2
		exit 1
	}
	callgrind_annotate "$tmp/cg.$loop" 2>/dev/null |
		awk -v n="$n" -v loop="$loop" '/PROGRAM TOTALS/ { ir = $1; gsub(",", "", ir); printf "%-10s %8.1f\n", loop, ir / n }'
done
