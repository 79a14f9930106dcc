#!/bin/bash
# tracerate.sh: sdtctl trace at production rates (issue 12, bench/README.md). Builds
# sdtctl and cmd/sdtctl/testdata/source (which fires src:::fire(int, int, string) once
# a trace switches it on), then RUNS times each:
#   steady  a source of 1,000,000 fires/s for 3.5 s, traced for 5 s to a file
#   10M     a source of 10,000,000 fires/s for 2 s, traced for 4 s to a file (issue 24)
#   10M raw the same, trace --raw (records unformatted; sdtctl decode prints them),
#           with the default buffers (32m for --raw to a file) and with --bufsize 4m;
#           and, where SDTCTL_BASE names another sdtctl binary (an earlier build to
#           compare with), that one's trace --raw, alternated with this one's
#   fast    a source firing as fast as it goes, traced for 1 s to a file
# and prints what the source fired, sdtctl's summary (events, dropped), and the event
# lines in the file.
#
# Usage: [SDTCTL_BASE=OLD_SDTCTL] bench/tracerate.sh [RUNS]   (default 5)
set -u
runs=${1:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go build -o "$tmp/sdtctl" ./cmd/sdtctl && go build -o "$tmp/source" ./cmd/sdtctl/testdata/source) || exit 1
export XDG_RUNTIME_DIR="$tmp/run"
mkdir -m 700 "$XDG_RUNTIME_DIR"

# one N RATE DUR [FLAGS]: a source of N fires at RATE per second (0: as fast as it
# goes), traced for DUR with FLAGS.
one() {
	local ctl="$tmp/sdtctl"
	if [ "$1" = base ]; then
		ctl=$SDTCTL_BASE
		shift
	fi
	# the source waits for its stdin to close once done: sleep holds it open
	sleep 60 | "$tmp/source" -g 1 -n "$1" -rate "$2" >"$tmp/src.out" &
	local pid hold
	hold=$(pgrep -n -P "$$" -x sleep) # killed with the source: waiting for it took 60 s a run
	for _ in $(seq 100); do
		pid=$(pgrep -n -P "$$" -x source) && [ -S "$XDG_RUNTIME_DIR/gosdt/$pid.sock" ] && break
		sleep 0.05
	done
	/usr/bin/time -f "%U s user, %S s sys" -o "$tmp/time" "$ctl" trace -p "$pid" 'src:::fire' -d "$3" "${@:4}" >"$tmp/trace.out" 2>"$tmp/trace.err"
	sleep 0.2
	echo "source: $(grep done "$tmp/src.out")"
	echo "trace:  $(cat "$tmp/trace.err")"
	echo "sdtctl: $(cat "$tmp/time")"
	if [ "${4:-}" = --raw ]; then
		echo "lines:  $("$tmp/sdtctl" decode "$tmp/trace.out" 2>/dev/null | grep -c ' src:')"
	else
		echo "lines:  $(grep -c ' src:' "$tmp/trace.out")"
	fi
	rm -f "$tmp/trace.out"
	kill "$pid" $hold 2>/dev/null
	wait 2>/dev/null
}

echo "# $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) vCPUs; $(uname -sr); $(go version)"
for _ in $(seq "$runs"); do
	echo "## steady 1M/s, 3.5M fires, trace -d 5s; $(uptime | sed 's/.*load/load/')"
	one 3500000 1000000 5s
done
for _ in $(seq "$runs"); do
	echo "## steady 10M/s, 20M fires, trace -d 4s; $(uptime | sed 's/.*load/load/')"
	one 20000000 10000000 4s
	if [ -n "${SDTCTL_BASE:-}" ]; then
		echo "## steady 10M/s, 20M fires, $SDTCTL_BASE trace -d 4s --raw; $(uptime | sed 's/.*load/load/')"
		one base 20000000 10000000 4s --raw
	fi
	echo "## steady 10M/s, 20M fires, trace -d 4s --raw --bufsize 4m; $(uptime | sed 's/.*load/load/')"
	one 20000000 10000000 4s --raw --bufsize 4m
	echo "## steady 10M/s, 20M fires, trace -d 4s --raw; $(uptime | sed 's/.*load/load/')"
	one 20000000 10000000 4s --raw
done
for _ in $(seq "$runs"); do
	echo "## as fast as it goes, trace -d 1s; $(uptime | sed 's/.*load/load/')"
	one 40000000 0 1s
done
