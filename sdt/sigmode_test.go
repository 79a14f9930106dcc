//go:build unix

package sdt_test

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/testutil"
)

// lockedBuffer is a buffer a command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestSignalModeKeepsCtrlC starts a program in SDT_MODE=signal with SDT_SIGNAL=SIGINT:
// refused, said on stderr with sdt's prefix, SIGUSR2 toggles its probes, and SIGINT
// (Ctrl-C) still stops it.
func TestSignalModeKeepsCtrlC(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the test program with:", err)
	}
	bin := filepath.Join(t.TempDir(), "sigtoggle")
	if out, err := exec.Command(gobin, "build", "-o", bin, "./testdata/sigtoggle").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := testutil.Command(bin)
	cmd.Env = append(os.Environ(), "SDT_MODE=signal", "SDT_SIGNAL=SIGINT", "SDT_CONTROL=off")
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	defer func() {
		cmd.Process.Kill()
		<-exited
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	expect := func(want string) {
		t.Helper()
		select {
		case l := <-lines:
			if l != want {
				t.Fatalf("got %q, want %q (stderr %s)", l, want, stderr.String())
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("no %q in 60 s (stderr %s)", want, stderr.String())
		}
	}
	expect("ready")
	cmd.Process.Signal(syscall.SIGUSR2) // the default toggle, kept
	expect("on")
	if w := `sdt: SDT_SIGNAL="SIGINT": SIGINT is how users stop a program`; !strings.Contains(stderr.String(), w) {
		t.Errorf("stderr lacks %q:\n%s", w, stderr.String())
	}
	cmd.Process.Signal(syscall.SIGINT)
	select {
	case l, ok := <-lines:
		if ok {
			t.Fatalf("after SIGINT: %q", l)
		}
		err := <-exited
		exited <- err // for the deferred wait
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGINT {
			t.Fatalf("after SIGINT: %v, want killed by SIGINT", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("SIGINT did not stop the program in 60 s: it toggled its probes instead")
	}
}
