//go:build linux

package control_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/sdt/control"
)

// TestMain doubles as the child of TestStart: a fresh process that reports whether
// it bound its control socket (and when) with what its main did first.
func TestMain(m *testing.M) {
	if mode := os.Getenv("CONTROL_TEST_CHILD"); mode != "" {
		if f := children[mode]; f != nil {
			if err := f(); err != nil {
				fmt.Printf("child %s: %v\n", mode, err)
				os.Exit(1)
			}
			os.Exit(0)
		}
		if mode == "stop" {
			control.Stop()
		}
		path := ctlproto.SocketPath(os.Getpid())
		for start := time.Now(); time.Since(start) < time.Second; time.Sleep(time.Millisecond) {
			if _, err := os.Stat(path); err == nil {
				fmt.Printf("bound %v socket=%q\n", control.Socket() == path, control.Socket())
				os.Exit(0)
			}
		}
		fmt.Printf("unbound socket=%q\n", control.Socket())
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestStart: a process binds its socket shortly after its init by itself; not with
// SDT_CONTROL=off, and not when its main calls Stop first (what sdtctl does).
func TestStart(t *testing.T) {
	for _, c := range []struct {
		mode, env, want string
	}{
		{"serve", "", "bound true"},
		{"stop", "", "unbound"},
		{"serve", "SDT_CONTROL=off", "unbound"},
	} {
		cmd := testutil.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "CONTROL_TEST_CHILD="+c.mode, "XDG_RUNTIME_DIR="+t.TempDir(), c.env)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), c.want) {
			t.Errorf("%s %s: %v %q, want %q", c.mode, c.env, err, out, c.want)
		}
	}
}
