package seal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Where a sealed binary goes. Sealing never replaces anything but a regular file:
//
//   - A regular file (BINARY itself, or -o OUT) is replaced whole: the sealed bytes go to
//     a temporary file in the file's own directory, synced, and renamed over it, so that
//     nobody sees half a binary and a failure leaves the file as it was. A program that
//     runs from it keeps running from the old file (a rename never meets ETXTBSY).
//   - A symbolic link is followed to the file it names, every link of a chain resolved
//     once; the rename happens in that file's directory and the links stay links. A
//     dangling link's target is created.
//   - A character device (/dev/null, a terminal) and a descriptor reached through /proc
//     (/dev/stdout, /dev/fd/N: a pipe, a terminal, a file the shell redirected) are
//     streams: the bytes are written to them in order, nothing is renamed. -o - is
//     stdout (Write).
//   - A directory, a block device, a socket and a named pipe (whose open would wait for
//     a reader; -o - with a redirection says the same without the wait) are refused.
//
// What is kept of the file's mode and owner (see keepAttrs) is said in the report's
// warnings, as is what a rename cannot keep: other hard links of a replaced file still
// name its old content.

// destination is where the sealed bytes go.
type destination struct {
	path   string      // the file: symbolic links resolved
	stream bool        // written in order (device, FIFO, an open descriptor), never renamed
	info   fs.FileInfo // the regular file that is replaced; nil when it does not exist yet
}

// maxLinks bounds a chain of symbolic links, as the kernel does (ELOOP after 40).
const maxLinks = 40

// fdDir matches the directories whose entries are a process's open descriptors: their
// links name open files (pipe:[123], a deleted file), not paths to replace.
var fdDir = regexp.MustCompile(`^/proc/[^/]+(/task/[^/]+)?/fd$`)

// resolveOutput says where writing out puts the bytes.
func resolveOutput(out string) (destination, error) {
	p := filepath.Clean(out)
	for range maxLinks {
		dir, err := filepath.EvalSymlinks(filepath.Dir(p))
		if err != nil {
			return destination{}, fmt.Errorf("%s: %w", out, err)
		}
		p = filepath.Join(dir, filepath.Base(p))
		fi, err := os.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return destination{path: p}, nil
		case err != nil:
			return destination{}, err
		case fi.Mode()&fs.ModeSymlink != 0 && fdDir.MatchString(dir):
			return stream(out, p, true)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return destination{}, err
			}
			if !filepath.IsAbs(target) {
				target = filepath.Join(dir, target)
			}
			p = target
			continue
		case fi.Mode().IsRegular():
			return destination{path: p, info: fi}, nil
		}
		return stream(out, p, false)
	}
	return destination{}, fmt.Errorf("%s: more than %d symbolic links", out, maxLinks)
}

// stream checks that p, which out led to, is something to write a binary into in
// order: a character device, or any open descriptor (viaFD).
func stream(out, p string, viaFD bool) (destination, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return destination{}, fmt.Errorf("%s: %w", out, err)
	}
	m := fi.Mode()
	switch {
	case viaFD && !m.IsDir(), m&fs.ModeCharDevice != 0:
		return destination{path: p, stream: true}, nil
	case m&fs.ModeNamedPipe != 0:
		return destination{}, fmt.Errorf("%s is a named pipe: refusing to wait for its reader (-o - writes to stdout)", out)
	case m.IsDir():
		return destination{}, fmt.Errorf("%s is a directory: name the file to write (-o DIR/NAME)", out)
	case m&fs.ModeDevice != 0:
		return destination{}, fmt.Errorf("%s is a block device: refusing to write a binary onto it", out)
	case m&fs.ModeSocket != 0:
		return destination{}, fmt.Errorf("%s is a socket: refusing to write a binary into it", out)
	}
	return destination{}, fmt.Errorf("%s is not a regular file (%v): refusing to replace it", out, m.Type())
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

// replace writes data to a temporary file in path's directory with the attributes
// keepAttrs gives it, syncs it, and renames it over path. On error nothing is left
// behind and path is as it was. It returns what could not be kept.
func replace(path string, data []byte, src fs.FileInfo, inPlace bool, old fs.FileInfo) (warnings []string, err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".seal-*")
	if err != nil {
		return nil, fmt.Errorf("cannot write the sealed binary next to %s: %w", path, err)
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
	if warnings, err = keepAttrs(tmp, src, inPlace); err != nil {
		return nil, err
	}
	if err = tmp.Sync(); err != nil {
		return nil, err
	}
	if err = tmp.Close(); err != nil {
		return nil, err
	}
	if old != nil {
		if n := links(old); n > 1 {
			warnings = append(warnings, fmt.Sprintf("%s had %d hard links: the other %d still name the unsealed file (a rename replaces one name)", path, n, n-1))
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

// keepAttrs gives the new file f src's mode and, in place, src's owner and group: the
// owner first, because chown clears the setuid and setgid bits, then the mode. The
// setuid bit is kept only while the file's owner is src's, the setgid bit only while
// its group is src's: anything else would hand one user's privilege to another. A
// sealed copy elsewhere (-o) belongs to whoever seals, as a cp does. Every bit that
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
		why := fmt.Sprintf("the sealed file's %s is %d, the original's %d", what, id, want)
		if chownErr != nil {
			why += " (" + chownErr.Error() + ")"
		} else if !inPlace {
			why += " (a copy written elsewhere belongs to whoever seals it)"
		}
		return why
	}
	if known && inPlace && (fuid != uid || fgid != gid) {
		warnings = append(warnings, fmt.Sprintf("owner %d:%d not kept: the sealed file belongs to %d:%d (%v)", uid, gid, fuid, fgid, chownErr))
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

// inputFile checks that in names a regular file (symbolic links followed) and returns
// its information.
func inputFile(in string) (fs.FileInfo, error) {
	fi, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v): seal reads a binary file", in, fi.Mode().Type())
	}
	return fi, nil
}
