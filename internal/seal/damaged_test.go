package seal

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/sled/offline"
)

// damages are the ways a sealed binary's site table can be unusable, and what the
// message says of each.
var damages = []struct{ damage, says string }{
	{testbin.FlipByte, "CRC mismatch"},
	{testbin.BadMagic, "bad magic"},
	{testbin.TruncateSection, "truncated: "},
	{testbin.TruncateFile, "truncated"},
	{testbin.ForeignTable, "another binary's table"},
	{testbin.NoTable, "no .gosdt.sites section"},
}

// TestDamagedTable: a sealed program whose site table is damaged or foreign says so on
// stderr at start, naming itself and the reason, and finds its sites in the text: its
// probes have their sites, sealed in the file, and fire exactly when enabled, in every
// mode. Offline, seal refuses it, naming the file and the reason, and writes nothing.
func TestDamagedTable(t *testing.T) {
	_, bin, r := sealed(t, "../../sdt/testdata/selfcheck")
	_, donor, _ := sealed(t, "./testdata/exits")
	for _, d := range damages {
		t.Run(d.damage, func(t *testing.T) {
			bad := testbin.DamageTable(t, bin, d.damage, donor)
			for _, env := range [][]string{nil, {"SDT_MODE=on"}, {"SDT_MODE=signal"}} {
				cmd := testutil.Command(bad)
				cmd.Env = append(os.Environ(), env...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				err := cmd.Run()
				want := "sites=2 sealed=2 branch=0\nok\n"
				if err != nil || !strings.Contains(stdout.String(), want) {
					t.Errorf("%v: %v: %s%s", env, err, stdout.String(), stderr.String())
				}
				line := "sdt: " + bad + ": site table (.gosdt.sites) unusable: "
				if msg := stderr.String(); !strings.HasPrefix(msg, line) || !strings.Contains(msg, d.says) || strings.Count(msg, "\n") != 1 ||
					!strings.Contains(msg, "found 2 sites in the text instead, 2 of them sealed in the file") {
					t.Errorf("%v: stderr %q, want one line %q... saying %q", env, msg, line, d.says)
				}
			}
			if d.damage == testbin.TruncateFile {
				if _, err := offline.Discover(bad); err == nil || !strings.Contains(err.Error(), bad+": truncated") {
					t.Errorf("offline: %v", err)
				}
			} else if tab, err := offline.Discover(bad); err != nil {
				t.Errorf("offline: %v", err)
			} else if !strings.Contains(tab.Warning, bad+": site table (.gosdt.sites) unusable: ") || !strings.Contains(tab.Warning, d.says) || len(tab.Sites) != r.Sites {
				t.Errorf("offline: %d sites, warning %q", len(tab.Sites), tab.Warning)
			}
			before := digest(t, bad)
			out := filepath.Join(t.TempDir(), "out")
			if _, err := File(bad, out); err == nil || !strings.Contains(err.Error(), bad+": ") || !strings.Contains(err.Error(), d.says) {
				t.Errorf("seal: %v", err)
			}
			if _, err := File(bad, bad); err == nil || digest(t, bad) != before {
				t.Errorf("seal in place: %v, changed %v", err, digest(t, bad) != before)
			}
			if _, err := os.Stat(out); err == nil {
				t.Error("seal wrote an output")
			}
			noTemporaries(t, filepath.Dir(bad), filepath.Dir(out))
		})
	}
}

// noTemporaries fails if a temporary file of seal is left in any of dirs.
func noTemporaries(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if m, _ := filepath.Glob(filepath.Join(d, ".*.tmp-*")); len(m) > 0 {
			t.Errorf("temporary files left: %v", m)
		}
	}
}
