#!/bin/sh
# callgrind.sh: deterministic instructions per disabled site, per variant.
#
# Builds bench/internal/callgrindprog, runs it under callgrind and prints, for every
# shape and variant, the instructions its kernel retired per site:
# (Ir(variant) - Ir(none)) / (iterations * sites), Ir inclusive of callees.
# --smc-check=all is required: gosdt rewrites its own text at start-up, and valgrind
# must re-translate the patched code. GODEBUG=asyncpreemptoff=1: callgrind 3.19
# aborts on the SIGURG of Go's asynchronous preemption (threads.c:247 assertion).
#
# Usage: bench/callgrind.sh [iterations]   (default 200000)
set -eu
n=${1:-200000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here" && go build -o "$tmp/prog" ./internal/callgrindprog)
GODEBUG=asyncpreemptoff=1 valgrind --tool=callgrind --smc-check=all --callgrind-out-file="$tmp/cg.out" \
	"$tmp/prog" -n "$n" >"$tmp/run.txt" 2>"$tmp/valgrind.txt" || {
	cat "$tmp/valgrind.txt" "$tmp/run.txt" >&2
	exit 1
}
callgrind_annotate --inclusive=yes --threshold=100 "$tmp/cg.out" >"$tmp/annotate.txt" 2>/dev/null
# Lines look like: "12,345,678 (1.2%)  ???:main.wide_sealed [/tmp/.../prog]".
awk -v runs="$tmp/run.txt" '
BEGIN {
	while ((getline line < runs) > 0) {
		split(line, f, " "); k = f[1]
		sub("iterations=", "", f[2]); sub("sites=", "", f[3])
		iters[k] = f[2]; sites[k] = f[3]; order[++n] = k
	}
}
{
	for (i = 1; i <= NF; i++) if ($i ~ /:main\.[a-z]+_[a-z]+$/) {
		name = $i; sub(/.*:main\./, "", name)
		ir = $1; gsub(",", "", ir)
		if (!(name in irs)) irs[name] = ir
	}
}
END {
	printf "%-18s %14s %10s %6s %14s %12s\n", "kernel", "Ir", "iters", "sites", "Ir/iteration", "added/site"
	for (i = 1; i <= n; i++) {
		k = order[i]; shape = k; sub(/_.*/, "", shape)
		per = irs[k] / iters[k]; base = irs[shape "_none"] / iters[shape "_none"]
		printf "%-18s %14d %10d %6d %14.2f %12.2f\n", k, irs[k], iters[k], sites[k], per, (per - base) / sites[k]
	}
}' "$tmp/annotate.txt"
