// Package outfile writes the files commands are asked to write (seal's binary, a profile,
// folded stacks): one way for all, checked before any work is done.
package outfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Where the bytes go. Nothing but a regular file is ever replaced:
//
//   - A regular file is replaced whole: the bytes go to a temporary file in the file's
//     own directory, synced, and renamed over it, so that nobody sees half a file and a
//     failure leaves the file as it was. Its owner, group and mode are kept where they
//     can be (the warnings say what was not); a program that runs from it keeps running
//     from the old file (a rename never meets ETXTBSY). A file that does not exist yet
//     is created with the mode os.Create would give it (0666 less the umask).
//   - A symbolic link is followed to the file it names, every link of a chain resolved
//     once; the rename happens in that file's directory and the links stay links. A
//     dangling link's target is created.
//   - A character device (/dev/null, a terminal) and a descriptor reached through /proc
//     (/dev/stdout, /dev/fd/N: a pipe, a terminal, a file the shell redirected) are
//     streams: the bytes are written to them in order, nothing is renamed. "-" is
//     the command's standard output.
//   - A directory, a block device, a socket and a named pipe (whose open would wait for
//     a reader) are refused, by Resolve, before the command does its work.

// Target is where a file named on the command line is written.
type Target struct {
	Name   string      // as given
	Path   string      // symbolic links resolved; "" for "-"
	Stdout bool        // "-": the command's standard output
	Stream bool        // written in order (device, an open descriptor, stdout), never renamed
	Info   fs.FileInfo // the regular file that is replaced; nil when it does not exist yet
}

// maxLinks bounds a chain of symbolic links, as the kernel does (ELOOP after 40).
const maxLinks = 40

// fdDir matches the directories whose entries are a process's open descriptors: their
// links name open files (pipe:[123], a deleted file), not paths to replace.
var fdDir = regexp.MustCompile(`^/proc/[^/]+(/task/[^/]+)?/fd$`)

// Resolve says where writing name puts the bytes, or why it will not: called before
// the work whose result is written, so that a refusal costs nothing.
func Resolve(name string) (*Target, error) {
	if name == "" {
		return nil, errors.New("no file named")
	}
	if name == "-" {
		return &Target{Name: name, Stdout: true, Stream: true}, nil
	}
	p := filepath.Clean(name)
	for range maxLinks {
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		p = filepath.Join(dir, filepath.Base(p))
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return &Target{Name: name, Path: p}, nil
		case err != nil:
			return nil, err
		case fi.Mode()&fs.ModeSymlink != 0 && fdDir.MatchString(dir):
			return stream(name, p, true)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return nil, err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(dir, target)
			}
			p = target
			continue
		case fi.Mode().IsRegular():
			return &Target{Name: name, Path: p, Info: fi}, nil
		}
		return stream(name, p, false)
	}
	return nil, fmt.Errorf("%s: more than %d symbolic links", name, maxLinks)
}

// stream checks that p, which name led to, is something to write into in order: a
// character device, or any open descriptor (viaFD).
func stream(name, p string, viaFD bool) (*Target, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	m := fi.Mode()
	switch {
	case viaFD && !m.IsDir(), m&fs.ModeCharDevice != 0:
		return &Target{Name: name, Path: p, Stream: true}, nil
	case m&fs.ModeNamedPipe != 0:
		return nil, fmt.Errorf("%s is a named pipe: refusing to wait for its reader (- writes to stdout)", name)
	case m.IsDir():
		return nil, fmt.Errorf("%s is a directory: name the file to write (%s/NAME)", name, strings.TrimRight(name, "/"))
	case m&fs.ModeDevice != 0:
		return nil, fmt.Errorf("%s is a block device: refusing to write onto it", name)
	case m&fs.ModeSocket != 0:
		return nil, fmt.Errorf("%s is a socket: refusing to write into it", name)
	}
	return nil, fmt.Errorf("%s is not a regular file (%v): refusing to replace it", name, m.Type())
}

// Write writes data to t: a stream in order (stdout is "-"'s), a regular file
// replaced keeping its owner, group and mode. It returns what of the file could not be
// kept.
func (t *Target) Write(data []byte, stdout io.Writer) (warnings []string, err error) {
	return t.WriteAs(data, stdout, t.Info, t.Info != nil)
}

// WriteAs is Write giving the new file from's mode (from nil: a new file's) and, with
// chown, from's owner and group (seal writes a binary with its source's mode, owned by
// whoever seals unless it replaces the source).
func (t *Target) WriteAs(data []byte, stdout io.Writer, from fs.FileInfo, chown bool) (warnings []string, err error) {
	switch {
	case t.Stdout:
		_, err = stdout.Write(data)
		return nil, err
	case t.Stream:
		return nil, writeStream(t.Path, data)
	}
	return replace(t.Path, data, from, chown, t.Info)
}

// writeStream writes data to the stream at path: opened without creating or truncating
// it, appending to a regular file reached through an open descriptor, as the shell's
// redirection of that descriptor does.
func writeStream(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// createTemp creates a new file beside path with mode perm less the umask, as
// os.Create would (os.CreateTemp's is 0600 whatever the umask).
func createTemp(path string, perm fs.FileMode) (*os.File, error) {
	var b [6]byte
	for range 100 {
		rand.Read(b[:])
		name := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp-"+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, fmt.Errorf("no free temporary name beside %s", path)
}

// replace writes data to a temporary file in path's directory with the attributes
// keepAttrs gives it (from nil: a new file's), syncs it, and renames it over path. On
// error nothing is left behind and path is as it was. It returns what could not be
// kept.
func replace(path string, data []byte, from fs.FileInfo, chown bool, old fs.FileInfo) (warnings []string, err error) {
	perm := fs.FileMode(0o666)
	if from != nil {
		perm = 0o600 // until keepAttrs gives it from's mode
	}
	tmp, err := createTemp(path, perm)
	if err != nil {
		return nil, fmt.Errorf("cannot write next to %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return nil, err
	}
	if from != nil {
		if warnings, err = keepAttrs(tmp, from, chown); err != nil {
			return nil, err
		}
	}
	if err = tmp.Sync(); err != nil {
		return nil, err
	}
	if err = tmp.Close(); err != nil {
		return nil, err
	}
	if old != nil {
		if n := links(old); n > 1 {
			warnings = append(warnings, fmt.Sprintf("%s had %d hard links: the other %d still name the old content (a rename replaces one name)", path, n, n-1))
		}
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return nil, fmt.Errorf("replacing %s: %w", path, err)
	}
	// The rename is durable once the directory is: a crash after this call must not
	// bring the old name back with neither file.
	if d, err := os.Open(filepath.Dir(path)); err == nil {
		d.Sync()
		d.Close()
	}
	return warnings, nil
}

// specialBits are the mode bits beyond the permissions that a file's mode may carry.
const specialBits = fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky

// keepAttrs gives the new file f src's mode and, with chown, src's owner and group: the
// owner first, because chown clears the setuid and setgid bits, then the mode. The
// setuid bit is kept only while the file's owner is src's, the setgid bit only while
// its group is src's: anything else would hand one user's privilege to another. A
// copy elsewhere (no chown) belongs to whoever writes it, as a cp does. Every bit that
// is not kept, and an owner that is not, is said.
func keepAttrs(f *os.File, src fs.FileInfo, inPlace bool) (warnings []string, err error) {
	want := src.Mode() & (fs.ModePerm | specialBits)
	uid, gid, known := owner(src)
	var chownErr error
	if inPlace && known {
		if err := f.Chown(uid, gid); err != nil {
			chownErr = fmt.Errorf("chown: %w", errors.Unwrap(err)) // the temporary file's name says nothing
		}
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	fuid, fgid, _ := owner(fi)
	because := func(what string, id, want int) string {
		why := fmt.Sprintf("the new file's %s is %d, the original's %d", what, id, want)
		if chownErr != nil {
			why += " (" + chownErr.Error() + ")"
		} else if !inPlace {
			why += " (a copy written elsewhere belongs to whoever writes it)"
		}
		return why
	}
	if known && inPlace && (fuid != uid || fgid != gid) {
		warnings = append(warnings, fmt.Sprintf("owner %d:%d not kept: the new file belongs to %d:%d (%v)", uid, gid, fuid, fgid, chownErr))
	}
	if want&fs.ModeSetuid != 0 && known && fuid != uid {
		want &^= fs.ModeSetuid
		warnings = append(warnings, "setuid bit not kept: "+because("owner", fuid, uid))
	}
	if want&fs.ModeSetgid != 0 && known && fgid != gid {
		want &^= fs.ModeSetgid
		warnings = append(warnings, "setgid bit not kept: "+because("group", fgid, gid))
	}
	if err := f.Chmod(want); err != nil {
		return nil, err
	}
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if lost := want &^ fi.Mode() & (fs.ModePerm | specialBits); lost != 0 {
		warnings = append(warnings, fmt.Sprintf("mode bits %s not kept: the file system or the kernel cleared them (mode is %s, wanted %s)", bitNames(lost), fi.Mode().Perm()|fi.Mode()&specialBits, want))
	}
	return warnings, nil
}

// bitNames names mode bits: setuid, setgid, sticky, and permissions in octal.
func bitNames(m fs.FileMode) string {
	var names []string
	for _, b := range []struct {
		bit  fs.FileMode
		name string
	}{{fs.ModeSetuid, "setuid"}, {fs.ModeSetgid, "setgid"}, {fs.ModeSticky, "sticky"}} {
		if m&b.bit != 0 {
			names = append(names, b.name)
		}
	}
	if p := m.Perm(); p != 0 {
		names = append(names, fmt.Sprintf("%#o", uint32(p)))
	}
	return strings.Join(names, ", ")
}
