#!/bin/sh
# callgrind.sh: deterministic instructions per disabled site, per variant.
#
# Builds bench/internal/callgrindprog and runs it under callgrind twice: as is (the
# gosdt kernels' sites sealed) and with SDT_PATCH=off (the same kernels, same
# addresses, keeping the compiler's branch check). Prints, for every shape and
# variant, the instructions its kernel retired per site:
# (Ir(variant) - Ir(none)) / (iterations * sites), Ir inclusive of callees, "none"
# from the same run. --smc-check=all is required: gosdt rewrites its own text at
# start-up, and valgrind must re-translate the patched code. GODEBUG=asyncpreemptoff=1:
# callgrind 3.19 aborts on the SIGURG of Go's asynchronous preemption. cpu.rdtscp=off:
# valgrind 3.19 cannot decode RDTSCP, which the runtime's cputicks uses where the CPU
# has it (seen on an AMD EPYC VM: SIGILL at start-up).
# GOMAXPROCS=1: with more Ps, a kernel that calls functions (slog) is descheduled at
# their prologue by sysmon's preemption and the scheduler's work on its thread is
# counted inclusive of that kernel (seen at GOMAXPROCS=2: chain slog 389, 450 and 467
# instructions per site in three runs; 57.0 in every run at GOMAXPROCS=1).
#
# Usage: bench/callgrind.sh [iterations]   (default 200000)
set -eu
n=${1:-200000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here" && go build -o "$tmp/prog" ./internal/callgrindprog)
for mode in on off; do
	SDT_PATCH=$mode GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --smc-check=all \
		--callgrind-out-file="$tmp/cg.$mode" "$tmp/prog" -n "$n" >"$tmp/run.$mode" 2>"$tmp/valgrind.$mode" || {
		cat "$tmp/valgrind.$mode" "$tmp/run.$mode" >&2
		exit 1
	}
	callgrind_annotate --inclusive=yes --threshold=100 "$tmp/cg.$mode" >"$tmp/annotate.$mode" 2>/dev/null
done
# Run lines: "chain_sealed iterations=200000 sites=1 fn=chain_gosdt".
# Annotate lines: "12,345,678 (1.2%)  ???:github.com/gosdt/gosdt/bench/internal/kernels.wide_gosdt [/tmp/.../prog]".
# From the SDT_PATCH=off run only the branch kernels are kept (the rest repeat).
summarize() { # run annotate keep-regexp
	awk -v runs="$1" -v keep="$3" '
	BEGIN {
		while ((getline line < runs) > 0) {
			split(line, f, " "); k = f[1]; fn = f[4]
			sub("iterations=", "", f[2]); sub("sites=", "", f[3]); sub("fn=", "", fn)
			iters[k] = f[2]; sites[k] = f[3]; fns[k] = fn; order[++n] = k
		}
	}
	{
		for (i = 1; i <= NF; i++) if ($i ~ /kernels\.[a-z]+_[a-z]+$/) {
			name = $i; sub(/.*kernels\./, "", name)
			ir = $1; gsub(",", "", ir)
			if (!(name in irs)) irs[name] = ir
		}
	}
	END {
		for (i = 1; i <= n; i++) {
			k = order[i]; if (k !~ keep) continue
			shape = k; sub(/_.*/, "", shape)
			per = irs[fns[k]] / iters[k]; base = irs[shape "_none"] / iters[shape "_none"]
			printf "%-18s %14d %10d %6d %14.2f %12.2f\n", k, irs[fns[k]], iters[k], sites[k], per, (per - base) / sites[k]
		}
	}' "$2"
}
printf "%-18s %14s %10s %6s %14s %12s\n" "kernel" "Ir" "iters" "sites" "Ir/iteration" "added/site"
summarize "$tmp/run.on" "$tmp/annotate.on" '.'
summarize "$tmp/run.off" "$tmp/annotate.off" '_branch$'
