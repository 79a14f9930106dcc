//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// TestMain doubles as the helper of TestPermission: re-executed as another uid, it
// connects to a socket and prints the outcome.
func TestMain(m *testing.M) {
	if path := os.Getenv("SDTCTL_TEST_CONNECT"); path != "" {
		c, err := net.Dial("unix", path)
		if err != nil {
			fmt.Println("dial:", err)
			os.Exit(0)
		}
		ctlproto.WriteFrame(c, &ctlproto.Request{Op: ctlproto.OpHello, Version: ctlproto.Version})
		b, err := ctlproto.ReadFrame(c)
		if err == nil {
			var r *ctlproto.Response
			if r, err = ctlproto.DecodeResponse(b); err == nil {
				fmt.Printf("%s code=%s: %s\n", r.Kind, r.Code, r.Message)
				os.Exit(0)
			}
		}
		fmt.Println("read:", err)
		os.Exit(0)
	}
	os.Exit(testbin.Main(m))
}

func buildTarget(t *testing.T) string {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the control server runs on linux")
	}
	return testbin.Shared(t, "", runtime.GOARCH, "./testdata/target")
}

// startTarget starts the target with its sockets in a private directory.
func startTarget(t *testing.T) int {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	return startAnother(t)
}

// startAnother starts one more target, its socket beside the others'.
func startAnother(t *testing.T) int {
	return startBin(t, buildTarget(t), os.Stderr)
}

// startBin starts bin, a program of the target's kind (a first line when it is
// ready, then its control socket), its stderr to stderr, and returns its pid.
func startBin(t *testing.T, bin string, stderr io.Writer) int {
	t.Helper()
	cmd := testutil.Command(bin)
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("target did not start")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	waitSocket(t, cmd.Process.Pid)
	return cmd.Process.Pid
}

// waitSocket waits until process pid has bound its control socket, which a gosdt
// program does 20 ms after its init (later on a loaded machine, or under qemu): ps
// and every command that takes -p see it from then on.
func waitSocket(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(ctlproto.SocketPath(pid)); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("pid %d bound no control socket in a minute", pid)
		}
	}
}

func sdtctl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(args, &out, &errb)
	if err != nil {
		t.Logf("sdtctl %s: %v (stderr %s)", strings.Join(args, " "), err, errb.String())
	}
	return out.String(), err
}

func TestEndToEnd(t *testing.T) {
	pid := startTarget(t)
	p := strconv.Itoa(pid)

	out, err := sdtctl(t, "ps")
	if err != nil || !regexp.MustCompile(`(^|\n)`+p+` +target`).MatchString(out) { // columns as wide as the widest pid
		t.Fatalf("ps: %v\n%s", err, out)
	}
	t.Logf("ps:\n%s", out)

	out, err = sdtctl(t, "list", "-p", p, "e2e:::")
	if err != nil || !strings.Contains(out, "e2e:main:main.step:tick") || !strings.Contains(out, "i int, name string") ||
		!strings.Contains(out, "sealed-off") {
		t.Fatalf("list: %v\n%s", err, out)
	}
	t.Logf("list:\n%s", out)

	// trace N events with the right argument values
	out, err = sdtctl(t, "trace", "-p", p, "e2e:::tick", "-c", "20", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var prev = -1
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var rec struct {
			Event *jsonEvent `json:"event"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if rec.Event == nil {
			continue
		}
		e := rec.Event
		n++
		i, _ := strconv.Atoi(fmt.Sprint(e.Args[0].Value))
		if e.Probe != "e2e:main:main.step:tick" || e.Args[0].Name != "i" || e.Args[1].Value != []string{"alpha", "beta"}[i%2] ||
			(prev >= 0 && i != prev+1) {
			t.Fatalf("event %+v after i=%d", e, prev)
		}
		prev = i
	}
	if n != 20 {
		t.Fatalf("%d events, want 20", n)
	}
	// the trace's enable went away with it
	// --json: the snapshot's time as RFC 3339, as it always was (the wire carries ns).
	out, err = sdtctl(t, "stat", "-p", p, "e2e:::tick", "--by", "name", "-d", "300ms", "--json")
	var js struct {
		Pid  int `json:"pid"`
		Stat struct {
			Time time.Time `json:"time"`
			By   string    `json:"by"`
			Rows []struct {
				Key   string `json:"key"`
				Count uint64 `json:"count"`
			} `json:"rows"`
		} `json:"stat"`
	}
	if first, _, _ := strings.Cut(out, "\n"); err != nil || json.Unmarshal([]byte(first), &js) != nil ||
		time.Since(js.Stat.Time) > time.Minute || js.Stat.By != "name" || len(js.Stat.Rows) == 0 {
		t.Fatalf("stat --json: %v\n%s", err, out)
	}
	if out, _ := sdtctl(t, "list", "-p", p, "e2e:::tick"); !strings.Contains(out, " off ") {
		t.Fatalf("after trace, still on:\n%s", out)
	}

	// --stack: the fire's call stack under each event, as ustack() prints it, and in
	// --json as "func file:line"
	out, err = sdtctl(t, "trace", "-p", p, "e2e:::tick", "-c", "2", "--stack")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(out, "\n"); len(lines) < 6 || !strings.Contains(lines[0], "e2e:main:main.step:tick i=") ||
		!strings.HasPrefix(lines[1], "                main.step ") || !strings.Contains(lines[1], "target/main.go:") ||
		!strings.HasPrefix(lines[2], "                main.main ") {
		t.Fatalf("trace --stack:\n%s", out)
	}
	out, err = sdtctl(t, "trace", "-p", p, "e2e:::tick", "-c", "1", "--stack", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		Event *jsonEvent `json:"event"`
	}
	if err := json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &rec); err != nil || rec.Event == nil ||
		len(rec.Event.Stack) < 2 || !strings.HasPrefix(rec.Event.Stack[0], "main.step ") || !strings.HasPrefix(rec.Event.Stack[1], "main.main ") {
		t.Fatalf("trace --stack --json: %v\n%s", err, out)
	}
	// --where: only matching fires are traced; a bad predicate is shown with a caret
	out, err = sdtctl(t, "trace", "-p", p, "e2e:::tick", "-c", "5", "--where", `name == "beta" && i > 3`)
	if err != nil || strings.Count(out, `name="beta"`) != 5 || strings.Contains(out, "alpha") {
		t.Fatalf("trace --where: %v\n%s", err, out)
	}
	_, err = sdtctl(t, "trace", "-p", p, "e2e:::tick", "-c", "5", "--where", `i > 3 && nmae == "beta"`)
	if err == nil || exitCode(err) != exitUsage || !strings.Contains(err.Error(), "col 10") ||
		!strings.Contains(err.Error(), "i > 3 && nmae == \"beta\"\n           ^") {
		t.Fatalf("trace --where with a misspelt argument: %v", err)
	}
	out, err = sdtctl(t, "stat", "-p", p, "e2e:::tick", "--by", "name", "--where", `name == "alpha"`, "-d", "300ms")
	if err != nil || !strings.Contains(out, "alpha") || strings.Contains(out, "beta") {
		t.Fatalf("stat --where: %v\n%s", err, out)
	}
	// arguments by name
	out, err = sdtctl(t, "stat", "-p", p, "e2e:::tick", "--by", "name", "--hist", "i", "-d", "300ms")
	if err != nil || !strings.Contains(out, "alpha") || !strings.Contains(out, "beta") || !strings.Contains(out, "Distribution") {
		t.Fatalf("stat --by name --hist i: %v\n%s", err, out)
	}
	if _, err = sdtctl(t, "stat", "-p", p, "e2e:::tick", "--hist", "latency_ns", "-d", "300ms"); err == nil ||
		!strings.Contains(err.Error(), "i, name") {
		t.Fatalf("stat --hist latency_ns on a probe without it: %v, want an error naming i, name", err)
	}

	out, err = sdtctl(t, "stat", "-p", p, "e2e:::tick", "--by", "arg1", "--hist", "arg0", "-i", "200ms", "-d", "500ms")
	if err != nil || !strings.Contains(out, "alpha") || !strings.Contains(out, "beta") || !strings.Contains(out, "Distribution") {
		t.Fatalf("stat: %v\n%s", err, out)
	}
	if out, _ := sdtctl(t, "list", "-p", p, "e2e:::tick"); !strings.Contains(out, " off ") {
		t.Fatalf("after stat, still on:\n%s", out)
	}

	// enable persists after sdtctl exits; disable switches off
	if out, err := sdtctl(t, "enable", "-p", p, "e2e:::tick"); err != nil || !strings.Contains(out, "enabled 1 site\n") {
		t.Fatalf("enable: %v %s", err, out)
	}
	if out, _ := sdtctl(t, "list", "-p", p, "e2e:::tick"); !strings.Contains(out, "sealed-on") {
		t.Fatalf("after enable:\n%s", out)
	}
	if out, err := sdtctl(t, "disable", "e2e:::tick"); err != nil || !strings.Contains(out, "disabled 1 site\n") {
		t.Fatalf("disable: %v %s", err, out)
	}

	// errors
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"enable", "-p", p, "nosuch:::probe"}, exitNoMatch},
		{[]string{"enable", "-p", p, "a:b:c:d:e"}, exitBadSpec},
		{[]string{"trace", "-p", p, "[x"}, exitBadSpec},
		{[]string{"list", "-p", "999999999"}, exitNoProcess},
		{[]string{"list", "-p", "1"}, exitNotGosdt},
		{[]string{"bogus"}, exitUsage},
	} {
		_, err := sdtctl(t, c.args...)
		if exitCode(err) != c.code {
			t.Errorf("sdtctl %v: exit %d (%v), want %d", c.args, exitCode(err), err, c.code)
		}
	}
}

// TestEnableDuringStream: an enable sent while a stat holds the probe says that the
// sites were already on, and keeps them on after the stat.
func TestEnableDuringStream(t *testing.T) {
	pid := startTarget(t)
	p := strconv.Itoa(pid)
	on := func() bool {
		out, err := sdtctl(t, "list", "-p", p, "e2e:::tick")
		if err != nil {
			t.Fatal(err)
		}
		return strings.Contains(out, "sealed-on")
	}
	stream, err := dial(pid)
	if err != nil {
		t.Fatal(err)
	}
	defer stream.close()
	if err := stream.send(&ctlproto.Request{Op: ctlproto.OpStat, Spec: "e2e:::tick", IntervalMS: 1000}); err != nil {
		t.Fatal(err)
	}
	if r, err := stream.recv(); err != nil || r.Kind != ctlproto.KindStarted {
		t.Fatalf("stat: %+v %v", r, err)
	}
	out, err := sdtctl(t, "enable", "-p", p, "e2e:::tick")
	if err != nil || !strings.Contains(out, "enabled 0 sites; 1 were already on") {
		t.Fatalf("enable during a stat: %v %s", err, out)
	}
	// list names both holders, the stat (this test process is its client) and the enable.
	out, err = sdtctl(t, "list", "-p", p, "e2e:::tick")
	if holders := fmt.Sprintf("sdtctl pid %d stat, sdtctl enable", os.Getpid()); err != nil || !strings.Contains(out, holders) {
		t.Fatalf("list during a stat after an enable: %v, want %q held by:\n%s", err, holders, out)
	}
	stream.close()
	// The server has handled the stat's end once its hold is gone; the enable's stays.
	if held := waitHolders(t, pid, "e2e:::tick", 1); len(held) != 1 || held[0] != "sdtctl enable" || !on() {
		t.Fatalf("after the stat ended: held by %q, on %v; want the enable's hold alone, on", held, on())
	}
	if out, err := sdtctl(t, "disable", "-p", p, "e2e:::tick"); err != nil || !strings.Contains(out, "disabled 1 site\n") {
		t.Fatalf("disable: %v %s", err, out)
	}
	if on() {
		t.Fatal("on after disable")
	}
}

// TestDisconnectCleanup: probes a client enabled go off when it disconnects, unless
// another client still holds them.
func TestDisconnectCleanup(t *testing.T) {
	pid := startTarget(t)
	p := strconv.Itoa(pid)
	state := func() string {
		out, _ := sdtctl(t, "list", "-p", p, "e2e:::tick")
		if strings.Contains(out, "sealed-on") {
			return "on"
		}
		return "off"
	}
	a, err := dial(pid)
	if err != nil {
		t.Fatal(err)
	}
	b, err := dial(pid)
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range []*client{a, b} {
		if _, err := cl.call(&ctlproto.Request{Op: ctlproto.OpEnable, Specs: []string{"e2e:::tick"}}); err != nil {
			t.Fatal(err)
		}
	}
	if state() != "on" {
		t.Fatal("not enabled")
	}
	a.close()
	// The server has handled a's disconnection once one hold is left; b's keeps it on.
	if held := waitHolders(t, pid, "e2e:::tick", 1); len(held) != 1 || state() != "on" {
		t.Fatalf("after one client of two left: held by %q, %s; want one hold, on", held, state())
	}
	// garbage on a third connection changes nothing and closes it
	c, err := net.Dial("unix", ctlproto.SocketPath(pid))
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte{0, 0, 0, 5, 'x', 'y', 'z', 'z', 'y'})
	if b, err := ctlproto.ReadFrame(c); err != nil || !strings.Contains(string(b), "badrequest") {
		t.Fatalf("garbage: %q %v", b, err)
	}
	c.Close()
	b.close()
	// the server notices a closed connection when its read fails: wait for that
	// (seconds, for a loaded CI machine), but not forever
	for deadline := time.Now().Add(10 * time.Second); state() != "off"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("still on 10 s after every client went away")
		}
	}
}

// TestPermission runs a client as uid 65534: refused by the directory's mode, and,
// once the directory is opened up, by the server's SO_PEERCRED check.
func TestPermission(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client as another uid")
	}
	pid := startTarget(t)
	path := ctlproto.SocketPath(pid)
	// a copy of the test binary that uid 65534 may run
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(t.TempDir(), "helper")
	if err := os.WriteFile(exe, self, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(exe); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	try := func() string {
		cmd := testutil.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "SDTCTL_TEST_CONNECT="+path, "SDT_CONTROL=off")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("helper: %v\n%s", err, out)
		}
		return string(out)
	}
	// the test binary must be reachable by uid 65534
	if out := try(); !strings.Contains(out, "permission denied") {
		t.Fatalf("through the 0700 directory: %s", out)
	}
	for d := filepath.Dir(filepath.Dir(path)); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	os.Chmod(filepath.Dir(path), 0o711)
	os.Chmod(path, 0o777)
	out := try()
	if !strings.Contains(out, "code=permission") {
		t.Fatalf("through SO_PEERCRED: %s", out)
	}
	t.Logf("refused: %s", strings.TrimSpace(out))
	if _, err := sdtctl(t, "list", "-p", strconv.Itoa(pid)); err != nil {
		t.Fatalf("root still lists: %v", err)
	}
}

func TestDeadPid(t *testing.T) {
	pid := startTarget(t)
	// kill it: its socket stays behind, stale; ps skips it, -p says so
	p, _ := os.FindProcess(pid)
	p.Kill()
	p.Wait()
	out, err := sdtctl(t, "ps")
	if err != nil || strings.Contains(out, strconv.Itoa(pid)) {
		t.Fatalf("ps shows a dead pid: %v\n%s", err, out)
	}
	if _, err := sdtctl(t, "list", "-p", strconv.Itoa(pid)); exitCode(err) != exitNoProcess {
		t.Fatalf("dead pid: %v", err)
	}
}

func TestListBinary(t *testing.T) {
	bin := buildTarget(t)
	out, err := sdtctl(t, "list", bin)
	want := "e2e:main:main.step:tick" // the name read from the Define call
	if err != nil || !strings.Contains(out, want) || !strings.Contains(out, "main.tick") || !strings.Contains(out, "yes") {
		t.Fatalf("list BINARY: %v, want %q and main.tick, sealable:\n%s", err, want, out)
	}
	t.Logf("%s", out)
	// The site's line is the user's probe statement, as the live list shows it, not
	// the line in sdt of the inlined Probe2 body.
	src, err := os.ReadFile("testdata/target/main.go")
	if err != nil {
		t.Fatal(err)
	}
	line := 1 + strings.Count(string(src[:strings.Index(string(src), "sdt.Probe2(")]), "\n")
	if want := fmt.Sprintf("target/main.go:%d ", line); !strings.Contains(out, want) {
		t.Errorf("list BINARY: want the probe statement's %q:\n%s", want, out)
	}
	// The same without DWARF and symbols: the line comes from the function table's
	// inline tree, which the runtime needs and stripping keeps.
	stripped := filepath.Join(t.TempDir(), "target-stripped")
	if msg, err := exec.Command("go", "build", "-ldflags=-s -w", "-o", stripped, "./testdata/target").CombinedOutput(); err != nil {
		t.Fatalf("building the stripped target: %v\n%s", err, msg)
	}
	if out, err := sdtctl(t, "list", stripped); err != nil || !strings.Contains(out, fmt.Sprintf("target/main.go:%d ", line)) {
		t.Errorf("list STRIPPED: %v, want the probe statement's line %d:\n%s", err, line, out)
	}
	if out, err := sdtctl(t, "list", bin, "nope:::tick"); exitCode(err) != exitNoMatch || strings.Contains(out, "main.step") {
		t.Errorf("list BINARY nope:::tick: %v, want exit %d\n%s", err, exitNoMatch, out)
	}
}

func TestHelp(t *testing.T) {
	out, err := sdtctl(t, "--help")
	if err != nil || !strings.Contains(out, "Exit codes") {
		t.Fatalf("%v %s", err, out)
	}
}

// TestBadInputFirst checks that a malformed spec or a missing file is reported as such,
// before (and whether or not) any gosdt process is looked for.
func TestBadInputFirst(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir()) // no process to find
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"enable", "a:b:c:d:e"}, exitBadSpec},
		{[]string{"disable", "x y"}, exitBadSpec},
		{[]string{"trace", "[x"}, exitBadSpec},
		{[]string{"stat", "a:b:c:d:e"}, exitBadSpec},
		{[]string{"list", "a:b:c:d:e"}, exitBadSpec},
		{[]string{"list", "/no/such/binary"}, exitError},
	} {
		if _, err := sdtctl(t, c.args...); exitCode(err) != c.code {
			t.Errorf("sdtctl %v: %v (exit %d), want exit %d", c.args, err, exitCode(err), c.code)
		}
	}
}

// TestSealCommand: seal -o writes a sealed copy that lists as sealed, --json says what
// was done, a second seal is a no-op, and what cannot be sealed has its exit code.
func TestSealCommand(t *testing.T) {
	bin := buildTarget(t)
	out := filepath.Join(t.TempDir(), "sealed")
	text, err := sdtctl(t, "seal", "-o", out, bin)
	if err != nil || !strings.Contains(text, "sealed 1 of 1 site; USDT: 1 note for 1 probe") {
		t.Fatalf("seal: %v\n%s", err, text)
	}
	if text, err = sdtctl(t, "list", out); err != nil || !strings.Contains(text, "sealed in the file") {
		t.Errorf("list of the sealed binary: %v\n%s", err, text)
	}
	text, err = sdtctl(t, "seal", "--json", out)
	var r struct {
		Already bool `json:"already_sealed"`
		Arch    string
	}
	if err != nil || json.Unmarshal([]byte(text), &r) != nil || !r.Already || r.Arch != runtime.GOARCH {
		t.Errorf("seal --json of a sealed binary: %v %+v\n%s", err, r, text)
	}
	nonGo := filepath.Join(t.TempDir(), "x")
	os.WriteFile(nonGo, []byte("not a binary"), 0o755)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"seal"}, exitUsage},
		{[]string{"seal", "-o", out, bin, bin}, exitUsage},
		{[]string{"seal", nonGo}, exitError},
		{[]string{"seal", "/no/such/binary"}, exitError},
		{[]string{"toolexec"}, exitUsage},
	} {
		if _, err := sdtctl(t, c.args...); exitCode(err) != c.code {
			t.Errorf("sdtctl %v: %v (exit %d), want exit %d", c.args, err, exitCode(err), c.code)
		}
	}
}

// TestLinksNoRuntime: sdtctl links none of gosdt's in-process runtime (package sdt,
// its control server, the patcher), so its start runs no discovery and binds no
// socket by construction; the demo's workload is another program.
func TestLinksNoRuntime(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		switch pkg {
		case "github.com/gosdt/gosdt/sdt", "github.com/gosdt/gosdt/sdt/control", "github.com/gosdt/gosdt/sdt/internal/consume",
			"github.com/gosdt/gosdt/sdt/internal/ctlserver", "github.com/gosdt/gosdt/sdt/internal/registry", "github.com/gosdt/gosdt/patch":
			t.Errorf("sdtctl links %s", pkg)
		}
	}
}

// TestServesNoSocket: sdtctl serves no control socket while it traces, and the demo
// workload it traces (sdtdemo workload, found beside sdtctl) does.
func TestServesNoSocket(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the control server runs on linux")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "sdtctl")
	for pkg, out := range map[string]string{".": bin, "../sdtdemo": filepath.Join(dir, "sdtdemo")} {
		if msg, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", pkg, err, msg)
		}
	}
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	work := testutil.Command(filepath.Join(dir, "sdtdemo"), "workload", "-w", "1")
	stdin, _ := work.StdinPipe()
	out, _ := work.StdoutPipe()
	if err := work.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); work.Wait() }()
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "ready ") {
		t.Fatal("the workload did not start")
	}
	go func() {
		for sc.Scan() {
		}
	}()
	wpid := work.Process.Pid
	var traceOut bytes.Buffer
	tr := testutil.Command(bin, "trace", "-p", strconv.Itoa(wpid), "demo:::request", "-d", "500ms")
	tr.Stdout = &traceOut
	if err := tr.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- tr.Wait() }()
	for running := true; running; {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("sdtctl trace: %v", err)
			}
			running = false
		case <-time.After(2 * time.Millisecond):
		}
		if _, err := os.Stat(ctlproto.SocketPath(tr.Process.Pid)); err == nil {
			t.Fatal("sdtctl trace serves a control socket")
		}
	}
	if _, err := os.Stat(ctlproto.SocketPath(wpid)); err != nil {
		t.Fatalf("the demo workload serves no socket: %v", err)
	}
	if !strings.Contains(traceOut.String(), "demo:main:main.serveDemo:request") {
		t.Fatalf("trace printed no event:\n%.500s", traceOut.String())
	}
}

// TestStreamsLeaveNoGoroutine: trace and stat streams that end on their own (a count,
// a duration) leave no goroutine behind in sdtctl, whose commands also run in-process
// (a long-lived caller would accumulate them).
func TestStreamsLeaveNoGoroutine(t *testing.T) {
	p := strconv.Itoa(startTarget(t))
	// Warm up what starts goroutines once for good (the signal package's loop).
	if _, err := sdtctl(t, "trace", "-p", p, "e2e:::tick", "-c", "1"); err != nil {
		t.Fatal(err)
	}
	before := runtime.NumGoroutine()
	for range 5 {
		if _, err := sdtctl(t, "trace", "-p", p, "e2e:::tick", "-c", "3"); err != nil {
			t.Fatal(err)
		}
		if _, err := sdtctl(t, "stat", "-p", p, "e2e:::tick", "-d", "150ms"); err != nil {
			t.Fatal(err)
		}
	}
	var after int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if after = runtime.NumGoroutine(); after <= before {
			return
		}
	}
	buf := make([]byte, 1<<20)
	t.Fatalf("%d goroutines before 10 streams, %d after:\n%s", before, after, buf[:runtime.Stack(buf, true)])
}

// waitHolders waits until the site of the probe spec matches in pid has n holders,
// and returns them (its holders when the wait gives up after 30 s).
func waitHolders(t *testing.T, pid int, spec string, n int) []string {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		out, err := sdtctl(t, "list", "-p", strconv.Itoa(pid), spec, "--json")
		var m struct{ Probe ctlproto.Probe }
		if err != nil || json.Unmarshal([]byte(strings.TrimSpace(out)), &m) != nil || len(m.Probe.Sites) != 1 {
			t.Fatalf("list %s --json: %v, want one probe of one site:\n%s", spec, err, out)
		}
		held := m.Probe.Sites[0].HeldBy
		if len(held) == n || time.Now().After(deadline) {
			return held
		}
	}
}
