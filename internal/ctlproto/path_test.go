package ctlproto

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestPaths: the control directory and sockets are where filepath.Join would put
// them, a trailing separator of $XDG_RUNTIME_DIR or $TMPDIR included.
func TestPaths(t *testing.T) {
	if os.PathSeparator != '/' {
		t.Skip("the paths below are Unix paths")
	}
	for _, dir := range []string{"/run/user/1000", "/run/user/1000/", "/tmp//", "/"} {
		if got, want := InDir(dir, "gosdt"), filepath.Join(dir, "gosdt"); got != want {
			t.Errorf("InDir(%q, gosdt) = %q, want %q", dir, got, want)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", "/run/user/1000/")
	if got, want := SocketPath(42), "/run/user/1000/gosdt/42.sock"; got != want {
		t.Errorf("SocketPath(42) = %q, want %q", got, want)
	}
	t.Setenv("XDG_RUNTIME_DIR", "")
	t.Setenv("TMPDIR", "/var/tmp/")
	if got, want := Dir(), "/var/tmp/gosdt-"+strconv.Itoa(os.Getuid()); got != want {
		t.Errorf("Dir() = %q, want %q", got, want)
	}
}
