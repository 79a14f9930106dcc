package fbt_test

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/testutil"
)

// TestBpftraceHist runs the seed's example on a sealed instrumented binary:
// bpftrace -e 'usdt:BIN:*:* { @[probe] = hist(arg0); }' over cmd/nap, which calls
// nap.Sleep(2) (instrumented by nap.rules) for a while: the return probe's arg0 is the
// call's latency in nanoseconds (every call sleeps 2 ms: none below), the entry's is
// the integer parameter, 2.
func TestBpftraceHist(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("uprobes do not see code run by an emulator")
	}
	testutil.NeedCommand(t, "bpftrace")
	testutil.NeedRoot(t)
	bin, out, err := buildCmd(t, "./cmd/nap", filepath.Join(exampleDir(t), "nap.rules"))
	if err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	prog := fmt.Sprintf("usdt:%s:*:* { @[probe] = hist(arg0); }", bin)
	probe := "fbt:example_com_fbtex_nap__Sleep__"
	// bpftrace has been seen, once in six runs here, to print no map for one of the two
	// probes: another run tells that from a probe whose note is wrong (never printed).
	both := func(out []byte) bool {
		hists := parseHists(string(out))
		return len(hists[probe+"return"]) > 0 && len(hists[probe+"entry"]) > 0
	}
	got, err := testutil.Bpftrace(t, 2*time.Minute, both, "-e", prog, "-c", bin+" 2s")
	if err != nil || !strings.Contains(string(got), "Attaching 4 probes") {
		testutil.Skip(t, "bpftrace", fmt.Sprintf("bpftrace could not attach (%v); BPF may be unavailable here", err))
	}
	hists := parseHists(string(got))
	ret, entry := hists[probe+"return"], hists[probe+"entry"]
	if len(ret) == 0 || len(entry) == 0 {
		t.Fatalf("no histogram of the entry or the return probe in three runs: entry %v, return %v", entry, ret)
	}
	timed := 0
	for lo, n := range ret {
		switch {
		case lo == 0:
			// A call that began before the tracer's semaphore was seen is not timed.
		case lo < 1<<20:
			// [1M, 2M) holds 2,000,000 to 2,097,151 ns; a bucket below it only less.
			t.Errorf("%d returns with a latency in the bucket from %d ns: below the 2 ms the call sleeps", n, lo)
		default:
			timed += n
		}
	}
	if timed == 0 {
		t.Error("no return with a latency of 2 ms or more")
	}
	for lo, n := range entry {
		if lo != 2 {
			t.Errorf("%d entries with arg0 in the bucket from %d, want 2 (nap.Sleep(2))", n, lo)
		}
	}
}

// parseHists reads bpftrace's hist() maps: by probe (without "usdt:BIN:"), the count in
// each bucket by its lower bound.
func parseHists(out string) map[string]map[int64]int {
	hists := map[string]map[int64]int{}
	header := regexp.MustCompile(`^@\[usdt:[^:]*:(.*)\]:\s*$`)
	bucket := regexp.MustCompile(`^\[(-?[0-9]+)([KMG]?)(?:, [^)]*\)|\])\s+([0-9]+) \|`)
	var cur map[int64]int
	for _, line := range strings.Split(out, "\n") {
		if m := header.FindStringSubmatch(line); m != nil {
			cur = map[int64]int{}
			hists[m[1]] = cur
			continue
		}
		m := bucket.FindStringSubmatch(line)
		if m == nil || cur == nil {
			continue
		}
		lo, _ := strconv.ParseInt(m[1], 10, 64)
		lo <<= map[string]int{"K": 10, "M": 20, "G": 30}[m[2]]
		n, _ := strconv.Atoi(m[3])
		cur[lo] += n
	}
	return hists
}
