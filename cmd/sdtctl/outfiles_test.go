//go:build unix

package main

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// fileFlags is every option of sdtctl that writes a file: the command, the flag, and
// the arguments that would make the command work (-p of a process that does not
// exist: a refusal of the file must come before that is found out).
var fileFlags = []struct {
	cmd, flag string
	args      []string
}{
	{"stat", "--pprof", []string{"stat", "boot:::", "--by", "stack", "-p", "999999999"}},
	{"stat", "--folded", []string{"stat", "boot:::", "--by", "stack", "-p", "999999999"}},
	{"seal", "-o", []string{"seal", "/proc/self/exe"}},
}

// TestOutputFileRefusedBeforeWork: for every option that writes a file, a directory,
// a named pipe, a socket and a block device are refused with usage's exit code, before
// the command does anything else, and left as they were.
func TestOutputFileRefusedBeforeWork(t *testing.T) {
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
	kinds := map[string]string{dir: "is a directory", fifo: "is a named pipe", sock: "is a socket"}
	ents, _ := os.ReadDir("/dev")
	for _, e := range ents {
		if e.Type()&fs.ModeDevice != 0 && e.Type()&fs.ModeCharDevice == 0 {
			kinds[filepath.Join("/dev", e.Name())] = "is a block device"
			break
		}
	}
	for _, f := range fileFlags {
		for target, want := range kinds {
			args := append(append([]string{}, f.args...), f.flag, target)
			before, _ := os.Lstat(target)
			var out, errb bytes.Buffer
			start := time.Now()
			err := run(args, &out, &errb)
			if exitCode(err) != exitUsage || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), f.flag[strings.LastIndexByte(f.flag, '-')+1:]) {
				t.Errorf("%s: %v (exit %d), want usage: %s", strings.Join(args, " "), err, exitCode(err), want)
			}
			if time.Since(start) > 5*time.Second {
				t.Errorf("%s: refused after %v", strings.Join(args, " "), time.Since(start))
			}
			if after, _ := os.Lstat(target); after.Mode() != before.Mode() {
				t.Errorf("%s: %s changed from %v to %v", strings.Join(args, " "), target, before.Mode(), after.Mode())
			}
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*.tmp-*")); len(m) > 0 {
		t.Errorf("temporary files left: %v", m)
	}
}

// TestStackFilesEveryKind: --pprof and --folded write a new file with os.Create's
// mode, replace a file keeping its mode, follow a symbolic link to its target, write
// a character device in place and - to stdout.
func TestStackFilesEveryKind(t *testing.T) {
	snap := &ctlproto.Stat{By: "stack", Rows: []ctlproto.Row{{Key: "p:m::n\nmain.f\tf.go:1\nmain.main\tm.go:2", Count: 3}}}
	wantFolded := "main.main;main.f;p:m::n 3\n"
	for _, flag := range []string{"pprof", "folded"} {
		t.Run(flag, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name string) (stdout string) {
				t.Helper()
				outs, err := resolveOutputs("stat", map[string]string{flag: name})
				if err != nil {
					t.Fatal(err)
				}
				var out, errb bytes.Buffer
				if err := writeStacks(snap, time.Now(), outs["pprof"], outs["folded"], &out, &errb); err != nil || errb.Len() > 0 {
					t.Fatalf("%s: %v %s", name, err, errb.String())
				}
				return out.String()
			}
			check := func(p string) {
				t.Helper()
				b, err := os.ReadFile(p)
				switch {
				case err != nil:
					t.Fatal(err)
				case flag == "folded" && string(b) != wantFolded:
					t.Errorf("%s: %q", p, b)
				case flag == "pprof" && !bytes.HasPrefix(b, []byte{0x1f, 0x8b}):
					t.Errorf("%s: not gzip", p)
				}
			}
			fresh := filepath.Join(dir, "new")
			write(fresh)
			check(fresh)
			old := filepath.Join(dir, "old")
			os.WriteFile(old, []byte("x"), 0o600)
			os.Chmod(old, 0o640)
			write(old)
			check(old)
			if fi, _ := os.Stat(old); fi.Mode().Perm() != 0o640 {
				t.Errorf("mode %v not kept", fi.Mode())
			}
			link := filepath.Join(dir, "link")
			os.Symlink("old", link)
			write(link)
			check(old)
			if fi, _ := os.Lstat(link); fi.Mode()&fs.ModeSymlink == 0 {
				t.Error("the link was replaced")
			}
			write("/dev/null")
			if fi, _ := os.Lstat("/dev/null"); fi.Mode()&fs.ModeCharDevice == 0 {
				t.Fatalf("/dev/null is now %v", fi.Mode())
			}
			if out := write("-"); flag == "folded" && out != wantFolded || flag == "pprof" && !strings.HasPrefix(out, "\x1f\x8b") {
				t.Errorf("-: %q", out)
			}
			if m, _ := filepath.Glob(filepath.Join(dir, ".*")); len(m) > 0 {
				t.Errorf("temporary files left: %v", m)
			}
		})
	}
}

// TestNoFileWriteBypassesOutfile: no source of the commands that write files creates,
// renames or opens a file for writing but through package outfile. The exceptions are
// named with their reason.
func TestNoFileWriteBypassesOutfile(t *testing.T) {
	allowed := map[string]string{
		"demobin.go:os.Rename": "the demo's workload built into sdtctl's own cache, no file a user names",
	}
	writes := map[string]bool{"Create": true, "CreateTemp": true, "WriteFile": true, "Rename": true, "OpenFile": true, "Truncate": true, "Link": true, "Symlink": true}
	for _, dir := range []string{".", "../sdtdemo", "../../internal/seal"} {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			for name, f := range pkg.Files {
				ast.Inspect(f, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					if id, ok := sel.X.(*ast.Ident); ok && id.Name == "os" && writes[sel.Sel.Name] {
						key := filepath.Base(name) + ":os." + sel.Sel.Name
						if _, ok := allowed[key]; !ok {
							t.Errorf("%s: os.%s writes a file outside package outfile", fset.Position(sel.Pos()), sel.Sel.Name)
						}
					}
					return true
				})
			}
		}
	}
}
