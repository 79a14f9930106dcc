//go:build linux

package main

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// buildLast builds testdata/last: N fires in microseconds, then an exit, a panic, a
// SIGKILL or a SIGTERM of itself, with nothing waiting for the reader.
func buildLast(t *testing.T) string { return buildCommand(t, "last") }

var lastSummary = regexp.MustCompile(`(\d+) events in .*, (\d+) dropped`)

// traceLast runs sdtctl trace last:::word -- last N END and returns the events
// printed (their i, in order) and the summary's counts.
func traceLast(t *testing.T, bin string, n int, end string) (is []int, events, dropped int) {
	t.Helper()
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	var out, errb bytes.Buffer
	run([]string{"trace", "last:::word", "--", bin, strconv.Itoa(n), end}, &out, &errb)
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		_, after, ok := strings.Cut(line, " i=")
		if !ok {
			continue
		}
		v, _, _ := strings.Cut(after, " ")
		i, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		is = append(is, i)
	}
	m := lastSummary.FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no summary:\n%s", errb.String())
	}
	events, _ = strconv.Atoi(m[1])
	dropped, _ = strconv.Atoi(m[2])
	return is, events, dropped
}

// TestTraceOutlivesCommand: the events a command fired before it exited, panicked,
// was killed or died of a signal are all read after its end, from the buffers it
// shared, in order, each once.
func TestTraceOutlivesCommand(t *testing.T) {
	bin := buildLast(t)
	for _, end := range []string{"exit", "panic", "kill", "term"} {
		t.Run(end, func(t *testing.T) {
			is, events, dropped := traceLast(t, bin, 1000, end)
			if len(is) != 1000 || events != 1000 || dropped != 0 {
				t.Fatalf("%d events printed, %d said, %d dropped: want 1000, 1000, 0", len(is), events, dropped)
			}
			for k, i := range is {
				if i != k {
					t.Fatalf("event %d is i=%d", k, i)
				}
			}
		})
	}
}

// TestTraceOutlivesCommandFull: a command that fires more than its buffers hold
// before it ends: every fire is printed or counted dropped, none twice.
func TestTraceOutlivesCommandFull(t *testing.T) {
	if testing.Short() {
		t.Skip("a million events")
	}
	bin := buildLast(t)
	const n = 1000000
	is, events, dropped := traceLast(t, bin, n, "exit")
	seen := make(map[int]bool, len(is))
	for _, i := range is {
		if seen[i] {
			t.Fatalf("i=%d twice", i)
		}
		seen[i] = true
	}
	if events != len(is) || events+dropped != n {
		t.Fatalf("%d printed, %d events said + %d dropped: want %d in all", len(is), events, dropped, n)
	}
	t.Logf("%d events, %d dropped", events, dropped)
}
