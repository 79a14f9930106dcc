#!/bin/sh
# runtime_vs_experiment.sh: run-time function probes through sdt's public API beside
# the feasibility study they were designed from (bench/dynprobe/amd64), alternated in
# one run on one machine, as issue 33 asks: each round runs the experiment
# (NOHANDLERWORK=1 BENCH=1 RET=1: its target1, a handler that only counts, no clock)
# and sdt's BenchmarkRuntimeProbeCall (strconv.FormatInt: an entry probe through
# sdt.Enable with nobody consuming; entry and return through
# control.OpenAggregation, each return's latency measured). It prints every round,
# then the median of each figure and gosdt's ratio to the experiment.
#
# Usage: bench/runtime_vs_experiment.sh [rounds]   (default 5; linux/amd64)
set -eu
rounds=${1:-5}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here/dynprobe/amd64" && go build -o "$tmp/exp" .)
(cd "$here/.." && go test -c -o "$tmp/sdt.test" ./sdt/)
lscpu | grep 'Model name' || true
for r in $(seq "$rounds"); do
	echo "== round $r, load $(cut -d' ' -f1-3 /proc/loadavg)"
	(cd "$tmp" && NOHANDLERWORK=1 BENCH=1 RET=1 ./exp) | tee -a "$tmp/exp.out"
	"$tmp/sdt.test" -test.run '^$' -test.bench 'RuntimeProbeCall/(entry|entry\+return-aggregation)$' \
		-test.benchtime 1s | grep '^Benchmark' | tee -a "$tmp/sdt.out"
done
# The experiment prints "with entry probe (handler only counts) 11ns" and
# "with entry+return probes 21ns"; the benchmark "entry-2 ... 15.1 ns/op".
awk '
	function median(a, n,   i, j, t) {
		for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
		return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
	}
	FILENAME ~ /exp.out/ && /with entry probe/ { v = $0; sub(/.*counts\) /, "", v); sub(/ns.*/, "", v); e[++ne] = v }
	FILENAME ~ /exp.out/ && /entry\+return probes/ { v = $0; sub(/.*probes /, "", v); sub(/ns.*/, "", v); er[++ner] = v }
	FILENAME ~ /sdt.out/ && /\/entry-/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ns/op") g[++ng] = $i }
	FILENAME ~ /sdt.out/ && /entry\+return-aggregation-/ { for (i = 1; i <= NF; i++) if ($(i+1) == "ns/op") gr[++ngr] = $i }
	END {
		if (!ne || !ner || !ng || !ngr) { print "a figure is missing: see the rounds above"; exit 1 }
		me = median(e, ne); mer = median(er, ner); mg = median(g, ng); mgr = median(gr, ngr)
		printf "\nmedians of %d rounds, wall-clock ns a call:\n", ng
		printf "%-36s %10s %10s %8s\n", "", "experiment", "gosdt", "ratio"
		printf "%-36s %10.1f %10.1f %7.2fx\n", "entry probe, nobody consuming", me, mg, mg / me
		printf "%-36s %10.1f %10.1f %7.2fx\n", "entry + return into an aggregation", mer, mgr, mgr / mer
	}' "$tmp/exp.out" "$tmp/sdt.out"
