package ctlproto

import (
	"os"
	"strconv"
)

// Dir is the directory of the control sockets of this user's processes:
// $XDG_RUNTIME_DIR/gosdt, or /tmp/gosdt-<uid> when XDG_RUNTIME_DIR is unset.
func Dir() string {
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		return InDir(d, "gosdt")
	}
	return InDir(os.TempDir(), "gosdt-"+strconv.Itoa(os.Getuid()))
}

// InDir is the path of the file name in directory dir. Not filepath.Join, whose
// cleaning of the path (filepathlite.Clean) every traced program would link for
// directories that name the same one with or without it.
func InDir(dir, name string) string {
	for len(dir) > 0 && dir[len(dir)-1] == os.PathSeparator {
		dir = dir[:len(dir)-1]
	}
	return dir + string(os.PathSeparator) + name
}

// SocketPath is the control socket of process pid.
func SocketPath(pid int) string {
	return InDir(Dir(), strconv.Itoa(pid)+".sock")
}

// PidOf returns the pid a socket file name (<pid>.sock) names.
func PidOf(name string) (int, bool) {
	base, ok := cutSuffix(name, ".sock")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(base)
	return pid, err == nil && pid > 0
}

func cutSuffix(s, suffix string) (string, bool) {
	if len(s) < len(suffix) || s[len(s)-len(suffix):] != suffix {
		return s, false
	}
	return s[:len(s)-len(suffix)], true
}
