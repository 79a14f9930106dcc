#!/bin/sh
# fbt_callgrind.sh: deterministic cost of fbt while off, per call of an instrumented
# function. Builds bench/internal/fbtprog twice, without rules and with bench/fbt.rules
# (go build -toolexec "sdtctl toolexec -rules ..."), runs both under callgrind and
# prints, per kernel loop, the instructions retired per call in each build and the
# difference. The loops are not instrumented; the functions they call are:
#   Work  a leaf (no frame before): the rewrite gives it a frame and stack check
#   Pair  a leaf with two results and two returns
#   Mid   already has a frame (it calls Work): only the two gates are added
#   Leaf  inlined into its loop without rules; with them it is a call
# Mid's figure includes Work's own added cost, printed without it too; the script
# fails when Mid alone costs more than 4 (the goal of issue 13). GODEBUG as in callgrind.sh.
#
# Usage: bench/fbt_callgrind.sh [iterations]   (default 200000)
set -eu
n=${1:-200000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$here/.." && go build -o "$tmp/sdtctl" ./cmd/sdtctl)
(cd "$here" && go build -o "$tmp/plain" ./internal/fbtprog &&
	go build -o "$tmp/fbt" -toolexec "$tmp/sdtctl toolexec -rules $here/fbt.rules" ./internal/fbtprog)
# measure runs both builds under callgrind and keeps each loop's inclusive count.
measure() {
	for v in plain fbt; do
		GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off valgrind --tool=callgrind --smc-check=all \
			--callgrind-out-file="$tmp/cg.$v" "$tmp/$v" -n "$n" >"$tmp/run.$v" 2>"$tmp/valgrind.$v" || {
			cat "$tmp/valgrind.$v" "$tmp/run.$v" >&2
			exit 1
		}
		callgrind_annotate --inclusive=yes --threshold=100 "$tmp/cg.$v" 2>/dev/null |
			awk '/fbtkern\.Loop[A-Za-z]+ \[/ { ir = $1; gsub(",", "", ir); name = $0; sub(/.*fbtkern\./, "", name); sub(/ .*/, "", name); print name, ir }' >"$tmp/ir.$v"
	done
}
# Callgrind's inclusive counts follow its own call stack, which a switch of goroutine
# stacks can break: once in CI, LoopMid without rules was charged 5.92 instructions a
# call, less than LoopWork, the function Mid itself calls. Such a run says nothing;
# it is measured again (at most three times), and reported if it stays inconsistent.
for attempt in 1 2 3; do
	measure
	consistent=yes
	for v in plain fbt; do
		awk '{ ir[$1] = $2 } END { exit !(("LoopMid" in ir) && ("LoopWork" in ir) && ir["LoopMid"] + 0 > ir["LoopWork"] + 0) }' "$tmp/ir.$v" || consistent=no
	done
	[ $consistent = yes ] && break
	echo "fbt_callgrind: run $attempt: LoopMid not charged with its call of Work (callgrind lost the call stack); measuring again" >&2
done
head -1 "$tmp/run.fbt"
awk -v n="$n" '
	FNR == NR { plain[$1] = $2; next }
	{ fbt[$1] = $2 }
	END {
		printf "%-10s %12s %12s %8s\n", "loop", "plain/call", "fbt/call", "added"
		for (k in fbt) {
			p = (k in plain) ? plain[k] / n : -1
			f = fbt[k] / n
			added[k] = f - p
			if (p < 0) printf "%-10s %12s %12.2f %8s\n", k, "(inlined)", f, "-"
			else printf "%-10s %12.2f %12.2f %8.2f\n", k, p, f, f - p
		}
		if (!("LoopMid" in added) || !("LoopWork" in added)) { print "fbt_callgrind: a loop is missing"; exit 1 }
		mid = added["LoopMid"] - added["LoopWork"]
		printf "Mid alone (LoopMid added minus Work added): %.2f\n", mid
		# The goal (issue 13): at most 4 instructions per call of a function with a frame.
		# Work of the runtime during a loop (a GC cycle, timers) is spread over its
		# calls: the same build measures 25.01 to 25.05 a call of LoopMid at 20,000
		# iterations, so the check allows 0.05 over the goal.
		if (mid > 4.05) { printf "fbt_callgrind: Mid costs %.2f instructions per call while off, goal 4\n", mid; exit 1 }
	}' "$tmp/ir.plain" "$tmp/ir.fbt"
