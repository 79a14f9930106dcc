//go:build linux

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/ctlproto"
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
	is = wordIs(t, out.String())
	m := lastSummary.FindStringSubmatch(errb.String())
	if m == nil {
		t.Fatalf("no summary:\n%s", errb.String())
	}
	events, _ = strconv.Atoi(m[1])
	dropped, _ = strconv.Atoi(m[2])
	return is, events, dropped
}

// wordIs is the i of each last:::word event in a trace's or decode's text, in order;
// an i that is not a number, or one seen twice, fails the test.
func wordIs(t *testing.T, text string) []int {
	t.Helper()
	var is []int
	seen := map[int]bool{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		_, after, ok := strings.Cut(line, " i=")
		if !ok {
			continue
		}
		v, _, _ := strings.Cut(after, " ")
		i, err := strconv.Atoi(v)
		if err != nil || seen[i] {
			t.Fatalf("%q: %v (or twice)", line, err)
		}
		seen[i] = true
		is = append(is, i)
	}
	return is
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

// TestTraceRaw: trace --raw writes what the buffers held, unformatted, and decode
// prints from it what trace prints: every event of a command that ends, in order,
// the summary's counts; a million fires that overflow the buffers: printed +
// dropped = fired, none twice.
func TestTraceRaw(t *testing.T) {
	testTraceRaw(t, false)
}

// TestTraceRawToFile: the same with the output a file, which the ring bytes are
// written to straight from their mapping; and -c N takes exactly N.
func TestTraceRawToFile(t *testing.T) {
	testTraceRaw(t, true)
	bin := buildLast(t)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	file := filepath.Join(t.TempDir(), "raw")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	run([]string{"trace", "last:::word", "--raw", "-c", "300", "--", bin, "1000", "exit"}, f, &errb)
	f.Close()
	var out, derr bytes.Buffer
	if err := run([]string{"decode", file}, &out, &derr); err != nil {
		t.Fatalf("decode: %v\n%s", err, derr.String())
	}
	if n := strings.Count(out.String(), " i="); n != 300 || !strings.Contains(errb.String(), "300 events") {
		t.Fatalf("-c 300: %d decoded; trace said %q", n, errb.String())
	}
	for k := range 300 {
		if !strings.Contains(out.String(), " i="+strconv.Itoa(k)+" ") {
			t.Fatalf("-c 300: i=%d missing", k)
		}
	}
	// without --bufsize, a raw trace to a file asks for 32 MiB buffers (the process
	// halves them to fit its budget: 8 Ps of them fit its default); to a pipe or
	// with --bufsize, what the user would get
	if got := rawBufSizeOf(t, file); got != rawBufSize {
		t.Errorf("to a file: buffers of %d bytes, want %d", got, rawBufSize)
	}
	var raw bytes.Buffer
	run([]string{"trace", "last:::word", "--raw", "--", bin, "10", "exit"}, &raw, &errb)
	os.WriteFile(file, raw.Bytes(), 0o644)
	if got := rawBufSizeOf(t, file); got != 4<<20 {
		t.Errorf("not to a file: buffers of %d bytes, want 4 MiB", got)
	}
	f, _ = os.Create(file)
	run([]string{"trace", "last:::word", "--raw", "--bufsize", "1m", "--", bin, "10", "exit"}, f, &errb)
	f.Close()
	if got := rawBufSizeOf(t, file); got != 1<<20 {
		t.Errorf("--bufsize 1m: buffers of %d bytes", got)
	}
}

// rawBufSizeOf is the per-P buffer size a raw trace's started frame says.
func rawBufSizeOf(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil || !bytes.HasPrefix(b, []byte(ctlproto.RawMagic)) {
		t.Fatalf("%s: not a raw trace (%v)", file, err)
	}
	kind, _, p, err := ctlproto.ReadRawChunk(bytes.NewReader(b[len(ctlproto.RawMagic):]), nil)
	if err != nil || kind != ctlproto.RawFrame {
		t.Fatalf("first chunk: kind %d, %v", kind, err)
	}
	f, err := ctlproto.ReadFrame(bytes.NewReader(p))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ctlproto.DecodeResponse(f)
	if err != nil || r.Kind != ctlproto.KindStarted {
		t.Fatalf("first frame: %+v, %v", r, err)
	}
	return r.BufSize
}

func testTraceRaw(t *testing.T, toFile bool) {
	bin := buildLast(t)
	cases := []struct {
		n   int
		end string
	}{{1000, "exit"}, {1000, "kill"}, {1000000, "exit"}}
	if testing.Short() {
		cases = cases[:2]
	}
	for _, c := range cases {
		t.Run(strconv.Itoa(c.n)+"-"+c.end, func(t *testing.T) {
			t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
			var raw, errb bytes.Buffer
			file := filepath.Join(t.TempDir(), "raw")
			args := []string{"trace", "last:::word", "--raw", "--", bin, strconv.Itoa(c.n), c.end}
			if toFile {
				f, err := os.Create(file)
				if err != nil {
					t.Fatal(err)
				}
				run(args, f, &errb)
				f.Close()
				b, _ := os.ReadFile(file)
				raw.Write(b)
			} else {
				run(args, &raw, &errb)
			}
			if !bytes.HasPrefix(raw.Bytes(), []byte("gosdtrw1")) {
				t.Fatalf("not a raw trace: %.40q\n%s", raw.String(), errb.String())
			}
			m := lastSummary.FindStringSubmatch(errb.String())
			if m == nil {
				t.Fatalf("no summary:\n%s", errb.String())
			}
			if err := os.WriteFile(file, raw.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			var out, derr bytes.Buffer
			if err := run([]string{"decode", file}, &out, &derr); err != nil {
				t.Fatalf("decode: %v\n%s", err, derr.String())
			}
			is := wordIs(t, out.String())
			events, _ := strconv.Atoi(m[1])
			dropped, _ := strconv.Atoi(m[2])
			if len(is) != events || events+dropped != c.n {
				t.Fatalf("decoded %d, trace said %d events + %d dropped: want %d in all", len(is), events, dropped, c.n)
			}
			if c.n == 1000 && (dropped != 0 || is[0] != 0 || is[999] != 999) {
				t.Fatalf("%d dropped, first %d, last %d", dropped, is[0], is[len(is)-1])
			}
			want := regexp.MustCompile(`pid \d+: ` + m[1] + ` events, ` + m[2] + ` dropped`)
			if !want.MatchString(derr.String()) {
				t.Fatalf("decode's summary %q, trace's %q", derr.String(), m[0])
			}
		})
	}
	if toFile {
		return
	}
	// a file that is not one: a clear error
	file := filepath.Join(t.TempDir(), "text")
	os.WriteFile(file, []byte("12:00:00.000000 1/1 last:::word i=1\n"), 0o644)
	var out, derr bytes.Buffer
	if err := run([]string{"decode", file}, &out, &derr); err == nil || !strings.Contains(err.Error(), "not a raw trace") {
		t.Fatalf("decode of text: %v", err)
	}
}
