//go:build linux

package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/testutil"
)

// The test binary doubles as sdtctl run by another uid: SDTCTL_NS_RUN holds the
// arguments; it prints the output and the exit code.
func init() {
	args := os.Getenv("SDTCTL_NS_RUN")
	if args == "" {
		return
	}
	err := run(strings.Fields(args), os.Stdout, os.Stdout)
	if err != nil {
		fmt.Println("sdtctl:", err)
	}
	fmt.Printf("exit=%d\n", exitCode(err))
	os.Exit(0)
}

// The uids of the tests that run as other users: the owner of a container and a
// stranger to it.
const owner, stranger = 61000, 61001

// container runs the target in new user (its uid mapped to root), PID and mount
// namespaces with a tmpfs of its own on /tmp, as uid (-1: ours), with env added;
// it returns the target's pid in our namespace. The target is pid 1 in its own, and
// its control socket is visible only through /proc/PID/root.
func container(t *testing.T, uid int, env ...string) int {
	t.Helper()
	unshare := testutil.NeedCommand(t, "unshare")
	dir := shared(t)
	bin := filepath.Join(dir, "target")
	copyFile(t, buildTarget(t), bin)
	run := "/tmp/target"
	if emu := testutil.Emulator(); emu != "" {
		run = emu + " /tmp/target"
	}
	// The binary is opened before /tmp is covered, and copied into the new /tmp.
	script := `exec 3<"$0"; mount -t tmpfs tmpfs /tmp && cat <&3 >/tmp/target && exec 3<&- && chmod 755 /tmp/target &&
if [ -n "$XDG_RUNTIME_DIR" ]; then mkdir -p "$XDG_RUNTIME_DIR"; fi && exec ` + run
	cmd := exec.Command(unshare, "--user", "--map-root-user", "--pid", "--mount", "--fork", "--kill-child", "--mount-proc", "sh", "-c", script, bin)
	cmd.Env = append(withoutEnv("XDG_RUNTIME_DIR", "TMPDIR"), env...)
	if uid >= 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
	}
	cmd.WaitDelay = 5 * time.Second
	out, _ := cmd.StdoutPipe()
	var errb strings.Builder
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() }) // --kill-child: the target dies with unshare
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		cmd.Wait()
		testutil.Skip(t, capability(uid), "unshare did not start the target: "+strings.TrimSpace(errb.String()))
	}
	go io.Copy(io.Discard, out)
	// unshare --fork: the target (sh, then exec) is unshare's only child.
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid))
	f := strings.Fields(string(b))
	if err != nil || len(f) != 1 {
		t.Fatalf("children of unshare: %q %v", b, err)
	}
	pid, _ := strconv.Atoi(f[0])
	return pid
}

// capability names what a container started as uid needs, for SDT_REQUIRE.
func capability(uid int) string {
	if uid >= 0 && os.Getuid() == 0 {
		return "userns-unprivileged"
	}
	return "userns"
}

// needUserns skips unless uid (-1: ours) may make user namespaces, naming the
// setting that forbids it.
func needUserns(t *testing.T, uid int) {
	t.Helper()
	what := capability(uid)
	if v := sysctl("user/max_user_namespaces"); v == "0" {
		testutil.Skip(t, what, "user namespaces are disabled (sysctl user.max_user_namespaces=0)")
	}
	if uid < 0 && os.Getuid() == 0 {
		return
	}
	if v := sysctl("kernel/unprivileged_userns_clone"); v == "0" {
		testutil.Skip(t, what, "unprivileged user namespaces are disabled (sysctl kernel.unprivileged_userns_clone=0)")
	}
	if v := sysctl("kernel/apparmor_restrict_unprivileged_userns"); v == "1" {
		testutil.Skip(t, what, "AppArmor restricts unprivileged user namespaces (sysctl kernel.apparmor_restrict_unprivileged_userns=1)")
	}
}

func sysctl(name string) string {
	b, _ := os.ReadFile("/proc/sys/" + name)
	return strings.TrimSpace(string(b))
}

// shared is a directory other uids may read.
func shared(t *testing.T) string {
	dir, err := os.MkdirTemp("", "sdtctl-ns")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func copyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o755)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func withoutEnv(names ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(names, k) {
			env = append(env, kv)
		}
	}
	return env
}

// ready waits until sdtctl reaches pid.
func ready(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if cl, err := dial(pid); err == nil {
			cl.close()
			return
		} else if time.Now().After(deadline) {
			t.Fatalf("pid %d not reachable in 10 s: %v", pid, err)
		}
	}
}

// TestNamespaces reaches a target in a container of ours, with its socket in the
// default directory (in its own /tmp) or in a $XDG_RUNTIME_DIR whose path under
// /proc/PID/root is longer than a socket address holds.
func TestNamespaces(t *testing.T) {
	needUserns(t, -1)
	long := "/tmp/" + strings.Repeat("d", 80) // its socket: 99 bytes, 114 under /proc/PID/root
	for _, tc := range []struct {
		name, env, dir string
	}{
		{"tmp", "", "/tmp/gosdt-0"},
		{"long", "XDG_RUNTIME_DIR=" + long, long + "/gosdt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var env []string
			if tc.env != "" {
				env = append(env, tc.env)
			}
			pid := container(t, -1, env...)
			p := strconv.Itoa(pid)
			ready(t, pid)
			hostPath := fmt.Sprintf("/proc/%d/root%s/1.sock", pid, tc.dir)
			if tc.name == "long" && len(hostPath) <= len(syscall.RawSockaddrUnix{}.Path) {
				t.Fatalf("%s: %d bytes, not longer than sun_path", hostPath, len(hostPath))
			}
			if _, err := os.Lstat(hostPath); err != nil {
				t.Fatalf("the target's socket: %v", err)
			}
			if _, err := os.Lstat(tc.dir + "/1.sock"); err == nil && tc.dir != ctlproto.Dir() {
				t.Fatalf("%s/1.sock is visible from here: the target's /tmp is not its own", tc.dir)
			}

			out, err := sdtctl(t, "list", "-p", p)
			if head := "pid " + p + " (target, pid 1 in its namespace): 1 probe\n"; err != nil || !strings.Contains(out, head) {
				t.Fatalf("list -p: %v, want %q:\n%s", err, head, out)
			}
			// without -p: found by its host pid, once
			out, err = sdtctl(t, "ps")
			// the columns are as wide as other processes' pids make them
			psLine := regexp.MustCompile(`\n` + p + ` +target, pid 1 in its namespace`)
			if n := len(psLine.FindAllString(out, -1)); err != nil || n != 1 {
				t.Fatalf("ps lists it %d times: %v\n%s", n, err, out)
			}
			out, err = sdtctl(t, "list")
			if err != nil || strings.Count(out, "pid "+p+" (") != 1 {
				t.Fatalf("list: %v\n%s", err, out)
			}
			if out, err = sdtctl(t, "enable", "-p", p, "e2e:::tick"); err != nil || !strings.Contains(out, "enabled 1 site\n") {
				t.Fatalf("enable: %v\n%s", err, out)
			}
			out, err = sdtctl(t, "trace", "-p", p, "-c", "3", "e2e:::tick")
			if err != nil || strings.Count(out, "e2e:main:main.step:tick i=") != 3 {
				t.Fatalf("trace: %v\n%s", err, out)
			}
		})
	}
}

// TestNamespaceOwners reaches a container that another user made (its root is
// that user): its owner and root may, another user may not; root is let in by the
// server's rule for uids it cannot map, which holds while the socket's directory
// is 0700.
func TestNamespaceOwners(t *testing.T) {
	testutil.NeedRoot(t)
	needUserns(t, owner)
	pid := container(t, owner)
	p := strconv.Itoa(pid)
	ready(t, pid) // as root: the server maps root of the host to no uid of its own

	dir := shared(t)
	self := filepath.Join(dir, "sdtctl.test")
	copyFile(t, os.Args[0], self)
	as := func(uid int, args string) string {
		cmd := testutil.Command(self, "-test.run=^$")
		cmd.Env = append(os.Environ(), "SDTCTL_NS_RUN="+args, "SDT_CONTROL=off")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("sdtctl %s as uid %d: %v\n%s", args, uid, err, out)
		}
		return string(out)
	}
	if out := as(owner, "list -p "+p); !strings.Contains(out, "pid "+p+" (target, pid 1 in its namespace)") || !strings.Contains(out, "exit=0") {
		t.Fatalf("the owner: %s", out)
	}
	if out := as(owner, "ps"); !regexp.MustCompile(`\n` + p + ` +target`).MatchString(out) {
		t.Fatalf("the owner's ps: %s", out)
	}
	out := as(stranger, "list -p "+p)
	if !strings.Contains(out, fmt.Sprintf("exit=%d", exitPermission)) || !strings.Contains(out, "not reachable") || !strings.Contains(out, "owned by uid 61000") {
		t.Fatalf("another user: %s", out)
	}
	t.Logf("refused: %s", strings.TrimSpace(out))
	if out := as(stranger, "ps"); strings.Contains(out, "\n"+p+" ") {
		t.Fatalf("another user's ps lists it: %s", out)
	}

	// Root outside: let in while the directory is private, refused once it is not.
	sockDir := fmt.Sprintf("/proc/%d/root/tmp/gosdt-0", pid)
	if out, err := sdtctl(t, "list", "-p", p); err != nil || !strings.Contains(out, ": 1 probe\n") {
		t.Fatalf("root: %v\n%s", err, out)
	}
	if err := os.Chmod(sockDir, 0o711); err != nil {
		t.Fatal(err)
	}
	_, err := sdtctl(t, "list", "-p", p)
	os.Chmod(sockDir, 0o700)
	if exitCode(err) != exitPermission || !strings.Contains(err.Error(), "may not control") {
		t.Fatalf("root through a directory opened up: %v", err)
	}
}

// TestPeerPid: a socket in our directory named by a pid in another PID namespace is
// not taken for the process that has that pid here.
func TestPeerPid(t *testing.T) {
	pid := startTarget(t)
	self := os.Getpid()
	// our own pid names no gosdt process (sdtctl serves no socket): link the target's
	// socket there, as a process in a child PID namespace whose pid is ours would have it
	alias := ctlproto.SocketPath(self)
	if err := os.Link(ctlproto.SocketPath(pid), alias); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(alias)
	_, err := dial(self)
	if exitCode(err) != exitNotGosdt || !strings.Contains(err.Error(), "served by pid "+strconv.Itoa(pid)) {
		t.Fatalf("dial our own pid: %v", err)
	}
	out, err := sdtctl(t, "ps")
	if err != nil || len(regexp.MustCompile(`\n`+strconv.Itoa(pid)+` +target`).FindAllString(out, -1)) != 1 || strings.Contains(out, "\n"+strconv.Itoa(self)+" ") {
		t.Fatalf("ps: %v\n%s", err, out)
	}
}
