package bench

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/seal"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/internal/usdt"
)

// BenchmarkBpftraceHit is what an external tracer pays per hit of a sealed probe:
// bpftrace counts bench:hit (usdt:BIN:bench:hit { @ = count(); }, the least a BPF
// program can do) while
// internal/usdtprog fires it b.N times in a loop on one thread, timed inside the
// program (bpftrace's start-up is not in the figure). ns/op is that thread's CPU time
// (user and system, the kernel's uprobe handling included) per fire, the enabled
// fire's own ~10 ns with it; wall-ns/op the elapsed time, which on a loaded machine
// also holds the time others had the CPU. Two seals of the same build:
//
//	notes=call  the note on the fire call (seal.Options.CallNotes, as sealing did
//	            before): the kernel can only put an INT3 there, a trap at every hit
//	notes=nop   the note on the sled's probe NOP, where the kernel (6.18+, x86-64)
//	            replaces the NOP by a CALL to its uprobe trampoline after the first hit
//
// fastpath reports whether the note's bytes in the traced process were the kernel's
// CALL after the loop (1) or still an INT3 (0). It needs root and bpftrace:
//
//	go test -run '^$' -bench BpftraceHit -benchtime 200000x ./bench/
func BenchmarkBpftraceHit(b *testing.B) {
	bins := usdtBinaries(b)
	for _, name := range []string{"call", "nop"} {
		b.Run("notes="+name, func(b *testing.B) {
			r := traceHits(b, bins[name], b.N, false)
			b.ReportMetric(r.nsPerFire, "ns/op")
			b.ReportMetric(r.wallPerFire, "wall-ns/op")
			b.ReportMetric(map[bool]float64{true: 1}[r.fastPath], "fastpath")
		})
	}
}

// TestBpftraceFastPath: a note on the probe NOP takes the kernel's fast uprobe path
// (its bytes become a CALL after the first hit), every hit is counted, and a note on
// the fire call stays an INT3.
func TestBpftraceFastPath(t *testing.T) {
	bins := usdtBinaries(t)
	for name, fast := range map[string]bool{"call": false, "nop": true} {
		r := traceHits(t, bins[name], 2000, true)
		t.Logf("notes=%s: %.0f ns per hit, note's text %x", name, r.nsPerFire, r.text)
		if r.fastPath != fast {
			t.Errorf("notes=%s: the note's text after the loop is %x, want the kernel's fast path %v", name, r.text, fast)
		}
	}
}

// usdtBinaries builds internal/usdtprog and seals it twice: notes on the fire calls
// ("call") and on the probe NOPs ("nop"). It skips without root, bpftrace or a kernel
// uprobes can trace (an emulator).
func usdtBinaries(tb testing.TB) map[string]string {
	tb.Helper()
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		tb.Skip("the kernel's fast uprobe path is x86-64's")
	}
	if testutil.Emulated() {
		tb.Skip("uprobes do not see code run by an emulator")
	}
	testutil.NeedCommand(tb, "bpftrace")
	testutil.NeedRoot(tb)
	plain := testbin.Build(tb, "", runtime.GOARCH, "./internal/usdtprog")
	bins := map[string]string{}
	for name, o := range map[string]seal.Options{"call": {CallNotes: true}, "nop": {}} {
		out := filepath.Join(tb.TempDir(), "usdtprog-"+name)
		var buf bytes.Buffer
		r, err := seal.WriteWith(plain, &buf, o)
		if err == nil {
			err = os.WriteFile(out, buf.Bytes(), 0o755)
		}
		if err != nil {
			tb.Fatal(err)
		}
		if want := map[string]int{"call": 0, "nop": 1}[name]; r.NOPNotes != want {
			tb.Fatalf("notes=%s: %d notes on a probe NOP, want %d: %+v", name, r.NOPNotes, want, r)
		}
		bins[name] = out
	}
	return bins
}

type hits struct {
	nsPerFire   float64 // CPU time of the firing thread (user and system) per fire
	wallPerFire float64
	text        []byte
	fastPath    bool
}

// traceHits runs bin n fires long under bpftrace counting bench:hit, and checks that
// bpftrace counted every fire and, with what, also counted them by the string argument.
func traceHits(tb testing.TB, bin string, n int, what bool) hits {
	tb.Helper()
	pc := notePC(tb, bin, "bench", "hit")
	prog := fmt.Sprintf(`usdt:%s:bench:hit { @ = count(); }`, bin)
	if what {
		prog = fmt.Sprintf(`usdt:%s:bench:hit { @ = count(); @what[str(arg1, arg2)] = count(); }`, bin)
	}
	figure := regexp.MustCompile(`cpu-ns/fire=([0-9.]+) ns/fire=([0-9.]+) text=([0-9a-f]{10})`)
	// The program prints its figure only once bpftrace has enabled the probe.
	out, err := testutil.Bpftrace(tb, 5*time.Minute, figure.Match, "-e", prog, "-c", fmt.Sprintf("%s %d %x", bin, n, pc))
	m := figure.FindSubmatch(out)
	if err != nil && m == nil || !bytes.Contains(out, []byte("Attaching 1 probe")) {
		testutil.Skip(tb, "bpftrace", fmt.Sprintf("bpftrace could not attach (%v): %s", err, out))
	}
	if m == nil {
		tb.Fatalf("bpftrace -e '%s' -c %s: no figure from the program:\n%s", prog, bin, out)
	}
	// n fires and the one before the loop.
	if want := fmt.Sprintf("@: %d\n", n+1); !bytes.Contains(out, []byte(want)) {
		tb.Errorf("bpftrace did not count %q:\n%s", want, out)
	}
	if want := fmt.Sprintf("@what[hit]: %d\n", n+1); what && !bytes.Contains(out, []byte(want)) {
		tb.Errorf("bpftrace did not read the string argument as %q:\n%s", want, out)
	}
	var h hits
	h.nsPerFire, _ = strconv.ParseFloat(string(m[1]), 64)
	h.wallPerFire, _ = strconv.ParseFloat(string(m[2]), 64)
	fmt.Sscanf(string(m[3]), "%x", &h.text)
	h.fastPath = len(h.text) == 5 && h.text[0] == 0xE8
	return h
}

// notePC is the address of the USDT note provider:name in bin (a non-PIE binary).
func notePC(tb testing.TB, bin, provider, name string) uint64 {
	tb.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	sec := f.Section(".note.stapsdt")
	if sec == nil {
		tb.Fatalf("%s has no USDT notes", bin)
	}
	data, err := sec.Data()
	if err != nil {
		tb.Fatal(err)
	}
	notes, err := usdt.DecodeNotes(data, binary.LittleEndian)
	if err != nil {
		tb.Fatal(err)
	}
	for _, n := range notes {
		if n.Provider == provider && n.Name == name {
			return n.PC
		}
	}
	tb.Fatalf("%s has no note %s:%s", bin, provider, name)
	return 0
}
