//go:build linux

package main

import (
	"bytes"
	"debug/elf"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/sealfmt"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// sealedELF reports whether b is an ELF file with a site table.
func sealedELF(b []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return false
	}
	return f.Section(sealfmt.SectionName) != nil
}

// TestSealToStdout: `seal -o -` and `seal -o /dev/stdout` pipe the sealed binary, with
// the report on stderr; the /dev/stdout link stays a link.
func TestSealToStdout(t *testing.T) {
	bin := buildTarget(t)
	var out, errb bytes.Buffer
	if err := run([]string{"seal", "-o", "-", bin}, &out, &errb); err != nil {
		t.Fatalf("seal -o -: %v: %s", err, errb.String())
	}
	if !sealedELF(out.Bytes()) || !strings.Contains(errb.String(), "sealed 1 of 1 site;") {
		t.Fatalf("seal -o -: %d bytes on stdout, stderr %q", out.Len(), errb.String())
	}

	// The reproduction of issue 20, in a process of its own: its stdout is a pipe.
	before, err := os.Lstat("/dev/stdout")
	if err != nil || before.Mode()&fs.ModeSymlink == 0 {
		t.Skipf("/dev/stdout is not a symbolic link here: %v", err)
	}
	cmd := exec.Command(testbin.Sdtctl(t), "seal", "-o", "/dev/stdout", bin)
	var piped, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &piped, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("seal -o /dev/stdout: %v: %s", err, stderr.String())
	}
	if !bytes.Equal(piped.Bytes(), out.Bytes()) {
		t.Errorf("seal -o /dev/stdout piped %d bytes, seal -o - %d", piped.Len(), out.Len())
	}
	if after, err := os.Lstat("/dev/stdout"); err != nil || after.Mode() != before.Mode() {
		t.Fatalf("/dev/stdout is no longer a symbolic link: %v %v", after.Mode(), err)
	}
	if sealedELF(mustRead(t, bin)) {
		t.Error("the input was sealed")
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSealWarnsOnStderr: what sealing could not keep of the file is said on stderr.
func TestSealWarnsOnStderr(t *testing.T) {
	testutil.NeedRoot(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "theirs")
	if err := os.WriteFile(in, mustRead(t, buildTarget(t)), 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chown(in, 1234, 1234)
	if err := os.Chmod(in, 0o750|fs.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if err := run([]string{"seal", "-o", filepath.Join(dir, "mine"), in}, &out, &errb); err != nil {
		t.Fatalf("%v: %s", err, errb.String())
	}
	if !strings.Contains(errb.String(), "sdtctl: seal: setuid bit not kept") {
		t.Errorf("stderr: %q", errb.String())
	}
}

// TestDamagedSealedTarget: a sealed program whose site table is damaged says so on
// stderr, and still lists its probe with its function and its site, sealed in the
// file, and traces it; offline, list says what is wrong with the file and seal refuses
// it, naming the file.
func TestDamagedSealedTarget(t *testing.T) {
	sealedBin := filepath.Join(t.TempDir(), "target")
	if _, err := sdtctl(t, "seal", "-o", sealedBin, buildTarget(t)); err != nil {
		t.Fatal(err)
	}
	bad := testbin.DamageTable(t, sealedBin, testbin.FlipByte, "")
	const says = ": site table (.gosdt.sites) unusable: CRC mismatch"

	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	cmd := testutil.Command(bad)
	// A file, not a buffer: read while the program runs, a buffer would be written by
	// os/exec's copying goroutine meanwhile.
	stderrFile, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer stderrFile.Close()
	cmd.Stderr = stderrFile
	stderr := func() string { b, _ := os.ReadFile(stderrFile.Name()); return string(b) }
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := cmd.Process.Pid
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(ctlproto.SocketPath(pid)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the target bound no control socket in 10 s: %s", stderr())
		}
	}
	p := strconv.Itoa(pid)
	if msg := stderr(); !strings.HasPrefix(msg, "sdt: "+bad+says) {
		t.Errorf("stderr at start: %q", msg)
	}
	out, err := sdtctl(t, "list", "-p", p, "e2e:::tick")
	if err != nil || !strings.Contains(out, "e2e:main:main.step:tick") || !strings.Contains(out, "sealed-off") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	out, err = sdtctl(t, "trace", "-p", p, "e2e:::tick", "-c", "5")
	if err != nil || strings.Count(out, "e2e:main:main.step:tick i=") != 5 {
		t.Fatalf("trace: %v\n%s", err, out)
	}

	var stdout, errb bytes.Buffer
	if err := run([]string{"list", bad}, &stdout, &errb); err != nil || !strings.HasPrefix(errb.String(), "sdtctl: "+bad+says) ||
		!strings.Contains(stdout.String(), "sealed in the file") {
		t.Errorf("list BINARY: %v\nstderr %s\n%s", err, errb.String(), stdout.String())
	}
	errb.Reset()
	if err := run([]string{"seal", bad}, &stdout, &errb); exitCode(err) != exitError || !strings.Contains(err.Error(), bad+": sealed, but site table") {
		t.Errorf("seal: %v", err)
	}
	short := testbin.DamageTable(t, sealedBin, testbin.TruncateFile, "")
	for _, cmd := range []string{"list", "seal"} {
		if err := run([]string{cmd, short}, &stdout, &errb); err == nil || !strings.Contains(err.Error(), short+": truncated") {
			t.Errorf("%s of a truncated file: %v", cmd, err)
		}
	}
}
