//go:build linux

package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/testutil"
)

// commands is every subcommand sdtctl has.
var commands = []string{"ps", "list", "enable", "disable", "trace", "stat", "export", "demo", "seal", "toolexec"}

// helpFlag is a flag as --help lists it: "  -name" or "  -name VALUE".
var helpFlag = regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)(?: (\S+))?$`)

// flagSample is a value a flag whose value --help calls what accepts.
func flagSample(what string) string {
	switch what {
	case "PID", "N", "int":
		return "1"
	case "DURATION", "INTERVAL", "PHASE", "duration":
		return "1s"
	case "BYTES":
		return "1m"
	}
	return "x"
}

// TestHelpEverywhere: every subcommand's --help exits 0 with its usage on stdout, and
// every flag it lists (and every flag the main usage gives it) is one its parser
// takes; a flag it does not take is a usage error (exit 2), said once.
func TestHelpEverywhere(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		var out, errb bytes.Buffer
		if err := run(args, &out, &errb); exitCode(err) != exitOK || !strings.Contains(out.String(), "Exit codes") {
			t.Errorf("sdtctl %v: %v (exit %d), stdout %.80q", args, err, exitCode(err), out.String())
		}
	}
	rules := filepath.Join(t.TempDir(), "r.rules")
	os.WriteFile(rules, []byte("example.com/a.F\n"), 0o644)
	for _, cmd := range commands {
		var out, errb bytes.Buffer
		err := run([]string{cmd, "--help"}, &out, &errb)
		help := out.String()
		if exitCode(err) != exitOK || !strings.HasPrefix(help, "usage: ") || errb.Len() > 0 {
			t.Errorf("%s --help: %v (exit %d), stdout %q, stderr %q", cmd, err, exitCode(err), help, errb.String())
			continue
		}
		flags := helpFlag.FindAllStringSubmatch(help, -1)
		if len(flags) == 0 {
			t.Errorf("%s --help lists no flag:\n%s", cmd, help)
		}
		listed := map[string]bool{}
		for _, f := range flags {
			listed[f[1]] = true
			args := []string{cmd, "-" + f[1]}
			if f[2] != "" {
				args = append(args, flagSample(f[2]))
			}
			args = append(args, "--help")
			if cmd == "toolexec" { // its flag comes first, then the tool: run one
				args = []string{cmd, "-" + f[1], rules, "true"}
			}
			if err := run(args, &out, &errb); exitCode(err) != exitOK {
				t.Errorf("%s --help lists -%s, but sdtctl %s: %v (exit %d)", cmd, f[1], strings.Join(args, " "), err, exitCode(err))
			}
		}
		// the main usage's synopsis of the command names only flags it has
		for _, m := range regexp.MustCompile(`(?:^|[\s\[|])--?([a-z][a-z-]*)`).FindAllStringSubmatch(synopsis(cmd), -1) {
			if !listed[m[1]] {
				t.Errorf("sdtctl --help gives %s the flag %s, which %s --help does not list", cmd, m[0], cmd)
			}
		}
		if cmd == "toolexec" {
			continue
		}
		out.Reset()
		errb.Reset()
		err = run([]string{cmd, "--no-such-flag"}, &out, &errb)
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "no-such-flag") || errb.Len() > 0 {
			t.Errorf("%s --no-such-flag: %v (exit %d), stderr %q: want exit 2, said once (by main)", cmd, err, exitCode(err), errb.String())
		}
	}
	if _, err := sdtctl(t, "demo", "--json"); exitCode(err) != exitUsage {
		t.Errorf("demo --json: %v: want a usage error (sdtctl --help says demo takes no --json)", err)
	}
	if !strings.Contains(usage, "but demo and toolexec takes --json") {
		t.Errorf("the usage does not say which commands take --json")
	}
}

// TestMessagesOnce: a bad flag value is said once, with the usage exit code: the
// flag package's own message and usage are not printed beside sdtctl's.
func TestMessagesOnce(t *testing.T) {
	bin := sdtctlBinary(t)
	for _, args := range [][]string{{"enable", "-p", "abc", "x:::"}, {"list", "-p", "abc"}, {"trace", "-c", "many", "x:::"}} {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || len(lines) != 1 {
			t.Errorf("sdtctl %v: %v, stderr:\n%s\nwant exit %d and one line", args, err, stderr.String(), exitUsage)
		}
	}
}

// TestBadArguments: what is not a process, a binary, a size or a bucket shape is
// refused, saying what was given and what is wanted.
func TestBadArguments(t *testing.T) {
	startTarget(t) // one process: list -p 0 would list it
	notELF := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notELF, []byte("impossible: text\n"), 0o644)
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"list", "-p", "0"}, exitUsage, "-p 0: want a process id above 0"},
		{[]string{"enable", "-p", "-3", "x:::"}, exitUsage, "-p -3: want a process id above 0"},
		{[]string{"list", "/dev/null"}, exitUsage, "/dev/null is a character device, not a binary"},
		{[]string{"list", t.TempDir()}, exitUsage, "is a directory, not a binary"},
		{[]string{"list", notELF}, exitError, notELF + `: not an ELF executable (it begins "impo")`},
		{[]string{"seal", "-o", filepath.Join(t.TempDir(), "out"), notELF}, exitError, notELF + ": not an ELF executable"},
		{[]string{"trace", "x:::", "--bufsize", "100g"}, exitUsage, `--bufsize: "100g": want a size of 1 byte to 1g`},
		{[]string{"export", "x:::", "--bufsize", "3x"}, exitUsage, `"3x": want a size`},
		{[]string{"export", "-p", "1", "x:::", "--", "/bin/true"}, exitUsage, "export: -p or -n, or -- CMD: one of them"},
		{[]string{"export", "-n", "app", "x:::", "--", "/bin/true"}, exitUsage, "export: -p or -n, or -- CMD: one of them"},
		{[]string{"export", "-n", "app", "x:::", "--detach"}, exitUsage, "export: --detach is for a command started with -- CMD"},
		{[]string{"export", "x:::", "--"}, exitUsage, "export: want a command after --"},
		{[]string{"export", "x:::", "--", "/nonexistent-sdtctl-cmd"}, exitStart, "export: cannot start /nonexistent-sdtctl-cmd"},
		{[]string{"stat", "x:::", "--hist", "arg0", "--linear", "0,100,1,extra"}, exitUsage, `--linear "0,100,1,extra": want LOW,HIGH,STEP`},
		{[]string{"stat", "x:::", "--hist", "arg0", "--linear", "0,100"}, exitUsage, `--linear "0,100"`},
	} {
		_, err := sdtctl(t, c.args...)
		if exitCode(err) != c.code || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("sdtctl %v: %v (exit %d), want exit %d saying %q", c.args, err, exitCode(err), c.code, c.msg)
		}
	}
	// a rules pattern no Go function has is refused as such
	bad := filepath.Join(t.TempDir(), "bad.rules")
	for _, c := range []struct{ rule, msg string }{
		{"example.com/a.[a-", `'[' in "[a-": a function or type is a Go name, where * is the only wildcard`},
		{"example.com/a.F\x00", `byte 15 is '\x00'`},
		{"example.com/a.(**Server).ServeHTTP", "a method's receiver is (*Type), with one *"},
	} {
		os.WriteFile(bad, []byte(c.rule+"\n"), 0o644)
		_, err := sdtctl(t, "toolexec", "-rules", bad, "true")
		if exitCode(err) != exitUsage || err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("toolexec -rules with %q: %v, want a usage error saying %q", c.rule, err, c.msg)
		}
	}
}

// TestPsOtherUsers: as root, ps lists the gosdt processes of other users, which -p
// controls (their servers let root in), and list -p reaches them.
func TestPsOtherUsers(t *testing.T) {
	testutil.NeedRoot(t)
	bin := filepath.Join(t.TempDir(), "target")
	for d := filepath.Dir(bin); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755) // uid 65534 runs it
	}
	b, err := os.ReadFile(buildTarget(t))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bin, b, 0o755)
	cmd := testutil.Command(bin)
	cmd.Env = append(withoutEnv("XDG_RUNTIME_DIR"), "TMPDIR=/tmp") // its socket in /tmp/gosdt-65534
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}, Pdeathsig: syscall.SIGKILL}
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	go io.Copy(io.Discard, out)
	pid := cmd.Process.Pid
	sock := filepath.Join("/tmp/gosdt-65534", strconv.Itoa(pid)+".sock")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(sock); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the target of uid 65534 bound no socket %s in 30 s", sock)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // root's own: none there
	ps, err := sdtctl(t, "ps", "--json")
	if err != nil || !strings.Contains(ps, `"pid":`+strconv.Itoa(pid)+`,`) {
		t.Errorf("ps as root: %v, want uid 65534's pid %d:\n%s", err, pid, ps)
	}
	if out, err := sdtctl(t, "list", "-p", strconv.Itoa(pid), "e2e:::tick"); err != nil || !strings.Contains(out, "e2e:main:main.step:tick") {
		t.Errorf("list -p %d as root: %v\n%s", pid, err, out)
	}
}
