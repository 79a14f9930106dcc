//go:build linux && (amd64 || arm64)

package sdt_test

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/sdt"
)

// testStart is about when sdt's init ended: this package is initialised right after.
var testStart = time.Now()

// Membarrier commands (include/uapi/linux/membarrier.h).
const (
	membarrierRegisterSyncCore = 1 << 6
	membarrierGetRegistrations = 1 << 9 // Linux 6.3
)

// syncCoreRegistered reports whether the process has registered for membarrier's core
// serialization.
func syncCoreRegistered(t *testing.T) bool {
	t.Helper()
	mask, _, e := unix.Syscall(unix.SYS_MEMBARRIER, membarrierGetRegistrations, 0, 0)
	if e != 0 {
		t.Skipf("membarrier(GET_REGISTRATIONS): %v (Linux before 6.3)", e)
	}
	return mask&membarrierRegisterSyncCore != 0
}

// TestPrepareAfterInit: sealing at init asks nothing of the kernel's membarrier, whose
// registration costs an RCU grace period (milliseconds) that would be every program's
// start-up time. The registration comes later, in the background, or with the first
// switch, which must work either way. Each case runs in a fresh process (this test
// binary again), since a registration cannot be undone.
func TestPrepareAfterInit(t *testing.T) {
	if !patching {
		t.Skip("no patching here: nothing to register for")
	}
	if mode := os.Getenv("GOSDT_TEST_PREPARE"); mode != "" {
		prepareChild(t, mode)
		return
	}
	for _, mode := range []string{"background", "enable"} {
		t.Run(mode, func(t *testing.T) {
			cmd := testutil.Command(os.Args[0], "-test.run=^TestPrepareAfterInit$", "-test.v")
			cmd.Env = append(os.Environ(), "GOSDT_TEST_PREPARE="+mode)
			out, err := cmd.CombinedOutput()
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Fatal(err)
			}
			switch s := string(out); {
			case err != nil || strings.Contains(s, "--- FAIL"):
				t.Fatalf("child (%s): %v\n%s", mode, err, out)
			case strings.Contains(s, "--- SKIP"):
				t.Skipf("child skipped:\n%s", out)
			case !strings.Contains(s, "--- PASS"):
				t.Fatalf("child ran no test:\n%s", out)
			}
		})
	}
}

func prepareChild(t *testing.T, mode string) {
	registered := syncCoreRegistered(t)
	if since := time.Since(testStart); since > 50*time.Millisecond {
		t.Skipf("the test started %v after sdt's init: too late to see it unregistered", since)
	}
	if registered {
		t.Fatal("registered for membarrier's core serialization during start-up")
	}
	if got := sitesIn(t, "shape:::a0")["sdt_test.fireArities"]; got[0] != 1 {
		t.Fatalf("shape:::a0: %d sealed sites, want 1: sealing at init needs no registration", got[0])
	}
	switch mode {
	case "enable":
		// The first switch comes before the background registration: it waits for it.
		n, err := sdt.Enable("shape:::a0")
		if err != nil || n != 1 {
			t.Fatalf("Enable: %d, %v", n, err)
		}
		fired := 0
		defer ar0.Attach(func() { fired++ })()
		fireArities("x")
		if fired != 1 {
			t.Errorf("fired %d times, want 1", fired)
		}
		if _, err := sdt.Disable("shape:::a0"); err != nil {
			t.Fatal(err)
		}
		if !syncCoreRegistered(t) {
			t.Error("switched without registering for core serialization")
		}
	case "background":
		deadline := time.Now().Add(10 * time.Second)
		for !syncCoreRegistered(t) {
			if time.Now().After(deadline) {
				t.Fatal("not registered for core serialization 10s after start")
			}
			time.Sleep(5 * time.Millisecond)
		}
		t.Logf("registered %v after start", time.Since(testStart))
	}
}
