package otelcoltest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// Collector is a running collector: OTLP in on 127.0.0.1, what it received in files.
type Collector struct {
	t    testing.TB
	bin  string
	dir  string
	GRPC string // host:port of its OTLP/gRPC receiver
	HTTP string // host:port of its OTLP/HTTP receiver

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
	log    *bytes.Buffer
}

// Start starts a collector for t (skipping when there is none), stopped at its end.
func Start(t testing.TB) *Collector {
	t.Helper()
	c := &Collector{t: t, bin: Need(t), dir: t.TempDir()}
	c.GRPC, c.HTTP = freePort(t), freePort(t)
	cfg := fmt.Sprintf(`receivers:
  otlp:
    protocols:
      grpc:
        endpoint: %s
      http:
        endpoint: %s
exporters:
  file/traces:
    path: %s
    flush_interval: 50ms
  file/metrics:
    path: %s
    flush_interval: 50ms
service:
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [file/traces]
    metrics:
      receivers: [otlp]
      exporters: [file/metrics]
`, c.GRPC, c.HTTP, filepath.Join(c.dir, "traces.json"), filepath.Join(c.dir, "metrics.json"))
	if err := os.WriteFile(filepath.Join(c.dir, "config.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c.start()
	t.Cleanup(c.Stop)
	return c
}

// Endpoint is the URL to give OTEL_EXPORTER_OTLP_ENDPOINT for protocol "grpc" or
// "http/protobuf".
func (c *Collector) Endpoint(protocol string) string {
	if protocol == "grpc" {
		return "http://" + c.GRPC
	}
	return "http://" + c.HTTP
}

func freePort(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (c *Collector) start() {
	c.t.Helper()
	cmd := exec.Command(c.bin, "--config", "file:"+filepath.Join(c.dir, "config.yaml"))
	log := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	c.mu.Lock()
	c.cmd, c.exited, c.log = cmd, exited, log
	c.mu.Unlock()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if listening(c.GRPC) && listening(c.HTTP) {
			return
		}
		select {
		case <-exited:
			c.t.Fatalf("the collector exited at its start:\n%s", c.Log())
		default:
		}
		if time.Now().After(deadline) {
			c.Stop()
			c.t.Fatalf("the collector did not listen on %s and %s within 60 s:\n%s", c.GRPC, c.HTTP, c.Log())
		}
	}
}

func listening(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// Log is what the collector printed.
func (c *Collector) Log() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.log == nil {
		return ""
	}
	return c.log.String()
}

// Stop stops the collector (SIGTERM: it flushes its files), waiting for it; then
// what it received stays readable. Stopping a stopped collector does nothing.
func (c *Collector) Stop() {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil {
		return
	}
	if sigCont != nil {
		cmd.Process.Signal(sigCont) // if paused
	}
	cmd.Process.Signal(sigTerm)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}

// Restart starts a stopped collector again on the same ports, appending to the same
// files.
func (c *Collector) Restart() {
	c.t.Helper()
	c.Stop()
	c.start()
}

// Pause stops the collector's process (SIGSTOP): its sockets still accept
// connections, and nothing answers: a collector that hangs.
func (c *Collector) Pause() { c.signal(sigStop) }

// Resume continues a paused collector.
func (c *Collector) Resume() { c.signal(sigCont) }

func (c *Collector) signal(s os.Signal) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cmd != nil && s != nil {
		c.cmd.Process.Signal(s)
	}
}

// Spans is every span the collector has written so far.
func (c *Collector) Spans() ([]Span, error) {
	b, err := readFile(filepath.Join(c.dir, "traces.json"))
	if err != nil {
		return nil, err
	}
	return parseSpans(b)
}

// Metrics is every metric data point the collector has written so far.
func (c *Collector) Metrics() ([]Point, error) {
	b, err := readFile(filepath.Join(c.dir, "metrics.json"))
	if err != nil {
		return nil, err
	}
	return parsePoints(b)
}

// readFile reads what the collector wrote; a file not yet created is empty. A line
// being written (no newline yet) is left for the next read.
func readFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	return b, err
}

// WaitSpans waits up to timeout for ok to accept what the collector has received, and
// returns it (what it had at the deadline, with ok false, otherwise).
func (c *Collector) WaitSpans(timeout time.Duration, ok func([]Span) bool) ([]Span, bool) {
	var spans []Span
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		s, err := c.Spans()
		if err == nil {
			spans = s
			if ok(spans) {
				return spans, true
			}
		}
		if time.Now().After(deadline) {
			return spans, false
		}
	}
}

// WaitMetrics is WaitSpans for metric points.
func (c *Collector) WaitMetrics(timeout time.Duration, ok func([]Point) bool) ([]Point, bool) {
	var pts []Point
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		p, err := c.Metrics()
		if err == nil {
			pts = p
			if ok(pts) {
				return pts, true
			}
		}
		if time.Now().After(deadline) {
			return pts, false
		}
	}
}

// String names the collector in messages.
func (c *Collector) String() string {
	return fmt.Sprintf("collector (grpc %s, http %s, files in %s)", c.GRPC, c.HTTP, strings.TrimSuffix(c.dir, "/"))
}
