//go:build linux

package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/otelcoltest"
	"github.com/gosdt/gosdt/internal/testbin"
)

var exportProtocol = flag.String("export.protocol", "grpc", "BenchmarkExport: OTEL_EXPORTER_OTLP_PROTOCOL, grpc or http/protobuf")

var exportWork = flag.Int("export.work", 100000, "BenchmarkExport: loop iterations of each traced call of the program (100000: about 20,000 calls a second here)")

// BenchmarkExport measures what sdtctl export costs, a call of otelapp's app.Spin as
// the operation (ns/op and ns/call: the traced program's time per call, by the
// benchmark's and by the program's clock; app-cpu-ns/call: its CPU time per call, its
// control server's included): without the export (its probes off), and exported with
// the collector up, hung (SIGSTOP) and gone. sdtctl runs as a process of its own:
// sdtctl-cpu-ns/span is its CPU time (user and system) per span it built,
// sdtctl-%cpu-per-1k-spans/s the share of a core 1,000 spans a second take.
//
//	go test -run '^$' -bench Export -benchtime 5s ./cmd/sdtctl/
func BenchmarkExport(b *testing.B) {
	for _, state := range []string{"off", "up", "hung", "gone"} {
		name := "collector=" + state
		if state == "off" {
			name = "export=off"
		}
		b.Run(name, func(b *testing.B) { benchExport(b, state) })
	}
}

func benchExport(b *testing.B, state string) {
	b.Setenv("XDG_RUNTIME_DIR", b.TempDir())
	l := startLoop(b, *exportWork)
	var exp *exec.Cmd
	var expErr syncBuffer
	if state != "off" {
		col := otelcoltest.Start(b)
		cmd := exec.Command(testbin.Sdtctl(b), "export", "-p", strconv.Itoa(l.pid), appSpec, "--flush-timeout", "1s")
		cmd.Env = append(os.Environ(), "OTEL_EXPORTER_OTLP_ENDPOINT="+col.Endpoint(*exportProtocol), "OTEL_EXPORTER_OTLP_PROTOCOL="+*exportProtocol,
			"OTEL_BSP_EXPORT_TIMEOUT=2000", "OTEL_EXPORTER_OTLP_TIMEOUT=1000")
		cmd.Stderr = &expErr
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		exp = cmd
		b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		waitHeld(b, l.pid, appSpec, 1, 1)
		switch state {
		case "hung":
			col.Pause()
			b.Cleanup(col.Resume)
		case "gone":
			col.Stop()
		}
	}
	time.Sleep(300 * time.Millisecond)
	cpu0, app0 := cpuTime(b, exp), cpuTime(b, l.cmd)
	n0, t0 := l.count()
	b.ResetTimer()
	for {
		time.Sleep(20 * time.Millisecond)
		if n, _ := l.count(); n-n0 >= int64(b.N) {
			break
		}
	}
	n1, t1 := l.count()
	b.StopTimer()
	// ns/op from the program's own clock and count, not the benchmark's polling.
	b.ReportMetric(float64(t1.Sub(t0).Nanoseconds())/float64(n1-n0), "ns/call")
	// The program's CPU per call: its calls, their probes, and its control server
	// sending the records (less sensitive to the machine's other load than its pace).
	b.ReportMetric(float64((cpuTime(b, l.cmd)-app0).Nanoseconds())/float64(n1-n0), "app-cpu-ns/call")
	if exp == nil {
		return
	}
	cpu := cpuTime(b, exp) - cpu0
	exp.Process.Signal(os.Interrupt)
	exp.Wait()
	// The calls in the window made as many spans (every call is one).
	spans := float64(n1 - n0)
	b.ReportMetric(float64(cpu.Nanoseconds())/spans, "sdtctl-cpu-ns/span")
	b.ReportMetric(float64(cpu.Nanoseconds())/spans*1000/1e9*100, "sdtctl-%cpu-per-1k-spans/s")
	if s := summaryRE.FindStringSubmatch(expErr.String()); s != nil {
		b.Logf("%s", s[0])
	}
}

// cpuTime is the user and system time of cmd's process so far (0 for none).
func cpuTime(b *testing.B, cmd *exec.Cmd) time.Duration {
	if cmd == nil {
		return 0
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/stat", cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	line, _ := bufio.NewReader(f).ReadString('\n')
	fields := strings.Fields(line[strings.LastIndexByte(line, ')')+1:])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}
