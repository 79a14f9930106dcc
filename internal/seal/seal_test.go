package seal

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/sealfmt"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/internal/usdt"
)

// needSealable skips a test whose programs are built for the test's own GOARCH when
// that is not one sdtctl seals.
func needSealable(t *testing.T) {
	t.Helper()
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("sdtctl seal seals amd64 and arm64 binaries; this test builds for %s", runtime.GOARCH)
	}
}

// goBuild builds pkg (relative to this package) into dir/name with flags, for the
// GOARCH the tests run as unless env overrides it.
func goBuild(t *testing.T, dir, name, pkg string, env []string, flags ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build test programs with:", err)
	}
	bin := filepath.Join(dir, name)
	args := append(append([]string{"build", "-o", bin}, flags...), pkg)
	cmd := exec.Command(gobin, args...)
	cmd.Env = append(append(os.Environ(), "CGO_ENABLED=0"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}

func digest(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// sealed builds pkg and seals a copy; it returns both paths.
func sealed(t *testing.T, pkg string, flags ...string) (plain, sealedBin string, r *Report) {
	t.Helper()
	return sealedEnv(t, pkg, nil, flags...)
}

func sealedEnv(t *testing.T, pkg string, env []string, flags ...string) (plain, sealedBin string, r *Report) {
	t.Helper()
	needSealable(t)
	dir := t.TempDir()
	plain = goBuild(t, dir, "plain", pkg, env, flags...)
	sealedBin = filepath.Join(dir, "sealed")
	r, err := File(plain, sealedBin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *r)
	return plain, sealedBin, r
}

func report(t *testing.T, bin string, env ...string) (d struct {
	Sites, Sealed, Presealed int
	Table                    bool
	Reason                   string
	Elapsed                  time.Duration
}) {
	t.Helper()
	out, err := testutil.Output(bin, append(os.Environ(), env...), "report")
	if err != nil {
		t.Fatalf("%s report: %v\n%s", bin, err, out)
	}
	if err := json.Unmarshal(out, &d); err != nil {
		t.Fatalf("%s report: %v: %s", bin, err, out)
	}
	return d
}

// TestSealedStartsFromTable: a sealed program finds the same sites as the scan of the
// plain one, from its table, with every sealable site sealed in the file.
func TestSealedStartsFromTable(t *testing.T) {
	plain, bin, r := sealed(t, "./testdata/exits")
	if r.Sites == 0 || r.Sealed != r.Sites {
		t.Fatalf("sealed %d of %d sites", r.Sealed, r.Sites)
	}
	scan, table := report(t, plain), report(t, bin)
	t.Logf("scan: %+v\ntable: %+v", scan, table)
	switch {
	case scan.Table || !table.Table:
		t.Errorf("site table used: plain %v, sealed %v", scan.Table, table.Table)
	case table.Reason != "":
		t.Errorf("sealed: %s", table.Reason)
	case table.Sites != scan.Sites || table.Sealed != scan.Sealed:
		t.Errorf("sealed program: %d sites, %d sealed; scan of the plain one: %d, %d", table.Sites, table.Sealed, scan.Sites, scan.Sealed)
	case table.Presealed != r.Sealed:
		t.Errorf("%d sites came sealed in the file, want %d", table.Presealed, r.Sealed)
	}
}

// TestSealedModes runs sdt's self-checking program, sealed, in every mode: its probes
// must fire exactly when enabled, whatever the sites held in the file.
func TestSealedModes(t *testing.T) {
	builds := [][]string{nil, {"-buildmode=pie"}, {"-race"}, {"-ldflags=-linkmode=external"}}
	for _, flags := range builds {
		t.Run(strings.Join(append([]string{"build"}, flags...), " "), func(t *testing.T) {
			if len(flags) > 0 && testutil.Emulated() {
				t.Skip("a PIE or a cgo build needs the target's dynamic loader, which the emulator lacks here")
			}
			var env []string
			if len(flags) > 0 && flags[0] != "-buildmode=pie" {
				if _, err := exec.LookPath("gcc"); err != nil {
					t.Skip("-race and external linking need a C toolchain:", err)
				}
				env = []string{"CGO_ENABLED=1"}
			}
			_, bin, r := sealedEnv(t, "../../sdt/testdata/selfcheck", env, flags...)
			if r.Sealed == 0 || r.Sealed != r.Sites || r.Notes != r.Sites {
				t.Fatalf("sealed %d of %d sites, %d notes: %+v", r.Sealed, r.Sites, r.Notes, r)
			}
			for _, env := range [][]string{nil, {"SDT_MODE=on"}, {"SDT_MODE=signal"}, {"SDT_PATCH=off"}} {
				out, err := testutil.Output(bin, append(os.Environ(), env...))
				// branch=0: every site came sealed from the table, none fell back.
				if err != nil || !strings.Contains(string(out), " branch=0\nok\n") {
					t.Errorf("%v: %v\n%s", env, err, out)
					continue
				}
				t.Logf("%v: %s", env, strings.ReplaceAll(strings.TrimSpace(string(out)), "\n", "; "))
			}
		})
	}
}

func TestSealTwiceIsNoOp(t *testing.T) {
	_, bin, _ := sealed(t, "./testdata/exits")
	before := digest(t, bin)
	r, err := File(bin, bin)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Already || digest(t, bin) != before {
		t.Errorf("second seal: already=%v, file changed=%v", r.Already, digest(t, bin) != before)
	}
}

// TestSealRefuses: what cannot be sealed gets a clear error and is not touched.
func TestSealRefuses(t *testing.T) {
	needSealable(t)
	dir := t.TempDir()
	text := filepath.Join(dir, "text")
	if err := os.WriteFile(text, []byte("#!/bin/sh\necho hi\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, bin, want string
	}{
		{"not ELF", text, "not an ELF file"},
		{"no section headers", noSections(t, goBuild(t, dir, "sstripped", "./testdata/exits", nil)), "stripped of its section headers"},
		{"no gosdt", goBuild(t, dir, "nogosdt", "../../internal/usdt/testdata/hello", nil), "not a gosdt program"},
		{"no sites", goBuild(t, dir, "noinline", "./testdata/exits", nil, "-gcflags=all=-N -l"), "no probe sites to seal"},
		{"386", goBuild(t, dir, "i386", "./testdata/exits", []string{"GOARCH=386"}), "gosdt seals x86-64 and AArch64"},
		{"freebsd", goBuild(t, dir, "freebsd", "./testdata/exits", []string{"GOOS=freebsd", "GOARCH=amd64"}), "gosdt seals linux binaries"},
	}
	if sh, err := exec.LookPath("sh"); err == nil {
		if f, err := elf.Open(sh); err == nil {
			f.Close()
			cases = append(cases, struct{ name, bin, want string }{"C program", sh, "not a Go binary"})
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := digest(t, c.bin)
			out := filepath.Join(t.TempDir(), "out")
			_, err := File(c.bin, out)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
			if c.name == "no gosdt" && !errors.Is(err, ErrNoGosdt) {
				t.Errorf("%v is not ErrNoGosdt", err)
			}
			if digest(t, c.bin) != before {
				t.Error("the input changed")
			}
			if _, err := os.Stat(out); !os.IsNotExist(err) {
				t.Errorf("an output was written: %v", err)
			}
			if m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), ".*.tmp-*")); len(m) > 0 {
				t.Errorf("temporary files left: %v", m)
			}
		})
	}
}

// noSections clears a copy of bin's section header table, as sstrip does: the
// program still runs, but nothing names its parts any more.
func noSections(t *testing.T, bin string) string {
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	clear(b[0x28:0x30]) // e_shoff
	clear(b[0x3c:0x40]) // e_shnum, e_shstrndx
	out := bin + ".noshdr"
	if err := os.WriteFile(out, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSealStripped: go test links with -s -w, and so do many production builds; the
// seal mark is then found by its value.
func TestSealStripped(t *testing.T) {
	plain, bin, r := sealed(t, "./testdata/exits", "-ldflags=-s -w")
	if f, err := elf.Open(plain); err == nil {
		if _, err := f.Symbols(); err == nil {
			t.Fatal("-ldflags=-s left a symbol table")
		}
		f.Close()
	}
	if r.Sealed == 0 || r.Notes == 0 {
		t.Fatalf("stripped binary: %+v", r)
	}
	if d := report(t, bin); !d.Table || d.Presealed != r.Sealed {
		t.Errorf("stripped sealed binary at start: %+v", d)
	}
}

// TestNotes reads the notes back and checks them against the sites: one per fire
// site whose probe is named, its pc on the fire call, the argument registers of Go's
// ABI, a semaphore per probe name inside .probes.
func TestNotes(t *testing.T) {
	_, bin, r := sealed(t, "./testdata/exits")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data, err := f.Section(".note.stapsdt").Data()
	if err != nil {
		t.Fatal(err)
	}
	notes, err := usdt.DecodeNotes(data, binary.LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	if len(notes) != r.Notes {
		t.Errorf("%d notes, report says %d", len(notes), r.Notes)
	}
	probes := f.Section(".probes")
	byName := map[string]usdt.Note{}
	for _, n := range notes {
		byName[n.Provider+":"+n.Name] = n
		if n.Semaphore < probes.Addr+4 || n.Semaphore+2 > probes.Addr+probes.Size {
			t.Errorf("%s:%s: semaphore %#x outside .probes [%#x, %#x)", n.Provider, n.Name, n.Semaphore, probes.Addr, probes.Addr+probes.Size)
		}
	}
	exit, ok := byName["proc:exit"]
	if !ok {
		t.Fatalf("no proc:exit note in %+v", notes)
	}
	switch r.Arch {
	case "arm64":
		// No fast uprobe path on arm64: the notes stay on the fire calls, where the
		// arguments are in Go's argument registers.
		if got, regs := fmt.Sprint(exit.Args), "-8@x2 8@x3 -8@x4"; got != "["+regs+"]" || r.NOPNotes != 0 {
			t.Errorf("proc:exit arguments %s, want %s; %d notes on NOPs", got, regs, r.NOPNotes)
		}
	case "amd64":
		// Every note on its sled's probe NOP, the arguments where they are there:
		// exit(i%3, "done") has i%3 in a register or the frame, and the string's
		// address and length as constants.
		if r.NOPNotes != r.Notes {
			t.Errorf("%d of %d notes on a probe NOP: %q", r.NOPNotes, r.Notes, r.CallNotes)
		}
		image, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		at := func(addr uint64, n int) []byte {
			off, err := usdt.FileOffset(f, addr, uint64(n))
			if err != nil {
				t.Fatal(err)
			}
			return image[off : off+uint64(n)]
		}
		for _, n := range notes {
			if b := at(n.PC, 5); !bytes.Equal(b, []byte{0x0f, 0x1f, 0x44, 0x00, 0x00}) {
				t.Errorf("%s:%s: the note's pc %#x holds % x, not a 5-byte NOP", n.Provider, n.Name, n.PC, b)
			}
		}
		a := exit.Args
		if len(a) != 3 || a[0].Size != -8 || a[1].Size != 8 || a[2].Size != -8 || a[2].Operand != "$4" || !strings.HasPrefix(a[1].Operand, "$") {
			t.Fatalf("proc:exit arguments %v, want -8@LOC 8@$ADDR -8@$4", a)
		}
		var addr uint64
		fmt.Sscan(a[1].Operand[1:], &addr)
		if s := at(addr, 4); string(s) != "done" {
			t.Errorf("proc:exit's string argument %s points at %q, not \"done\"", a[1], s)
		}
	}
	if ratio, ok := byName["proc:ratio"]; !ok || len(ratio.Args) != 0 {
		t.Errorf("proc:ratio (a float first) should have a note without arguments: %+v", ratio)
	}
	if n := byName["proc:exit"]; n.Semaphore == byName["proc:ratio"].Semaphore {
		t.Error("two probe names share a semaphore")
	}
}

func TestTools(t *testing.T) {
	_, bin, _ := sealed(t, "./testdata/exits")
	t.Run("readelf", func(t *testing.T) {
		out, err := exec.Command(testutil.NeedCommand(t, "readelf"), "-n", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, name := range []string{"exit", "ratio"} {
			if !strings.Contains(string(out), "Provider: proc\n    Name: "+name) {
				t.Errorf("readelf -n does not list proc:%s:\n%s", name, out)
			}
		}
		t.Logf("readelf -n:\n%s", out)
	})
	t.Run("gdb", func(t *testing.T) {
		out, err := exec.Command(testutil.NeedCommand(t, "gdb"), "-batch", "-ex", "info probes", bin).CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		for _, name := range []string{"exit", "ratio"} {
			if !regexp.MustCompile(`stap\s+proc\s+` + name + `\s`).Match(out) {
				t.Errorf("gdb info probes does not list proc:%s:\n%s", name, out)
			}
		}
		t.Logf("gdb info probes:\n%s", out)
	})
}

// TestBpftrace counts a sealed program's fires with bpftrace's usdt probe: attaching
// raises the semaphore, the program's watcher enables the sites, the program fires a
// known number of times with known arguments, and bpftrace must have seen each.
func TestBpftrace(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("uprobes do not see code run by an emulator")
	}
	testutil.NeedCommand(t, "bpftrace")
	testutil.NeedRoot(t)
	_, bin, _ := sealed(t, "./testdata/exits")
	prog := fmt.Sprintf("usdt:%s:proc:exit { @[arg0] = count(); @reason[str(arg1, arg2)] = count(); }", bin)
	// The program reports its fires only once bpftrace has enabled the probe.
	reported := regexp.MustCompile(`0=(\d+) 1=(\d+) 2=(\d+)`)
	out, err := testutil.Bpftrace(t, 90*time.Second, reported.Match, "-e", prog, "-c", bin+" fire 3000")
	if err != nil || !strings.Contains(string(out), "Attaching 1 probe") {
		testutil.Skip(t, "bpftrace", fmt.Sprintf("bpftrace could not attach (%v); BPF may be unavailable here", err))
	}
	var fired [3]int
	m := reported.FindSubmatch(out)
	if m == nil {
		t.Fatal("the program did not report its fires")
	}
	for i := range fired {
		fmt.Sscan(string(m[i+1]), &fired[i])
		want := fmt.Sprintf("@[%d]: %d\n", i, fired[i])
		if !strings.Contains(string(out), want) {
			t.Errorf("bpftrace did not count %q", strings.TrimSpace(want))
		}
	}
	if want := fmt.Sprintf("@reason[done]: %d", fired[0]+fired[1]+fired[2]); !strings.Contains(string(out), want) {
		t.Errorf("bpftrace did not read the string argument: want %q", want)
	}
}

// TestToolexec seals at link time, for go build and for go test.
func TestToolexec(t *testing.T) {
	needSealable(t)
	if testing.Short() {
		t.Skip("builds sdtctl and programs")
	}
	dir := t.TempDir()
	toolexec := "-toolexec=" + testbin.Sdtctl(t) + " toolexec"
	isSealed := func(bin string) bool {
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		return f.Section(sealfmt.SectionName) != nil
	}
	bin := goBuild(t, dir, "exits", "./testdata/exits", nil, toolexec)
	if !isSealed(bin) {
		t.Fatal("go build -toolexec did not seal the program")
	}
	if d := report(t, bin); !d.Table || d.Presealed == 0 {
		t.Errorf("the program built with -toolexec: %+v", d)
	}
	if other := goBuild(t, dir, "hello", "../../internal/usdt/testdata/hello", nil, toolexec); isSealed(other) {
		t.Error("a program without gosdt was sealed")
	}

	// go test: the package's own test asserts that it runs from a sealed binary.
	gobin, _ := exec.LookPath("go")
	args := []string{"test", "-count=1", toolexec}
	if emu := testutil.Emulator(); emu != "" {
		args = append(args, "-exec", emu)
	}
	cmd := exec.Command(gobin, append(args, "./testdata/sealedtest")...)
	cmd.Env = append(os.Environ(), "SEALED_TEST=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("go test -toolexec: %v\n%s", err, out)
	}
}

// TestSealARM64 seals an arm64 binary on whatever host, and runs it where qemu can.
func TestSealARM64(t *testing.T) {
	if runtime.GOARCH == "arm64" {
		t.Skip("the other tests seal arm64 binaries here")
	}
	dir := t.TempDir()
	plain := goBuild(t, dir, "plain", "../../sdt/testdata/selfcheck", []string{"GOARCH=arm64"})
	bin := filepath.Join(dir, "sealed")
	r, err := File(plain, bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", *r)
	if r.Arch != "arm64" || r.Sealed == 0 || r.Sealed != r.Sites {
		t.Fatalf("sealed %d of %d arm64 sites", r.Sealed, r.Sites)
	}
	qemu := testutil.NeedCommand(t, "qemu-aarch64-static")
	for _, env := range [][]string{nil, {"SDT_MODE=on"}} {
		cmd := exec.Command(qemu, bin)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		if err != nil || !bytes.Contains(out, []byte("\nok\n")) {
			t.Errorf("%v: %v\n%s", env, err, out)
		}
	}
}

// TestSemaphoreWatch plays the kernel's part without BPF: it raises proc:exit's
// semaphore through /proc/PID/mem, as bcc does on kernels without uprobe reference
// counters, and drops it again. The program's watcher must enable the probe's sites
// for the first and disable them for the second.
func TestSemaphoreWatch(t *testing.T) {
	if testutil.Emulated() {
		t.Skip("the emulator's address space is not the program's")
	}
	_, bin, _ := sealed(t, "./testdata/exits")
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := f.Section(".note.stapsdt").Data()
	f.Close()
	notes, err := usdt.DecodeNotes(data, binary.LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	var sem uint64
	for _, n := range notes {
		if n.Provider == "proc" && n.Name == "exit" {
			sem = n.Semaphore
		}
	}
	cmd := exec.Command(bin, "fire", "300", "-until-released")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// Not before the child has become bin: a /proc/PID/mem opened before its exec is
	// the forked copy's memory, which the exec drops (writes then fail with EIO).
	binInfo, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if exe, err := os.Stat(fmt.Sprintf("/proc/%d/exe", cmd.Process.Pid)); err == nil && os.SameFile(exe, binInfo) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not exec %s in 10s", cmd.Process.Pid, bin)
		}
		time.Sleep(time.Millisecond)
	}
	// Nor before the semaphore's page is mapped: the exe link names bin as soon as the
	// new memory replaces the old, before the loader maps the binary's segments into it
	// (a write there fails with EIO, seen once under load).
	for deadline := time.Now().Add(10 * time.Second); !mapped(t, cmd.Process.Pid, sem); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pid %d did not map the semaphore at %#x in 10s", cmd.Process.Pid, sem)
		}
	}
	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", cmd.Process.Pid), os.O_RDWR, 0)
	if err != nil {
		testutil.Skip(t, "root", fmt.Sprintf("cannot write the program's memory: %v", err))
	}
	defer mem.Close()
	set := func(v uint16) {
		t.Helper()
		// Not a PIE: the note's link-time address is the run-time one.
		if _, err := mem.WriteAt(binary.LittleEndian.AppendUint16(nil, v), int64(sem)); err != nil {
			t.Fatalf("writing the semaphore: %v", err)
		}
	}
	set(1)
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() || lines.Text() != "0=100 1=100 2=100" {
		cmd.Wait()
		t.Fatalf("after raising the semaphore: %q, %s", lines.Text(), stderr.String())
	}
	set(0)
	if !lines.Scan() || lines.Text() != "released" {
		cmd.Wait()
		t.Fatalf("after dropping the semaphore: %q, %s", lines.Text(), stderr.String())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("%v: %s", err, stderr.String())
	}
}

// mapped reports whether process pid has a writable mapping that holds addr
// (/proc/PID/maps).
func mapped(t *testing.T, pid int, addr uint64) bool {
	t.Helper()
	maps, err := os.ReadFile(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		t.Fatalf("the program's mappings: %v", err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		var lo, hi uint64
		var perms string
		if n, _ := fmt.Sscanf(line, "%x-%x %s", &lo, &hi, &perms); n == 3 && lo <= addr && addr < hi && strings.HasPrefix(perms, "rw") {
			return true
		}
	}
	return false
}
