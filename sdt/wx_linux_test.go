//go:build amd64 || arm64

package sdt_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/seal"
	"github.com/gosdt/gosdt/internal/testutil"
)

type wxResult struct {
	Sites, Branch   int
	Reasons, Notes  []string
	EnableErr       string
	TextNotWritable bool
	ListedOn        bool
	FlagOn          bool
	Fires           [3]int64
	DisableErr      string
	WX              []string
}

// TestWX starts testdata/wx under the W^X policies a service meets (systemd's
// MemoryDenyWriteExecute seccomp filter, and PR_SET_MDWE, which newer systemd uses),
// installed before it starts, as a plain and as a sealed binary, with and without the
// /proc/self/mem fallback. Whatever happens, the probe must fire exactly when enabled,
// the process must keep running, and no mapping may be writable and executable.
func TestWX(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and seals a program")
	}
	if testutil.Emulated() {
		// The filter would apply to qemu's own host syscalls (other numbers, and its code
		// generator needs writable and executable memory).
		testutil.Skip(t, "seccomp", "W^X policies cannot be applied to a program run by qemu-user")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build the test programs with:", err)
	}
	dir := t.TempDir()
	build := func(name, pkg string) string {
		bin := filepath.Join(dir, name)
		cmd := exec.Command(gobin, "build", "-o", bin, pkg)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
		return bin
	}
	launch := build("wxlaunch", "./testdata/wxlaunch")
	plain := build("plain", "./testdata/wx")
	sealed := filepath.Join(dir, "sealed")
	if _, err := seal.File(plain, sealed); err != nil {
		t.Fatal(err)
	}

	run := func(t *testing.T, policy, bin string, procMem bool) wxResult {
		t.Helper()
		cmd := exec.Command(launch, policy, bin)
		cmd.Env = append(os.Environ(), "SDT_PATCH_PROCMEM=on")
		if !procMem {
			cmd.Env = append(os.Environ(), "SDT_PATCH_PROCMEM=off")
		}
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 3 {
			testutil.Skip(t, policy, strings.TrimSpace(string(ee.Stderr)))
		}
		if err != nil {
			stderr := ""
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			t.Fatalf("%s %s: %v\n%s%s", policy, bin, err, out, stderr)
		}
		var r wxResult
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("%s: %v", out, err)
		}
		t.Logf("%+v", r)
		if r.Sites == 0 {
			t.Fatal("no site found")
		}
		if len(r.WX) > 0 {
			t.Errorf("writable and executable mappings: %q", r.WX)
		}
		if r.DisableErr != "" {
			t.Errorf("Disable: %s", r.DisableErr)
		}
		return r
	}
	// works: Enable succeeded and the probe fired exactly while enabled.
	works := func(t *testing.T, r wxResult) {
		t.Helper()
		if r.EnableErr != "" || !r.ListedOn || !r.FlagOn || r.Fires != [3]int64{0, 10, 0} {
			t.Errorf("Enable %q, listed on %v, flag %v, fires (off, on, off) %v: want no error, on, [0 10 0]",
				r.EnableErr, r.ListedOn, r.FlagOn, r.Fires)
		}
	}
	const procMemNote = "/proc/self/mem"
	mentions := func(list []string, words ...string) bool {
		for _, s := range list {
			all := true
			for _, w := range words {
				all = all && strings.Contains(s, w)
			}
			if all {
				return true
			}
		}
		return false
	}

	// Without a policy: sites sealed the usual way (the premise the others differ from).
	t.Run("none", func(t *testing.T) {
		r := run(t, "none", plain, true)
		works(t, r)
		if r.Branch == r.Sites || mentions(r.Notes, procMemNote) || mentions(r.Reasons, "W^X") {
			t.Errorf("without a policy: %d of %d sites branch-only, notes %q, reasons %q", r.Branch, r.Sites, r.Notes, r.Reasons)
		}
	})
	for _, policy := range []string{"seccomp", "mdwe"} {
		t.Run(policy, func(t *testing.T) {
			t.Run("plain", func(t *testing.T) {
				r := run(t, policy, plain, false)
				works(t, r) // through the flag
				if r.Branch != r.Sites || !mentions(r.Reasons, "sealing failed", "mprotect", "W^X", "MemoryDenyWriteExecute") {
					t.Errorf("%d of %d sites branch-only, reasons %q: want all, saying mprotect was refused by W^X", r.Branch, r.Sites, r.Reasons)
				}
			})
			t.Run("plain/procmem", func(t *testing.T) {
				r := run(t, policy, plain, true)
				works(t, r)
				if r.Branch == r.Sites || !mentions(r.Notes, procMemNote, "W^X") {
					t.Errorf("%d of %d sites branch-only, notes %q: want sealed through /proc/self/mem", r.Branch, r.Sites, r.Notes)
				}
			})
			t.Run("sealed", func(t *testing.T) {
				r := run(t, policy, sealed, false)
				if !r.TextNotWritable || !strings.Contains(r.EnableErr, "mprotect") || !strings.Contains(r.EnableErr, "MemoryDenyWriteExecute") {
					t.Errorf("Enable = %q (ErrTextNotWritable %v), want ErrTextNotWritable naming mprotect and W^X", r.EnableErr, r.TextNotWritable)
				}
				if r.ListedOn || r.FlagOn || r.Fires != [3]int64{} {
					t.Errorf("after the failed Enable: listed on %v, flag %v, fires %v: want the state unchanged", r.ListedOn, r.FlagOn, r.Fires)
				}
			})
			t.Run("sealed/procmem", func(t *testing.T) {
				works(t, run(t, policy, sealed, true))
			})
		})
	}
}
