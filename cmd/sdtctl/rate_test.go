//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// source is a running testdata/source: it fires src:::fire once a trace enables it,
// and says when it is done.
type source struct {
	pid  int
	done chan string // "done FIRED SECONDS RATE LAG_MS"
	said string      // the done line, once traceSource read it
}

// startSource starts testdata/source with args, its socket in a private directory.
func startSource(t *testing.T, args ...string) *source {
	t.Helper()
	sourceBin := testbin.Shared(t, "", runtime.GOARCH, "./testdata/source")
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	cmd := testutil.Command(sourceBin, args...)
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() || sc.Text() != "ready" {
		t.Fatal("the source did not start")
	}
	waitSocket(t, cmd.Process.Pid)
	s := &source{pid: cmd.Process.Pid, done: make(chan string, 1)}
	go func() {
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "done ") {
				s.done <- sc.Text()
			}
		}
	}()
	return s
}

// traceSummary is the last line of sdtctl trace --json.
type traceSummary struct {
	Events      int      `json:"events"`
	Drops       uint64   `json:"drops"`
	BufferDrops []uint64 `json:"buffer_drops"`
	Delivered   uint64   `json:"delivered"`
	Seconds     float64  `json:"seconds"`
}

// traceSource traces src:::fire in s until the source is done (then stops the
// trace), or until the trace ends by itself (-c), writing the events to the file out.
// It returns the summary and what the source said it fired (0 if it was not done).
func traceSource(t *testing.T, s *source, out *os.File, args ...string) (traceSummary, int) {
	t.Helper()
	stop := make(chan struct{})
	var errb bytes.Buffer
	res := make(chan error, 1)
	// --json writes the summary to stdout after the events, text to stderr.
	go func() {
		res <- cmdTrace(append([]string{"-p", strconv.Itoa(s.pid), "src:::fire"}, args...), out, &errb, stop)
	}()
	fired := 0
	select {
	case line := <-s.done:
		s.said = line
		f := strings.Fields(line)
		fired, _ = strconv.Atoi(f[1])
		t.Logf("source: %s", line)
		close(stop)
		if err := <-res; err != nil {
			t.Fatalf("trace: %v (%s)", err, errb.String())
		}
	case err := <-res:
		if err != nil {
			t.Fatalf("trace: %v (%s)", err, errb.String())
		}
	case <-time.After(5 * time.Minute):
		t.Fatal("neither the source nor the trace ended in 5 minutes")
	}
	var ts traceSummary
	if !slices.Contains(args, "--json") {
		line := strings.TrimSpace(errb.String())
		if _, err := fmt.Sscanf(line, "%d events in %fs", &ts.Events, &ts.Seconds); err != nil {
			t.Fatalf("summary %q: %v", line, err)
		}
		if _, d, ok := strings.Cut(line, "), "); ok {
			fmt.Sscanf(d, "%d dropped", &ts.Drops)
		}
		ts.Delivered = uint64(ts.Events)
		return ts, fired
	}
	last := lastLine(t, out)
	if err := json.Unmarshal(last, &ts); err != nil {
		t.Fatalf("summary %q: %v", last, err)
	}
	return ts, fired
}

// lastLine is the last line of the file f.
func lastLine(t *testing.T, f *os.File) []byte {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimRight(b, "\n")
	return b[bytes.LastIndexByte(b, '\n')+1:]
}

// eventLines counts the event lines of a --json trace file, checking that no event
// (worker, i) came twice.
func eventLines(t *testing.T, f *os.File) int {
	t.Helper()
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	seen := map[[2]int]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"event":`)) {
			continue
		}
		k := [2]int{argValue(t, line, "worker"), argValue(t, line, "i")}
		if seen[k] {
			t.Fatalf("event %v twice: %s", k, line)
		}
		seen[k] = true
		n++
	}
	return n
}

// argValue is the integer value of the argument named name in a --json event line.
func argValue(t *testing.T, line []byte, name string) int {
	_, rest, ok := bytes.Cut(line, []byte(`{"name":"`+name+`","type":"int","value":`))
	if !ok {
		t.Fatalf("no argument %s in %s", name, line)
	}
	v, err := strconv.Atoi(string(rest[:bytes.IndexAny(rest, ",}")]))
	if err != nil {
		t.Fatalf("argument %s in %s: %v", name, line, err)
	}
	return v
}

// TestTraceAccounting: every fire of a source that fires as fast as it goes, from 1,
// 2 and 8 goroutines, is either written to the trace's file or counted dropped, once:
// fired = delivered + dropped, exactly. The buffers are small, so that some are.
func TestTraceAccounting(t *testing.T) {
	n := 200000
	if testing.Short() || testutil.Emulated() {
		n = 20000
	}
	for _, g := range []int{1, 2, 8} {
		t.Run(fmt.Sprintf("goroutines=%d", g), func(t *testing.T) {
			s := startSource(t, "-g", strconv.Itoa(g), "-n", strconv.Itoa(n/g))
			out, err := os.CreateTemp(t.TempDir(), "trace")
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			sum, fired := traceSource(t, s, out, "--json", "--bufsize", "16k")
			lines := eventLines(t, out)
			t.Logf("fired %d: %d delivered, %d dropped (per buffer %v)", fired, sum.Delivered, sum.Drops, sum.BufferDrops)
			if fired != g*(n/g) || uint64(lines) != sum.Delivered || sum.Events != lines ||
				sum.Delivered+sum.Drops != uint64(fired) {
				t.Fatalf("fired %d, file has %d events, summary %+v", fired, lines, sum)
			}
			var per uint64
			for _, d := range sum.BufferDrops {
				per += d
			}
			if per != sum.Drops {
				t.Fatalf("drops per buffer %v do not add up to %d", sum.BufferDrops, sum.Drops)
			}
		})
	}
}

// TestTraceCount: -c N stops the stream at the Nth event: N events, N delivered,
// whatever the source goes on firing.
func TestTraceCount(t *testing.T) {
	s := startSource(t, "-g", "2", "-n", "100000000")
	out, err := os.CreateTemp(t.TempDir(), "trace")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	sum, _ := traceSource(t, s, out, "--json", "-c", "5000")
	if lines := eventLines(t, out); lines != 5000 || sum.Events != 5000 || sum.Delivered != 5000 {
		t.Fatalf("-c 5000: %d events in the file, summary %+v", lines, sum)
	}
	t.Logf("-c 5000: %+v", sum)
}

// TestTraceRate traces a steady source of a million fires a second to a file: what
// is not delivered is counted dropped, exactly, and at least 99% is delivered. A
// machine too busy to run the source at its rate (it fell behind its schedule by
// more than the trace's buffers hold, and caught up in a burst) cannot tell a slow
// tracer from its own bursts: then the test says so and judges only the
// accounting. The buffers (16 MiB a P: a quarter of a second of this source) ride
// out the tracer being held off the CPU by other work for as long.
func TestTraceRate(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("an emulated source does not fire a million times a second")
	}
	const rate = 1000000
	n := 2 * rate
	if testing.Short() {
		n = rate / 2
	}
	s := startSource(t, "-g", "1", "-n", strconv.Itoa(n), "-rate", strconv.Itoa(rate))
	out, err := os.CreateTemp(t.TempDir(), "trace")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	sum, fired := traceSource(t, s, out, "--bufsize", "16m")
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	lines := 0
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), " src:") {
			lines++
		}
	}
	share := float64(lines) / float64(fired)
	t.Logf("fired %d, %d events written (%.2f%%), %d dropped", fired, lines, 100*share, sum.Drops)
	if fired != n || lines != sum.Events || uint64(lines)+sum.Drops != uint64(fired) {
		t.Fatalf("fired %d, %d events in the file, summary %+v", fired, lines, sum)
	}
	if share >= 0.99 {
		return
	}
	var got, lag float64
	if f := strings.Fields(s.said); len(f) == 5 {
		got, _ = strconv.ParseFloat(f[3], 64)
		lag, _ = strconv.ParseFloat(f[4], 64)
	}
	// 16 MiB holds ~230,000 of the source's records (64 or 72 bytes): 230 ms.
	if got < 0.97*rate || lag > 200 {
		t.Skipf("%.2f%% delivered, but the machine did not run the source steadily "+
			"(%.0f fires/s of %d, %.0f ms behind its schedule at worst): delivery not judged", 100*share, got, rate, lag)
	}
	t.Fatalf("%.2f%% delivered from a steady source (%s), want at least 99%%", 100*share, s.said)
}
