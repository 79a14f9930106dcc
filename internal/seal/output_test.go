//go:build linux

package seal

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/sealfmt"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
	"golang.org/x/sys/unix"
)

// TestMain doubles as a child that seals as another user (asUser): SEAL_AS_USER set,
// it seals its two arguments and prints the report or the error as JSON.
func TestMain(m *testing.M) {
	if os.Getenv("SEAL_AS_USER") != "" {
		r, err := File(os.Args[1], os.Args[2])
		var out struct {
			Report *Report
			Err    string
		}
		out.Report = r
		if err != nil {
			out.Err = err.Error()
		}
		json.NewEncoder(os.Stdout).Encode(out)
		os.Exit(0)
	}
	code := testbin.Main(m)
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	os.Exit(code)
}

// shared is a plain (unsealed) test program built once for the tests of this file.
var shared struct {
	sync.Mutex
	dir, bin string
}

// plainCopy returns a fresh copy of the plain exits program in dir, named name, with
// mode perm.
func plainCopy(t *testing.T, dir, name string, perm fs.FileMode) string {
	t.Helper()
	needSealable(t)
	shared.Lock()
	if shared.bin == "" {
		d, err := os.MkdirTemp("", "seal-output-test")
		if err != nil {
			shared.Unlock()
			t.Fatal(err)
		}
		shared.dir = d
		shared.bin = goBuild(t, d, "exits", "./testdata/exits", nil)
	}
	bin := shared.bin
	shared.Unlock()
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil { // WriteFile's mode passes through the umask
		t.Fatal(err)
	}
	return p
}

func isSealed(t *testing.T, path string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return f.Section(sealfmt.SectionName) != nil
}

func lstat(t *testing.T, p string) fs.FileInfo {
	t.Helper()
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// TestSealThroughLinks: sealing a symbolic link, or a chain of them, seals the file
// they name, in its own directory, and leaves every link a link to it.
func TestSealThroughLinks(t *testing.T) {
	root := t.TempDir()
	bins, links := filepath.Join(root, "bin"), filepath.Join(root, "links")
	for _, d := range []string{bins, links} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	real := plainCopy(t, bins, "real", 0o755)
	// links/first -> ../bin/hop (relative) -> real (relative) ; links/abs -> links/first (absolute)
	if err := os.Symlink("real", filepath.Join(bins, "hop")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../bin/hop", filepath.Join(links, "first")); err != nil {
		t.Fatal(err)
	}
	abs := filepath.Join(links, "abs")
	if err := os.Symlink(filepath.Join(links, "first"), abs); err != nil {
		t.Fatal(err)
	}
	r, err := File(abs, abs)
	if err != nil {
		t.Fatal(err)
	}
	if r.Sealed == 0 || r.Already {
		t.Fatalf("report: %+v", r)
	}
	for _, l := range []string{abs, filepath.Join(links, "first"), filepath.Join(bins, "hop")} {
		if lstat(t, l).Mode()&fs.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symbolic link", l)
		}
	}
	if !isSealed(t, real) {
		t.Error("the link's target was not sealed")
	}
	if fi := lstat(t, real); fi.Mode().Perm() != 0o755 || !fi.Mode().IsRegular() {
		t.Errorf("target: %v", fi.Mode())
	}
	noTemporaries(t, bins, links)

	// Sealing twice through the link changes nothing.
	before := digest(t, real)
	if r, err := File(abs, abs); err != nil || !r.Already || digest(t, real) != before {
		t.Errorf("second seal through the link: %v %+v", err, r)
	}

	// -o through a dangling link creates its target and keeps the link.
	dangling := filepath.Join(links, "out")
	if err := os.Symlink("../bin/new", dangling); err != nil {
		t.Fatal(err)
	}
	plain := plainCopy(t, root, "plain", 0o755)
	if _, err := File(plain, dangling); err != nil {
		t.Fatal(err)
	}
	if lstat(t, dangling).Mode()&fs.ModeSymlink == 0 || !isSealed(t, filepath.Join(bins, "new")) {
		t.Error("-o through a dangling link: the link was replaced or its target not written")
	}
	noTemporaries(t, bins, links, root)
}

// TestSealToDevice: -o to a character device, or a link to one, writes the sealed
// bytes into it as a stream and leaves the node as it was.
func TestSealToDevice(t *testing.T) {
	dir := t.TempDir()
	plain := plainCopy(t, dir, "plain", 0o755)
	// Root makes a node of its own, like /dev/null (1, 3): code that replaced the node
	// would then not replace the machine's.
	null := "/dev/null"
	if os.Geteuid() == 0 {
		null = filepath.Join(dir, "null")
		if err := syscall.Mknod(null, syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
	}
	before := lstat(t, null)
	link := filepath.Join(dir, "link")
	if err := os.Symlink(null, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{null, link} {
		r, err := File(plain, out)
		if err != nil {
			t.Fatalf("-o %s: %v", out, err)
		}
		if !r.Streamed {
			t.Errorf("-o %s: not written as a stream: %+v", out, r)
		}
		after := lstat(t, null)
		if after.Mode() != before.Mode() || after.Sys().(*syscall.Stat_t).Rdev != before.Sys().(*syscall.Stat_t).Rdev {
			t.Fatalf("%s changed: %v -> %v", null, before.Mode(), after.Mode())
		}
	}
	if lstat(t, link).Mode()&fs.ModeSymlink == 0 {
		t.Error("the link to the device was replaced")
	}
	if isSealed(t, plain) {
		t.Error("the input was sealed in place")
	}
	noTemporaries(t, dir, filepath.Dir(null))

	// Write streams to any writer: what -o - does.
	var b bytes.Buffer
	if r, err := Write(plain, &b); err != nil || !r.Streamed || !bytes.HasPrefix(b.Bytes(), []byte("\x7fELF")) {
		t.Fatalf("Write: %v %+v, %d bytes", err, r, b.Len())
	}
	out := filepath.Join(dir, "out")
	if _, err := File(plain, out); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, b.Bytes()) {
		t.Error("the stream differs from the sealed file")
	}
}

// TestSealRefusesNodes: a directory, a named pipe or a socket as output, or anything
// but a regular file as input, is refused with the reason, and left as it was.
func TestSealRefusesNodes(t *testing.T) {
	dir := t.TempDir()
	plain := plainCopy(t, dir, "plain", 0o755)
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
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	fifoLink := filepath.Join(dir, "fifolink")
	if err := os.Symlink("fifo", fifoLink); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ in, out, want string }{
		{plain, sub, "is a directory"},
		{plain, fifo, "is a named pipe"},
		{plain, fifoLink, "is a named pipe"},
		{plain, sock, "is a socket"},
		{fifo, filepath.Join(dir, "x"), "not a regular file"},
		{sub, filepath.Join(dir, "x"), "not a regular file"},
	} {
		t.Run(filepath.Base(c.in)+" to "+filepath.Base(c.out), func(t *testing.T) {
			before, _ := os.Lstat(c.out)
			done := make(chan error, 1)
			go func() { _, err := File(c.in, c.out); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("error %v, want one saying %q", err, c.want)
				}
			case <-time.After(time.Minute):
				t.Fatal("File blocked")
			}
			if after, err := os.Lstat(c.out); err == nil && (before == nil || after.Mode() != before.Mode()) {
				t.Errorf("%s changed: %v -> %v", c.out, before.Mode(), after.Mode())
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("an output was written")
	}
	noTemporaries(t, dir, sub)
}

// TestSealKeepsMode: sealing in place keeps the setuid, setgid and permission bits
// and the owner; what cannot be kept is said.
func TestSealKeepsMode(t *testing.T) {
	testutil.NeedRoot(t)
	dir := t.TempDir()
	for _, perm := range []fs.FileMode{0o750 | fs.ModeSetuid, 0o755 | fs.ModeSetgid, 0o755 | fs.ModeSetuid | fs.ModeSetgid} {
		bin := plainCopy(t, dir, "bin", 0o700)
		// Another owner than root: chown after chmod would clear the bits.
		if err := os.Chown(bin, 1234, 5678); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(bin, perm); err != nil {
			t.Fatal(err)
		}
		r, err := File(bin, bin)
		if err != nil {
			t.Fatal(err)
		}
		fi := lstat(t, bin)
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode()&(fs.ModePerm|(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)) != perm || st.Uid != 1234 || st.Gid != 5678 || len(r.Warnings) > 0 {
			t.Errorf("%v: sealed file is %v %d:%d, warnings %q", perm, fi.Mode(), st.Uid, st.Gid, r.Warnings)
		}
		if !isSealed(t, bin) {
			t.Error("not sealed")
		}
	}

	// A copy elsewhere belongs to whoever seals (root here): the bits that would hand
	// the original owner's privilege to root are dropped, and said.
	in := plainCopy(t, dir, "theirs", 0o700)
	os.Chown(in, 1234, 5678)
	os.Chmod(in, 0o755|fs.ModeSetuid|fs.ModeSetgid)
	out := filepath.Join(dir, "copy")
	r, err := File(in, out)
	if err != nil {
		t.Fatal(err)
	}
	if fi := lstat(t, out); fi.Mode()&(fs.ModePerm|(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)) != 0o755 {
		t.Errorf("copy of a 6755 file owned by 1234:5678: mode %v", fi.Mode())
	}
	if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "setuid bit not kept") || !strings.Contains(w, "setgid bit not kept") {
		t.Errorf("warnings: %q", r.Warnings)
	}
	noTemporaries(t, dir)
}

// asUser runs File(in, out) in a child of this test binary as uid and gid 65534, which
// must be able to reach both.
func asUser(t *testing.T, in, out string) (r *Report, errText string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary's own directory is the go command's, closed to others.
	child := filepath.Join(openDir(t, 0o755, 0), "seal.test")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(child, b, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := testutil.Command(child, in, out)
	cmd.Env = append(os.Environ(), "SEAL_AS_USER=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	msg, err := cmd.Output()
	var res struct {
		Report *Report
		Err    string
	}
	if err != nil || json.Unmarshal(msg, &res) != nil {
		t.Fatalf("child as uid 65534: %v: %s", err, msg)
	}
	return res.Report, res.Err
}

// openDir makes a directory that uid 65534 can enter, and returns it.
func openDir(t *testing.T, perm fs.FileMode, owner int) string {
	t.Helper()
	parent := t.TempDir()
	for p := parent; p != "/" && p != os.TempDir(); p = filepath.Dir(p) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o005 != 0o005 {
			os.Chmod(p, fi.Mode().Perm()|0o005)
		}
	}
	d := filepath.Join(parent, "d")
	if err := os.Mkdir(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(d, owner, owner); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, perm); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestSealAsAnotherUser: a user who may replace a file in its directory but not own it
// as its owner did gets a sealed file of its own, without the setuid bit (which would
// make the file run as that user for everyone), and is told both.
func TestSealAsAnotherUser(t *testing.T) {
	testutil.NeedRoot(t)
	if testutil.Emulated() {
		t.Skip("the child runs under the emulator, as another user: not worth the set-up here")
	}
	// A directory of uid 65534, holding root's setuid binary.
	d := openDir(t, 0o755, 65534)
	bin := plainCopy(t, d, "bin", 0o755)
	if err := os.Chmod(bin, 0o755|fs.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	r, errText := asUser(t, bin, bin)
	if errText != "" {
		t.Fatal(errText)
	}
	fi := lstat(t, bin)
	if fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky) != 0 || fi.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Errorf("sealed by uid 65534: %v owned by %d", fi.Mode(), fi.Sys().(*syscall.Stat_t).Uid)
	}
	w := strings.Join(r.Warnings, "\n")
	if !strings.Contains(w, "setuid bit not kept") || !strings.Contains(w, "owner 0:0 not kept") {
		t.Errorf("warnings: %q", r.Warnings)
	}
	t.Logf("warnings: %q", r.Warnings)
	noTemporaries(t, d)
}

// TestSealReadOnlyDir: a binary in a directory its user cannot write is a clear error
// that says where it could not write, and nothing changes. Root writes anywhere: as
// root the test seals as uid 65534.
func TestSealReadOnlyDir(t *testing.T) {
	if os.Geteuid() == 0 && testutil.Emulated() {
		t.Skip("the child runs under the emulator, as another user: not worth the set-up here")
	}
	var ro, bin, errText string
	if os.Geteuid() == 0 {
		ro = openDir(t, 0o555, 65534)
		bin = plainCopy(t, ro, "bin", 0o755)
	} else {
		ro = t.TempDir()
		bin = plainCopy(t, ro, "bin", 0o755)
		if err := os.Chmod(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		defer os.Chmod(ro, 0o755)
	}
	before := digest(t, bin)
	if os.Geteuid() == 0 {
		_, errText = asUser(t, bin, bin)
	} else if _, err := File(bin, bin); err != nil {
		errText = err.Error()
	}
	if !strings.Contains(errText, "cannot write next to "+bin) || !strings.Contains(errText, "permission denied") {
		t.Errorf("read-only directory: %q", errText)
	}
	if digest(t, bin) != before {
		t.Error("the binary changed")
	}
	noTemporaries(t, ro)
}

// TestSealHardLinks: sealing one name of a file with several says that the others
// still name the unsealed file.
func TestSealHardLinks(t *testing.T) {
	dir := t.TempDir()
	bin := plainCopy(t, dir, "bin", 0o755)
	other := filepath.Join(dir, "other")
	if err := os.Link(bin, other); err != nil {
		t.Fatal(err)
	}
	r, err := File(bin, bin)
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(r.Warnings, "\n"); !strings.Contains(w, "2 hard links") {
		t.Errorf("warnings: %q", r.Warnings)
	}
	if !isSealed(t, bin) || isSealed(t, other) {
		t.Error("want bin sealed, other as it was")
	}
}

// TestSealRunning: a binary that is running is sealed in place, and the process keeps
// running from the file it started from.
func TestSealRunning(t *testing.T) {
	needSealable(t)
	// sdtctl's test target fires its probe forever: whatever the time sealing takes,
	// it ends only when killed.
	bin := goBuild(t, t.TempDir(), "target", "../../cmd/sdtctl/testdata/target", nil)
	cmd := testutil.Command(bin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer cmd.Process.Kill()
	if _, err := File(bin, bin); err != nil {
		t.Fatal(err)
	}
	if !isSealed(t, bin) {
		t.Error("not sealed")
	}
	select {
	case err := <-done:
		t.Fatalf("the running program ended when its file was sealed: %v\n%s", err, stderr.String())
	default:
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the program ended by itself: %v\n%s", err, stderr.String())
	}
}
