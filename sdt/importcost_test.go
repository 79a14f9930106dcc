package sdt_test

import (
	"debug/elf"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// importBudget is what importing sdt may add to hello world on linux/amd64, in bytes
// of the binary as go build writes it (symbols and DWARF included).
//
// Raised eight times, each time for what every traced program must carry to be traced
// without a rebuild: 1.5 MB until sdtctl trace|stat -- CMD (SDT_FOLLOW) and stat
// --by stack; 1.56 MB until run-time function probes (package fprobe, the registry's
// side, the prologue and epilogue readers: about 160 KB of file, 57 KB of it code);
// 1.72 MB until their arguments were typed from sdtctl's signatures and lists of every
// function were sent a chunk at a time (about 50 KB); 1.815 MB when their hot path
// went per P (counts, return rings and entry times per P, the entry's nosplit fast
// path, return events on the trace's clock: about 27 KB, 7 KB of it code); 1.83 MB with
// the flush that lets a reader count every return made before it, stacks that skip
// the probe's own frames, and aggregations folded from per-site counters (what those
// added beyond the 32 KB that issue 33's removals saved); 1.845 MB with the Go
// versions whose layouts were read, and the refusal of every layout reader on any
// other (internal/goversion, about 19 KB of file); 1.885 MB with trace buffers shared
// with sdtctl so that events outlive the process (memfds, their header and log, the
// descriptors passed over the socket: about 42 KB); 1.945 MB with entry probes of
// leaves (their 128 slots of text, the stubs, the handler, the readers of a leaf's
// first instruction: about 56 KB, 23 KB of it code); 1.952 MB when the registry became
// a package of its own (sdt/internal/registry), whose ~170 functions and types carry
// a name 18 bytes longer in the function table, the symbol table and DWARF (about
// 5.5 KB of the 7 KB measured), the rest the checker of run-time probes' state and
// text (fprobe's Func.State) and the signatures' conversion at the server's edge;
// 1.975 MB with returns folded on their P for counting subscriptions and traces read
// live by sdtctl (the heads' memory, descriptions logged again once their kinds are
// known): about 31 KB together, measured 1,974,032 bytes; 1.988 MB when the control
// plane became three packages (sdt/control the API over sdt/internal/consume and
// sdt/internal/ctlserver), whose ~260 functions and types carry a path 9 to 11 bytes
// longer in the function table, the symbol table and DWARF (about 10 KB of the 13.5 KB
// measured), the rest the API's wrappers and copies of its errors and the interface a
// stream is sent through: measured 1,987,573 bytes (1,974,120 before); 1.992 MB with
// one owner of run-time probes' state (fprobe's record read back by the registry's
// checker: State, Quiet) and a command sdtctl starts held for its run-time probes,
// measured 1,988,018 bytes in a clean clone. Then, in one stop (issue 33): lowered by
// about 197 KB by cutting what every traced program carried needlessly (1,790,732
// bytes measured against 1,988,082 in the same checkout): the invariant checker that
// only tests turn on, the reflection of errors.As (errors.AsType), debug.ReadBuildInfo's
// parser (the build info's text read for the module paths alone), a pdqsort
// instantiated for uint64, the opcode maps built at init (generated), unix.Accept4's
// decoding of every address family (about 40 KB with their types and methods),
// time.ParseDuration (its syntax kept, without its error and table), filepath.Join's
// cleaning, the general string searches and trims (bytes.Index and IndexAny,
// strings.IndexAny, Split, Fields, Trim, Replace, Repeat) where the text is ASCII or
// the separator one byte, and cold helpers the compiler copied into each caller; and
// raised by what three capabilities added, measured before the cuts: leaves' return
// probes by a jump over their RET (fprobe's jret.go: 128 return slots of text, their
// stub, the writes that place and take them, the reader of a function's only RET and
// of its pc tables' end: about 34 KB, 14 KB of it code), a folding aggregation's
// common fire folded in the registry and, for a one-argument probe, inline in the fire
// (its cells' layout and fold, FoldTable: about 12.6 KB, 2 KB of it code), and
// run-time returns written by the return path into a trace's shared buffers so that
// they outlive the process (fprobe's direct writer, the registry's choice of the sinks
// it writes, consume's buffers published to it: about 25 KB, 7 KB of it code), and a
// trace's request naming where the default buffer size starts (Request.BufSizeUpTo,
// for sdtctl trace --raw to a file: 357 bytes), and a trace's --where run by the
// return path so that its returns outlive the process too (fprobe's where.go: the
// program, its exact comparisons and the third step of the return path; pred's
// Direct; consume's predicates published to it: 19.1 KB, 5 KB of it code, the rest
// pc tables, DWARF and a page), and a predicate's syntax checked before any probe is
// known, so that a command traced from its start is told of a bad --where (pred's
// Check, consume's refusal held for sdtctl: 4.2 KB of sections, 1.4 KB of it code, and
// a page). Measured together 1,880,611 bytes of file.
//
// Since then the figure is the growth of the sections' bytes in a -trimpath build, not
// of the file: a file's segments start on page boundaries, so the file moved by up to a
// page with a few bytes' change anywhere (CI's checkout, whose path is longer than this
// one's, measured 1,886,597 bytes of file for 1,882,405 here), and without -trimpath
// the checkout's and the module cache's paths are in the function table and DWARF.
// Measured 1,885,777 bytes of sections with go1.26.8 (1,860,764 with go1.27.3), the
// file 1,881,813. Raised to 1.8925 MB with the folding fire's cells at hand beside the
// hit counters (registry's atHand: its table, the keeping and renewing of its
// cells, the fire's check; 2,449 bytes of sections measured, 544 of them code); to
// 1.9135 MB with amd64 leaves' punned jumps and loads in place (their trampolines'
// pages, the reading of where a punned jump goes, of the loads and of a framed leaf's
// argument reads: 20,987 bytes of sections, 9,312 of them code); to 1.921 MB with
// their returns by punned jumps (where a RET is followed by code) and every RET of a
// leaf taking a jump: 7,662 bytes of sections. The budget keeps about 4 KB of room
// for the toolchain's patch releases.
const importBudget = 1_921_000

// TestImportCost builds hello world with and without one probe and checks what the
// probe's import costs: at most importBudget on linux/amd64, and no disassembler
// (golang.org/x/arch) on either architecture: discovery decodes with its own tables.
func TestImportCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four programs")
	}
	if testutil.Emulated() {
		t.Skip("under an emulator: the native run builds both architectures")
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			plain := testbin.Build(t, "", goarch, "./testdata/hello/plain", "-trimpath")
			probe := testbin.Build(t, "", goarch, "./testdata/hello/probe", "-trimpath")
			t.Logf("hello world %d bytes of file, with a probe %d (+%d)", fileSize(t, plain), fileSize(t, probe), fileSize(t, probe)-fileSize(t, plain))
			added := sectionBytes(t, probe) - sectionBytes(t, plain)
			t.Logf("hello world %d bytes of sections, with a probe %d (+%d)", sectionBytes(t, plain), sectionBytes(t, probe), added)
			if goarch == "amd64" && added > importBudget {
				t.Errorf("importing sdt adds %d bytes of sections to hello world, more than %d", added, importBudget)
			}
			if sym := symbolWithPrefix(t, probe, "golang.org/x/arch/"); sym != "" {
				t.Errorf("linux/%s hello world links %s", goarch, sym)
			}
		})
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// sectionBytes is what the binary's sections hold in its file (compressed DWARF as
// written), without the padding that puts its segments on page boundaries.
func sectionBytes(t *testing.T, path string) int64 {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var n int64
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS {
			n += int64(s.FileSize)
		}
	}
	return n
}

// symbolWithPrefix returns a symbol of the binary whose name starts with prefix, or "".
func symbolWithPrefix(t *testing.T, path, prefix string) string {
	t.Helper()
	for _, s := range testbin.Symbols(t, path) {
		if strings.HasPrefix(s.Name, prefix) {
			return s.Name
		}
	}
	return ""
}

// startBudget is how many instructions, from exec to exit, importing sdt and running
// one probe may add to hello world on linux/amd64 (bench/README.md, "Start-up": about
// 2.3 million before the search for the functions that inlined sdt's was made cheap,
// about 1.2 million after, 0.85 million once the flag table was generated and the
// funcdata searched four words at once: issue 33).
const startBudget = 1_000_000

// TestStartCost runs hello world with and without one probe under callgrind and checks
// what the probe's import adds to the instructions the whole process retires, from
// exec to exit: a count that does not depend on how busy the machine is, unlike the
// time (BenchmarkHelloStart measures that).
func TestStartCost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two programs under valgrind")
	}
	if testutil.Emulated() || runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the budget is linux/amd64's")
	}
	valgrind := testutil.NeedCommand(t, "valgrind")
	plain := testbin.Build(t, "", "amd64", "./testdata/hello/plain")
	probe := testbin.Build(t, "", "amd64", "./testdata/hello/probe")
	// The least of three runs each: the runtime's background work varies a little.
	best := func(bin string) int64 {
		least := int64(-1)
		for range 3 {
			n := startInstructions(t, valgrind, bin)
			if least < 0 || n < least {
				least = n
			}
		}
		return least
	}
	p, q := best(plain), best(probe)
	t.Logf("instructions from exec to exit: hello world %d, with a probe %d (+%d)", p, q, q-p)
	if q-p > startBudget {
		t.Errorf("importing sdt adds %d instructions to hello world's start, more than %d", q-p, startBudget)
	}
}

// startInstructions runs bin under callgrind and returns the instructions it retired.
// One P and no asynchronous preemption keep the count steady (bench/callgrind.sh says
// why, and why RDTSCP is off).
func startInstructions(t *testing.T, valgrind, bin string) int64 {
	t.Helper()
	cmd := exec.Command(valgrind, "--tool=callgrind", "--smc-check=all", "--callgrind-out-file=/dev/null", bin)
	cmd.Env = append(os.Environ(), "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1,cpu.rdtscp=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("valgrind %s: %v\n%s", bin, err, out)
	}
	m := regexp.MustCompile(`Collected : (\d+)`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("valgrind %s: no instruction count in\n%s", bin, out)
	}
	n, err := strconv.ParseInt(string(m[1]), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
