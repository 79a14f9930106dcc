#!/bin/sh
# fprobe_insns.sh: deterministic cost of a call of a function with run-time probes
# (sdt/internal/fprobe's TestCallInstructions: target.Sum called in one loop function
# per mode), as instructions retired per call, the loop's own included:
#   Off         no probe
#   EntryQuiet  an entry probe nobody consumes (sdt.Enable of fbt:...:entry)
#   Folded      that, and the returns counted with their latency folded on their P
#               (what a count aggregation of entry and return costs)
#   HookRing    an entry hook, the returns put into the rings and read every 64 calls
#   Direct      the entry counted, each return written by the return path into a
#               trace's per-P buffer (what a trace's returns cost; amd64 only)
#   WhereDirect that, with the trace's predicate (r0 > 3, half of them pass) run by
#               the return path (what --where adds to it; amd64 only)
# amd64: under callgrind, one run per mode (--toggle-collect on its loop).
# arm64: under qemu-user, one instruction per block (-singlestep, -d nochain,exec),
# logging only the pcs of package fprobe, its targets and runtime.procPin/procUnpin
# (all the probed call executes: the others' instructions would not be counted, so
# HookRing, which reads the rings through sync and the clock, is left out there).
#
# Usage: bench/fprobe_insns.sh amd64|arm64 [calls]   (default 20000 / 2000)
set -eu
arch=${1:?amd64 or arm64}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pkg=github.com/gosdt/gosdt/sdt/internal/fprobe
(cd "$here/.." && GOARCH=$arch go test -c -o "$tmp/fprobe.test" ./sdt/internal/fprobe)
export GOGC=off GOMAXPROCS=1 GODEBUG=asyncpreemptoff=1
case $arch in
amd64)
	n=${2:-20000}
	for m in Off EntryQuiet Folded HookRing Direct WhereDirect; do
		FPROBE_INSNS=$n valgrind --tool=callgrind --smc-check=all --collect-atstart=no \
			--toggle-collect="$pkg.insns$m" --callgrind-out-file="$tmp/cg.$m" \
			"$tmp/fprobe.test" -test.run TestCallInstructions >"$tmp/run" 2>"$tmp/valgrind" || {
			cat "$tmp/valgrind" "$tmp/run" >&2
			exit 1
		}
		callgrind_annotate "$tmp/cg.$m" 2>/dev/null |
			awk -v n="$n" -v m="$m" '/PROGRAM TOTALS/ { ir = $1; gsub(",", "", ir); printf "%-10s %8.1f\n", m, ir / n }'
	done
	;;
arm64)
	n=${2:-2000}
	go tool nm -size -sort address "$tmp/fprobe.test" >"$tmp/nm"
	# The ranges logged, adjacent symbols merged; and the loops' and their caller's.
	filter=$(awk 'function hex(s,  i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
		$3 == "T" && ($4 ~ /sdt\/internal\/fprobe[.\/]/ || $4 == "runtime.procPin" || $4 == "runtime.procUnpin") {
			lo = hex($1); hi = lo + $2
			if (n > 0 && lo <= last + 64) { last = hi; next }
			if (n > 0) printf ",0x%x..0x%x", first, last - 1
			first = lo; last = hi; n++
		}
		END { printf ",0x%x..0x%x", first, last - 1 }' "$tmp/nm" | cut -c2-)
	loops=$(awk -v p="$pkg" 'function hex(s,  i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
		$4 == p ".insnsOff" || $4 == p ".insnsEntryQuiet" || $4 == p ".insnsFolded" || $4 == p ".TestCallInstructions" {
			sub(".*\\.", "", $4); printf "%s %d %d\n", $4, hex($1), hex($1) + $2 }' "$tmp/nm")
	FPROBE_INSNS=$n qemu-aarch64-static -singlestep -d nochain,exec -dfilter "$filter" -D "$tmp/log" \
		"$tmp/fprobe.test" -test.run TestCallInstructions >"$tmp/run" 2>&1 || {
		cat "$tmp/run" >&2
		exit 1
	}
	# Each logged line is one instruction executed; a loop's mode lasts from its first
	# pc to the next pc of its caller.
	echo "$loops" | awk -v n="$n" 'function hex(s,  i, v) { v = 0; s = tolower(s); for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1; return v }
		NR == FNR { name[NR] = $1; lo[NR] = $2; hi[NR] = $3; k = NR; next }
		/^Trace/ {
			if (!match($0, /\/[0-9a-f]+\//)) next
			pc = hex(substr($0, RSTART + 1, RLENGTH - 2))
			for (i = 1; i <= k; i++) if (pc >= lo[i] && pc < hi[i]) {
				mode = name[i] == "TestCallInstructions" ? "" : name[i]
				break
			}
			if (mode != "") count[mode]++
		}
		END { for (m in count) printf "%-10s %8.1f\n", substr(m, 6), count[m] / n }' - "$tmp/log" | sort
	;;
esac
