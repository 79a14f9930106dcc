//go:build unix

package outfile

import (
	"bytes"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// noTemporaries fails if a temporary file is left in dir.
func noTemporaries(t *testing.T, dir string) {
	t.Helper()
	if m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

func write(t *testing.T, name string, data string) (*Target, []string) {
	t.Helper()
	tg, err := Resolve(name)
	if err != nil {
		t.Fatalf("Resolve(%s): %v", name, err)
	}
	w, err := tg.Write([]byte(data), nil)
	if err != nil {
		t.Fatalf("Write(%s): %v", name, err)
	}
	return tg, w
}

func content(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNewFile: a file that does not exist is created with os.Create's mode.
func TestNewFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "new")
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	write(t, p, "one")
	fi, err := os.Stat(p)
	if err != nil || content(t, p) != "one" || fi.Mode().Perm() != 0o640 {
		t.Fatalf("%v %v", fi.Mode(), err)
	}
	noTemporaries(t, dir)
}

// TestReplaceKeepsModeAndOwner: an existing regular file is replaced, its mode (and
// as root its owner) kept.
func TestReplaceKeepsModeAndOwner(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, []byte("old content"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chmod(p, 0o604)
	root := os.Geteuid() == 0
	if root {
		if err := os.Chown(p, 1234, 5678); err != nil {
			t.Fatal(err)
		}
	}
	_, w := write(t, p, "new")
	fi, _ := os.Stat(p)
	st := fi.Sys().(*syscall.Stat_t)
	if content(t, p) != "new" || fi.Mode().Perm() != 0o604 || len(w) > 0 {
		t.Fatalf("mode %v, warnings %q", fi.Mode(), w)
	}
	if root && (st.Uid != 1234 || st.Gid != 5678) {
		t.Fatalf("owner %d:%d", st.Uid, st.Gid)
	}
	noTemporaries(t, dir)
}

// TestSymlinkFollowed: a link stays a link, its target (through a chain, and a
// dangling one's) is written.
func TestSymlinkFollowed(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	os.WriteFile(target, []byte("x"), 0o644)
	os.Symlink("target", filepath.Join(dir, "l1"))
	os.Symlink(filepath.Join(dir, "l1"), filepath.Join(dir, "l2"))
	tg, _ := write(t, filepath.Join(dir, "l2"), "through links")
	if tg.Path != target || content(t, target) != "through links" {
		t.Fatalf("path %s, content %q", tg.Path, content(t, target))
	}
	for _, l := range []string{"l1", "l2"} {
		if fi, _ := os.Lstat(filepath.Join(dir, l)); fi.Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s is no longer a link", l)
		}
	}
	os.Symlink("absent", filepath.Join(dir, "dangling"))
	write(t, filepath.Join(dir, "dangling"), "created")
	if content(t, filepath.Join(dir, "absent")) != "created" {
		t.Fatal("dangling link's target not created")
	}
	noTemporaries(t, dir)
}

// TestStreams: a character device is written in place and stays a device; "-" is
// stdout; /dev/fd/N is the descriptor's file, appended to.
func TestStreams(t *testing.T) {
	tg, _ := write(t, "/dev/null", "gone")
	if !tg.Stream {
		t.Fatal("/dev/null not a stream")
	}
	if fi, err := os.Lstat("/dev/null"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is now %v", fi.Mode())
	}
	tg, err := Resolve("-")
	if err != nil || !tg.Stdout {
		t.Fatal(tg, err)
	}
	var b bytes.Buffer
	if _, err := tg.Write([]byte("to stdout"), &b); err != nil || b.String() != "to stdout" {
		t.Fatalf("%q %v", b.String(), err)
	}
	if _, err := os.Stat("/dev/fd"); err != nil {
		t.Skip("no /dev/fd")
	}
	p := filepath.Join(t.TempDir(), "redirected")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("before;")
	write(t, "/dev/fd/"+strconv.Itoa(int(f.Fd())), "after")
	if content(t, p) != "before;after" {
		t.Fatalf("%q", content(t, p))
	}
}

// TestRefused: a directory, a named pipe, a socket and a block device are refused by
// Resolve and left as they were.
func TestRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	link := filepath.Join(dir, "link-to-dir")
	os.Symlink(dir, link)
	cases := map[string]string{dir: "is a directory", link: "is a directory", fifo: "named pipe", sock: "is a socket"}
	if blk := blockDevice(); blk != "" {
		cases[blk] = "block device"
	}
	for p, want := range cases {
		before, _ := os.Lstat(p)
		_, err := Resolve(p)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", p, err, want)
		}
		if after, _ := os.Lstat(p); after.Mode() != before.Mode() {
			t.Errorf("%s changed: %v to %v", p, before.Mode(), after.Mode())
		}
	}
	noTemporaries(t, dir)
	noTemporaries(t, filepath.Dir(dir))
}

// blockDevice is a block device of /dev, or "".
func blockDevice() string {
	ents, _ := os.ReadDir("/dev")
	for _, e := range ents {
		if e.Type()&fs.ModeDevice != 0 && e.Type()&fs.ModeCharDevice == 0 {
			return filepath.Join("/dev", e.Name())
		}
	}
	return ""
}

// TestFailureLeavesNothing: a write that fails (a directory nobody may write) leaves
// the file as it was and no temporary file.
func TestFailureLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	os.WriteFile(p, []byte("kept"), 0o644)
	tg, err := Resolve(p)
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// A rename over a directory fails after the temporary file is written.
		os.Remove(p)
		os.Mkdir(p, 0o755)
	} else {
		os.Chmod(dir, 0o555)
		defer os.Chmod(dir, 0o755)
	}
	if _, err := tg.Write([]byte("new"), nil); err == nil {
		t.Fatal("no error")
	}
	if os.Geteuid() != 0 && content(t, p) != "kept" {
		t.Fatal("file changed")
	}
	noTemporaries(t, dir)
}
