#!/bin/sh
# kernel_uprobe.sh: the kernel's uprobe on the function BenchmarkRuntimeProbeCall
# probes (strconv.FormatInt), for the third column of bench/README.md's "The hot path
# per P": sdt's BenchmarkRuntimeProbeCall/off (the function unprobed by gosdt) alone,
# under a bpftrace uprobe counting its entries, and under a uprobe and a uretprobe
# timing each call into a histogram; alternated, ROUNDS times. Needs root and bpftrace.
#
# Usage: bench/kernel_uprobe.sh [rounds]   (default 3)
set -u
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/sdt.test
(cd "$here/.." && go test -c -o "$bin" ./sdt) || exit 1
run() {
	"$bin" -test.run '^$' -test.bench 'RuntimeProbeCall/off$' -test.benchtime 200000x >"$tmp/run" 2>&1
	awk '/^Benchmark/ { print $3 " ns" }' "$tmp/run" | grep . || echo "no figure: $(head -1 "$tmp/run")"
}
with() {
	bpftrace -e "$1" >"$tmp/bt" 2>&1 &
	bt=$!
	for i in $(seq 100); do grep -q Attaching "$tmp/bt" && break; sleep 0.1; done
	sleep 1
	v=$(run)
	kill -INT $bt
	wait $bt 2>/dev/null
	echo "$v"
}
entry="uprobe:$bin:strconv.FormatInt { @ = count(); }"
both="uprobe:$bin:strconv.FormatInt { @s[tid] = nsecs; } uretprobe:$bin:strconv.FormatInt /@s[tid]/ { @lat = hist(nsecs - @s[tid]); delete(@s[tid]); }"
for r in $(seq "${1:-3}"); do
	echo "round $r, load $(cut -d' ' -f1 /proc/loadavg): off $(run); uprobe $(with "$entry"); uprobe+uretprobe $(with "$both")"
done
