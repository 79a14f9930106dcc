package control_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/testutil"
	"github.com/gosdt/gosdt/sdt/control"
	"golang.org/x/sys/unix"
)

// Tests of what the control server lets a client do to its process, each in a
// child process (this test binary, TestMain's children) under a limit of its own.

// children are TestMain's child modes (CONTROL_TEST_CHILD), besides TestStart's.
var children = map[string]func() error{
	"nofile": childNofile,
	"memory": childMemory,
}

// childNofile serves the control socket with at most 64 descriptors, and does its
// own work meanwhile, as a service would: connections to a listener of its own, a
// file opened and closed, in a loop until its stdin closes. It reports how its work
// went on stdout ("work OK FAILED"), and the first failure.
func childNofile() error {
	control.Stop()
	if err := unix.Setrlimit(unix.RLIMIT_NOFILE, &unix.Rlimit{Cur: 64, Max: 64}); err != nil {
		return err
	}
	if err := control.Serve(); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				time.Sleep(time.Millisecond)
				continue
			}
			// A byte back, by hand: io.Copy would splice through pipes from a pool
			// that the race detector's build drops, leaving them to finalizers.
			var b [1]byte
			c.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(b[:]); err == nil {
				c.Write(b[:])
			}
			c.Close()
		}
	}()
	work := func() error {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		var b [1]byte
		if _, err := c.Write([]byte{7}); err != nil {
			return err
		}
		if _, err := io.ReadFull(c, b[:]); err != nil {
			return err
		}
		f, err := os.Open("/proc/self/stat")
		if err != nil {
			return err
		}
		return f.Close()
	}
	fmt.Printf("ready %s\n", control.Socket())
	stop := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(stop) }()
	ok, failed := 0, 0
	var first error
	for round := 0; ; round++ {
		select {
		case <-stop:
			fmt.Printf("work %d %d %v\n", ok, failed, first)
			return nil
		default:
		}
		if err := work(); err != nil {
			failed++
			if first == nil {
				first = err
			}
		} else {
			ok++
		}
		if round%10 == 0 {
			fmt.Printf("work %d %d\n", ok, failed)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// childMemory serves the control socket and fires accttest:::fire from a goroutine
// per P until its stdin closes, then says "alive". CONTROL_TEST_AS, a size, limits
// its address space (RLIMIT_AS) to what it has mapped plus that.
func childMemory() error {
	if v := os.Getenv("CONTROL_TEST_AS"); v != "" {
		extra, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return err
		}
		vm, err := statusKB(os.Getpid(), "VmSize:")
		if err != nil {
			return err
		}
		if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: vm<<10 + extra, Max: vm<<10 + extra}); err != nil {
			return err
		}
		// A buffer the limit has no room for: an error, where make was fatal.
		fmt.Printf("buffer %d: %v\n", extra+extra/2, control.TryBuffer(int(extra+extra/2)))
	}
	if err := control.Serve(); err != nil {
		return err
	}
	for range runtime.GOMAXPROCS(0) {
		go func() {
			for i := 0; ; i++ {
				acctSite(i, "abcdefgh")
				if i%64 == 0 {
					time.Sleep(time.Millisecond)
				}
			}
		}()
	}
	fmt.Printf("ready %s\n", control.Socket())
	io.Copy(io.Discard, os.Stdin)
	fmt.Println("alive")
	return nil
}

// statusKB reads a "Name: N kB" line of /proc/PID/status.
func statusKB(pid int, name string) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == name {
			return strconv.ParseUint(f[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", name, pid)
}

// child is a child process of this test binary in one of children's modes.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr bytes.Buffer
	socket string
	mapped string // the memory child's try of a buffer over its limit
}

func startChild(t *testing.T, mode string, env ...string) *child {
	t.Helper()
	ch := &child{t: t, cmd: testutil.Command(os.Args[0], "-test.run=^$")}
	ch.cmd.Env = append(append(os.Environ(), "CONTROL_TEST_CHILD="+mode, "XDG_RUNTIME_DIR="+t.TempDir()), env...)
	ch.cmd.Stderr = &ch.stderr
	var err error
	if ch.stdin, err = ch.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := ch.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.cmd.Process.Kill(); ch.cmd.Wait() })
	ch.lines = bufio.NewScanner(out)
	line := ch.line()
	if strings.HasPrefix(line, "buffer ") {
		ch.mapped, line = line, ch.line()
	}
	path, ok := strings.CutPrefix(line, "ready ")
	if !ok {
		t.Fatalf("child %s: %q; stderr:\n%s", mode, line, ch.stderr.String())
	}
	ch.socket = path
	return ch
}

// line is the child's next line of output.
func (ch *child) line() string {
	ch.t.Helper()
	if !ch.lines.Scan() {
		ch.cmd.Wait()
		ch.t.Fatalf("child ended (%v); stderr:\n%s", ch.cmd.ProcessState, ch.stderr.String())
	}
	return ch.lines.Text()
}

// end closes the child's stdin and returns its last line.
func (ch *child) end() string {
	ch.t.Helper()
	ch.stdin.Close()
	last := ""
	for ch.lines.Scan() {
		last = ch.lines.Text()
	}
	if err := ch.cmd.Wait(); err != nil {
		ch.t.Fatalf("child: %v; stderr:\n%s", err, ch.stderr.String())
	}
	return last
}

// work reads the child's work reports until ok has grown by more, and returns the
// counts.
func (ch *child) work(more int) (ok, failed int) {
	ch.t.Helper()
	from := -1
	for {
		var line string
		for line = ch.line(); !strings.HasPrefix(line, "work "); line = ch.line() {
		}
		if _, err := fmt.Sscanf(line, "work %d %d", &ok, &failed); err != nil {
			ch.t.Fatalf("child: %q", line)
		}
		if from < 0 {
			from = ok
		}
		if ok-from >= more {
			return ok, failed
		}
	}
}

// dialHello connects to a control socket and says hello: the reply, or the error
// that ended the connection first.
func dialHello(path string) (*ctlproto.Response, net.Conn, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	// As sdtctl does; a refused connection may be closed before the hello is
	// written, and still carries its answer.
	ctlproto.WriteFrame(c, &ctlproto.Request{Op: ctlproto.OpHello, Version: ctlproto.Version})
	b, err := ctlproto.ReadFrame(c)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	r, err := ctlproto.DecodeResponse(b)
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	return r, c, nil
}

// TestControlFlood: a process with 64 descriptors, flooded by 200 control
// connections that say nothing, serves a quarter of its limit of them and refuses
// the rest with a busy error; its own work (connections to a listener of its own,
// files) goes on without a failure; a client that comes during the flood is told
// busy, and gets in once the flood has gone. Before the limit, the flood took every
// descriptor and the process's own accepts and opens failed.
func TestControlFlood(t *testing.T) {
	if testing.Short() && testutil.Emulated() {
		t.Skip("slow under an emulator")
	}
	ch := startChild(t, "nofile")
	ch.work(10)

	const flood = 200
	conns := make([]net.Conn, 0, flood)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for deadline := time.Now().Add(10 * time.Second); len(conns) < flood; {
		c, err := net.Dial("unix", ch.socket)
		if err != nil { // the backlog is full: the server is still answering, or stuck
			if time.Now().After(deadline) {
				t.Errorf("%d connections made in 10 s, then: %v", len(conns), err)
				break
			}
			time.Sleep(10 * time.Millisecond)
			continue
		}
		conns = append(conns, c)
	}
	// Each connection is refused busy at once, or served, waiting for its hello.
	var mu sync.Mutex
	busy, served := 0, 0
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			b, err := ctlproto.ReadFrame(c)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if ne, ok := err.(net.Error); ok && ne.Timeout() {
					served++
				} else {
					t.Errorf("flood connection: %v", err)
				}
				return
			}
			if r, err := ctlproto.DecodeResponse(b); err != nil || r.Code != ctlproto.CodeBusy {
				t.Errorf("flood connection told %+v, %v; want busy", r, err)
				return
			}
			busy++
		}()
	}
	wg.Wait()
	t.Logf("%d connections: %d served, %d refused busy", len(conns), served, busy)
	if served > 16 || served+busy != len(conns) {
		t.Errorf("%d served and %d refused of %d connections; want at most 16 (a quarter of 64 descriptors) served", served, busy, len(conns))
	}

	r, c, err := dialHello(ch.socket)
	if err != nil || r.Kind != ctlproto.KindError || r.Code != ctlproto.CodeBusy || !strings.Contains(r.Message, "try again") {
		t.Errorf("a client during the flood: %+v, %v; want a busy error", r, err)
	}
	if c != nil {
		c.Close()
	}
	if ok, failed := ch.work(20); failed > 0 {
		t.Errorf("the process's own work during the flood: %d done, %d failed", ok, failed)
	}

	for _, c := range conns {
		c.Close()
	}
	conns = conns[:0]
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, c, err := dialHello(ch.socket)
		if c != nil {
			c.Close()
		}
		if err == nil && r.Kind == ctlproto.KindHello {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the flood went: %+v, %v", r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var ok, failed int
	var first string
	last := ch.end()
	fmt.Sscanf(last, "work %d %d", &ok, &failed)
	if _, f, found := strings.Cut(strings.TrimPrefix(last, "work "), " "); found {
		_, first, _ = strings.Cut(f, " ")
	}
	if ok == 0 || failed > 0 {
		t.Fatalf("the process's own work: %d done, %d failed (first: %s)", ok, failed, first)
	}
	if !strings.Contains(ch.stderr.String(), "refusing sdtctl connections") {
		t.Errorf("the process did not say it refused connections; stderr:\n%s", ch.stderr.String())
	}
}

// traceOnce runs one trace over the control socket at path: until its end, or its
// refusal (the error reply).
func traceOnce(t *testing.T, path string, q *ctlproto.Request) (started, end *ctlproto.Response) {
	t.Helper()
	r, c, err := dialHello(path)
	if err != nil || r.Kind != ctlproto.KindHello {
		t.Fatalf("hello: %+v, %v", r, err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	if err := ctlproto.WriteFrame(c, q); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := ctlproto.ReadFrame(c)
		if err != nil {
			t.Fatalf("trace %+v: %v", q, err)
		}
		r, err := ctlproto.DecodeResponse(b)
		if err != nil {
			t.Fatal(err)
		}
		switch r.Kind {
		case ctlproto.KindStarted:
			started = r
		case ctlproto.KindEnd:
			return started, r
		case ctlproto.KindError:
			return nil, r
		}
	}
}

// TestTraceMemoryLimit: a process with 8 Ps under an address-space limit (ulimit -v)
// 1 GiB above what it has mapped survives traces of any buffer size: those that
// do not fit are refused, with the figure asked for and the limit, and one that
// fits runs. Its own budget is raised out of the way, so that only its limit can
// stop them. With its default budget, a 1 GiB buffer is refused naming the budget
// and how to change it. Before the budget, the first trace's make killed the
// process (fatal error: out of memory).
func TestTraceMemoryLimit(t *testing.T) {
	needSwitchable(t, "accttest:::fire")
	if testutil.Emulated() {
		t.Skip("under an emulator: its address-space limit is the emulator's, whose own mappings are not the program's")
	}
	ch := startChild(t, "memory", "GOMAXPROCS=8", "CONTROL_TEST_AS="+strconv.Itoa(1<<30), "SDT_MEMORY=64g", "SDT_MEMORY_TRACE=64g")
	if want := fmt.Sprintf("buffer %d: mmap: cannot allocate memory", 3<<29); ch.mapped != want {
		t.Errorf("a buffer over the address-space limit: %q, want %q", ch.mapped, want)
	}
	for _, size := range []int{1 << 30, 256 << 20, 128 << 20} {
		started, r := traceOnce(t, ch.socket, &ctlproto.Request{Op: ctlproto.OpTrace, Spec: "accttest:::fire", BufSize: size, DurationMS: 100})
		if started != nil || r.Code != ctlproto.CodeBudget || !strings.Contains(r.Message, "ulimit -v") {
			t.Errorf("a trace of 8 buffers of %d bytes: %+v; want refused for the address-space limit", size, r)
		}
		t.Logf("%d bytes: %s", size, r.Message)
	}
	started, end := traceOnce(t, ch.socket, &ctlproto.Request{Op: ctlproto.OpTrace, Spec: "accttest:::fire", BufSize: 16 << 20, DurationMS: 200})
	if started == nil || started.BufSize != 16<<20 || started.Buffers != 8 || end.Kind != ctlproto.KindEnd || end.Delivered == 0 {
		t.Errorf("a trace of 8 buffers of 16 MiB: started %+v, end %+v", started, end)
	}
	if last := ch.end(); last != "alive" {
		t.Fatalf("child: %q", last)
	}

	ch = startChild(t, "memory", "GOMAXPROCS=8")
	_, r := traceOnce(t, ch.socket, &ctlproto.Request{Op: ctlproto.OpTrace, Spec: "accttest:::fire", BufSize: 1 << 30, DurationMS: 100})
	for _, want := range []string{"8 GiB", "256 MiB", "SDT_MEMORY_TRACE"} {
		if r.Code != ctlproto.CodeBudget || !strings.Contains(r.Message, want) {
			t.Errorf("over the default budget: %+v; want a budget error naming %s", r, want)
		}
	}
	// The default buffer size fits the budget, and is what started says.
	started, end = traceOnce(t, ch.socket, &ctlproto.Request{Op: ctlproto.OpTrace, Spec: "accttest:::fire", DurationMS: 100})
	if started == nil || started.BufSize != control.DefaultBufSize || end.Kind != ctlproto.KindEnd {
		t.Errorf("a trace of the default size: started %+v, end %+v", started, end)
	}
	// A default that starts higher (sdtctl trace --raw to a file) is halved as the
	// default is: 8 Ps of 32 MiB fill the 256 MiB budget, 64 MiB is over it.
	for _, c := range [][2]int{{32 << 20, 32 << 20}, {64 << 20, 32 << 20}, {1 << 20, control.DefaultBufSize}} {
		started, end = traceOnce(t, ch.socket, &ctlproto.Request{Op: ctlproto.OpTrace, Spec: "accttest:::fire", BufSizeUpTo: c[0], DurationMS: 100})
		if started == nil || started.BufSize != c[1] || end.Kind != ctlproto.KindEnd {
			t.Errorf("a default from %d bytes: started %+v, end %+v; want buffers of %d", c[0], started, end, c[1])
		}
	}
	if last := ch.end(); last != "alive" {
		t.Fatalf("child: %q", last)
	}
}

// TestTracesInARow: traces one after another, of 8 buffers of 128 MiB each, leave
// the process's resident memory where it was: a trace's buffers are given back as
// it ends, and those of Ps that fire little are never all touched. Before, each
// trace's buffers stayed until a collection, and the next trace's, made from the
// memory it freed, were zeroed whole: the process grew by a trace's buffers.
func TestTracesInARow(t *testing.T) {
	needSwitchable(t, "accttest:::fire")
	ch := startChild(t, "memory", "GOMAXPROCS=8", "SDT_MEMORY=4g", "SDT_MEMORY_TRACE=2g")
	rss := func() uint64 {
		kb, err := statusKB(ch.cmd.Process.Pid, "VmRSS:")
		if err != nil {
			t.Fatal(err)
		}
		return kb << 10
	}
	// One small trace first: what any trace costs once (the code it runs, its
	// goroutine's stack) is in the baseline.
	traceOnce(t, ch.socket, &ctlproto.Request{Op: ctlproto.OpTrace, Spec: "accttest:::fire", BufSize: 64 << 10, DurationMS: 100})
	base := rss()
	const bound = 128 << 20 // one P's buffer touched whole, and some
	for i := range 4 {
		started, end := traceOnce(t, ch.socket, &ctlproto.Request{Op: ctlproto.OpTrace, Spec: "accttest:::fire", BufSize: 128 << 20, DurationMS: 300})
		if started == nil || end.Kind != ctlproto.KindEnd {
			t.Fatalf("trace %d: %+v", i, end)
		}
		now := rss()
		t.Logf("trace %d: %d events; resident %d MiB, %d MiB before the first", i, end.Delivered, now>>20, base>>20)
		if now > base+bound {
			t.Errorf("after trace %d of 8 x 128 MiB: %d MiB resident, %d MiB before the first", i, now>>20, base>>20)
		}
	}
	if last := ch.end(); last != "alive" {
		t.Fatalf("child: %q", last)
	}
}
