//go:build linux

package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"

	"github.com/gosdt/gosdt/cmd/sdtctl/internal/agent"
	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/otelcoltest"
	"github.com/gosdt/gosdt/internal/testbin"
)

// opampServer is a real OpAMP server (opamp-go's) on 127.0.0.1 that remembers what
// its agents said and sends them the configuration the test sets.
type opampServer struct {
	t   testing.TB
	srv server.OpAMPServer
	url string

	mu       sync.Mutex
	conns    map[types.Connection]bool
	config   *protobufs.AgentRemoteConfig
	statuses []*protobufs.RemoteConfigStatus // every status the agents reported, in order
	eff      map[string][]byte               // the last effective configuration
	health   *protobufs.ComponentHealth
	// dropNext makes the server close the connection right after it sends the next
	// configuration.
	dropNext bool
	nconn    int // connections accepted
}

func (s *opampServer) connects() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nconn
}

func startOpAMP(t testing.TB) *opampServer { return startOpAMPWith(t, "ws", nil) }

// startOpAMPWith starts the server with TLS (nil: none), its URL of scheme.
func startOpAMPWith(t testing.TB, scheme string, tc *tls.Config) *opampServer {
	t.Helper()
	s := &opampServer{t: t, conns: map[types.Connection]bool{}}
	s.listen("127.0.0.1:0", tc)
	s.url = scheme + "://" + s.srv.Addr().String() + "/v1/opamp"
	t.Cleanup(s.kill)
	return s
}

func (s *opampServer) listen(addr string, tc *tls.Config) {
	s.srv = server.New(nil)
	err := s.srv.Start(server.StartSettings{
		ListenEndpoint: addr,
		TLSConfig:      tc,
		Settings: server.Settings{Callbacks: types.Callbacks{
			OnConnecting: func(*http.Request) types.ConnectionResponse {
				return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
					OnConnected: func(_ context.Context, c types.Connection) {
						s.mu.Lock()
						s.nconn++
						s.conns[c] = true
						s.mu.Unlock()
					},
					OnMessage:         s.onMessage,
					OnConnectionClose: func(c types.Connection) { s.mu.Lock(); delete(s.conns, c); s.mu.Unlock() },
				}}
			},
		}},
	})
	if err != nil {
		s.t.Fatal(err)
	}
}

func (s *opampServer) onMessage(_ context.Context, c types.Connection, m *protobufs.AgentToServer) *protobufs.ServerToAgent {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns[c] = true
	if st := m.GetRemoteConfigStatus(); st != nil {
		if n := len(s.statuses); n == 0 || !sameStatus(s.statuses[n-1], st) {
			s.statuses = append(s.statuses, st)
		}
	}
	if ec := m.GetEffectiveConfig(); ec != nil {
		s.eff = map[string][]byte{}
		for k, f := range ec.GetConfigMap().GetConfigMap() {
			s.eff[k] = f.GetBody()
		}
	}
	if h := m.GetHealth(); h != nil {
		s.health = h
	}
	r := &protobufs.ServerToAgent{InstanceUid: m.InstanceUid}
	// A configuration the agent has not said it had goes with the reply.
	if s.config != nil && (m.GetRemoteConfigStatus() == nil || string(m.GetRemoteConfigStatus().LastRemoteConfigHash) != string(s.config.ConfigHash)) {
		r.RemoteConfig = s.config
	}
	return r
}

func sameStatus(a, b *protobufs.RemoteConfigStatus) bool {
	return string(a.LastRemoteConfigHash) == string(b.LastRemoteConfigHash) && a.Status == b.Status && a.ErrorMessage == b.ErrorMessage
}

// set sends body as gosdt.yaml (nil: a configuration without it) to every agent
// connected, and returns its hash.
func (s *opampServer) set(body []byte) []byte {
	m := map[string]*protobufs.AgentConfigFile{"other.yaml": {Body: []byte("x: 1")}}
	if body != nil {
		m[agent.ConfigKey] = &protobufs.AgentConfigFile{Body: body, ContentType: "text/yaml"}
	}
	h := sha256.Sum256(append([]byte(fmt.Sprint(time.Now().UnixNano())), body...))
	rc := &protobufs.AgentRemoteConfig{Config: &protobufs.AgentConfigMap{ConfigMap: m}, ConfigHash: h[:]}
	s.mu.Lock()
	s.config = rc
	drop := s.dropNext
	s.dropNext = false
	var conns []types.Connection
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		if err := c.Send(context.Background(), &protobufs.ServerToAgent{RemoteConfig: rc}); err != nil {
			s.t.Logf("opamp: send: %v", err)
		}
		if drop {
			c.Connection().Close()
		}
	}
	return h[:]
}

// kill stops the server and closes its connections (Stop leaves those open). The
// listener goes first: an agent that reconnects in between would hold a connection
// nobody serves.
func (s *opampServer) kill() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	s.srv.Stop(ctx)
	cancel()
	s.mu.Lock()
	var conns []types.Connection
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	for _, c := range conns {
		c.Connection().Close()
	}
}

// waitStatus waits for the agent's status of the configuration hash to be st, and
// returns its message.
func (s *opampServer) waitStatus(t testing.TB, hash []byte, st protobufs.RemoteConfigStatuses, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s.mu.Lock()
		var last *protobufs.RemoteConfigStatus
		for _, x := range s.statuses {
			if string(x.LastRemoteConfigHash) == string(hash) {
				last = x
			}
		}
		s.mu.Unlock()
		if last != nil && last.Status == st {
			return last.ErrorMessage
		}
		if last != nil && last.Status != protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING {
			t.Fatalf("status %v (%s), want %v", last.Status, last.ErrorMessage, st)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no status %v in %v; last: %v", st, limit, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// state is the agent's last reported per-process state.
func (s *opampServer) state(t testing.TB) (agent.State, string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var st agent.State
	if b := s.eff[agent.StateKey]; b != nil {
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatalf("%s: %v: %s", agent.StateKey, err, b)
		}
	}
	return st, string(s.eff[agent.ConfigKey])
}

// waitState waits for the state the agent reports to satisfy ok.
func (s *opampServer) waitState(t testing.TB, limit time.Duration, what string, ok func(agent.State) bool) agent.State {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(20 * time.Millisecond) {
		st, _ := s.state(t)
		if ok(st) {
			return st
		}
		if time.Now().After(deadline) {
			b, _ := json.Marshal(st)
			t.Fatalf("%s: not in %v; state: %s", what, limit, b)
		}
	}
}

func hasPids(st agent.State, pids ...int) bool {
	for _, pid := range pids {
		found := false
		for _, p := range st.Processes {
			found = found || p.Pid == pid
		}
		if !found {
			return false
		}
	}
	return true
}

func runningIn(st agent.State, pid int) []int {
	for _, p := range st.Processes {
		if p.Pid == pid {
			return p.Running
		}
	}
	return nil
}

// probesOn is how many of spec's probes in pid are enabled, and the sites held by
// sdtctl streams.
func probesOn(t testing.TB, pid int, spec string) (on, held int) {
	t.Helper()
	var b, errb syncBuffer
	if err := run([]string{"list", "-p", strconv.Itoa(pid), spec, "--json"}, &b, &errb); err != nil {
		t.Fatalf("list -p %d: %v: %s", pid, err, errb.String())
	}
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var m struct{ Probe ctlproto.Probe }
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("list: %v: %q", err, line)
		}
		if m.Probe.Enabled {
			on++
		}
		for _, s := range m.Probe.Sites {
			for _, h := range s.HeldBy {
				if strings.HasPrefix(h, "sdtctl pid ") {
					held++
				}
			}
		}
	}
	return on, held
}

// waitOff waits until no probe of spec is on in any of pids.
func waitOff(t testing.TB, spec string, limit time.Duration, pids ...int) {
	t.Helper()
	for deadline := time.Now().Add(limit); ; time.Sleep(50 * time.Millisecond) {
		left := ""
		for _, pid := range pids {
			if on, held := probesOn(t, pid, spec); on+held > 0 {
				left += fmt.Sprintf(" pid %d: %d on, %d held", pid, on, held)
			}
		}
		if left == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("probes still on after %v:%s", limit, left)
		}
	}
}

// fleet is three processes of service checkout and one of billing, an agent of
// server s, and the collector.
type fleet struct {
	col      *otelcoltest.Collector
	checkout []*app
	billing  *app
	agent    *running
}

func startFleet(t *testing.T, s *opampServer, args ...string) *fleet {
	t.Helper()
	col := otelcoltest.Start(t)
	exportEnv(t, col, "grpc")
	return startFleetTo(t, col, s, args...)
}

// startFleetTo is startFleet with the collector col (nil: spans and metrics go
// nowhere: tests of what the agent places).
func startFleetTo(t *testing.T, col *otelcoltest.Collector, s *opampServer, args ...string) *fleet {
	t.Helper()
	if col == nil {
		t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
		t.Setenv("OTEL_SERVICE_NAME", "")
		t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	}
	f := &fleet{col: col}
	for range 3 {
		f.checkout = append(f.checkout, startApp(t, []string{"OTEL_SERVICE_NAME=checkout"}, "serve"))
	}
	f.billing = startApp(t, []string{"OTEL_SERVICE_NAME=billing"}, "serve")
	f.agent = startAgent(t, s, args...)
	s.waitState(t, 20*time.Second, "the four processes reported", func(st agent.State) bool { return hasPids(st, f.pids()...) })
	return f
}

func startAgent(t *testing.T, s *opampServer, args ...string) *running {
	t.Helper()
	r := runCmd(cmdAgent, append([]string{"--server", s.url, "--scan", "200ms"}, args...)...)
	t.Cleanup(func() {
		select {
		case <-r.stop:
		default:
			if err := r.end(t, 30*time.Second); err != nil {
				t.Errorf("agent: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("agent's stderr:\n%s", r.stderr.String())
		}
	})
	return r
}

func (f *fleet) pids() []int {
	var pids []int
	for _, a := range f.checkout {
		pids = append(pids, a.pid)
	}
	return append(pids, f.billing.pid)
}

func (f *fleet) checkoutPids() []int { return f.pids()[:3] }

// calls makes every process serve n requests.
func (f *fleet) calls(t *testing.T, n int) {
	t.Helper()
	for i := range n {
		for _, a := range append(f.checkout, f.billing) {
			a.do(t, "req "+strconv.Itoa(i+1))
		}
	}
}

const checkoutSet = `probes:
  - service: checkout
    specs: ["` + appSpec + `"]
    export: spans
    ttl: %s
    server_timeout: %s
`

// A set for one service reaches exactly its three processes, spans come from each,
// the time to live removes it, and list shows every probe off.
func TestAgentTTL(t *testing.T) {
	otelAppBin(t)
	s := startOpAMP(t)
	f := startFleet(t, s)
	h := s.set(fmt.Appendf(nil, checkoutSet, "6s", "1m"))
	s.waitStatus(t, h, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
	applied := time.Now()
	for _, pid := range f.checkoutPids() {
		if on, held := probesOn(t, pid, appSpec); on == 0 || held == 0 {
			t.Errorf("pid %d (checkout): %d probes on, %d sites held after APPLIED", pid, on, held)
		}
	}
	if on, held := probesOn(t, f.billing.pid, appSpec); on+held > 0 {
		t.Errorf("pid %d (billing): %d probes on, %d held: the set is checkout's", f.billing.pid, on, held)
	}
	st := s.waitState(t, 5*time.Second, "running in the three", func(st agent.State) bool {
		for _, pid := range f.checkoutPids() {
			if len(runningIn(st, pid)) != 1 {
				return false
			}
		}
		return true
	})
	for _, p := range st.Processes {
		if p.Service != map[bool]string{true: "billing", false: "checkout"}[p.Pid == f.billing.pid] || p.GoVersion == "" || p.Command != "otelapp" {
			t.Errorf("process reported as %+v", p)
		}
	}
	if r := runningIn(st, f.billing.pid); len(r) != 0 {
		t.Errorf("billing runs sets %v", r)
	}
	f.calls(t, 3)
	spans, ok := f.col.WaitSpans(20*time.Second, func(sp []otelcoltest.Span) bool {
		got := map[int]bool{}
		for _, x := range sp {
			if x.Name == "app.Handle" {
				got[resPid(x)] = true
			}
		}
		return len(got) == 3
	})
	if !ok {
		t.Fatalf("spans of app.Handle from the three checkout processes did not arrive: %d spans", len(spans))
	}
	for _, x := range spans {
		if pid := resPid(x); pid == f.billing.pid {
			t.Errorf("a span from billing's pid %d: %s", pid, x.Name)
		}
		if x.Resource["service.name"] != "checkout" {
			t.Errorf("span %s of service %v", x.Name, x.Resource["service.name"])
		}
	}
	waitOff(t, appSpec, 20*time.Second, f.pids()...)
	if d := time.Since(applied); d < 4*time.Second {
		t.Errorf("probes off %v after APPLIED: the ttl is 6s", d)
	}
	st = s.waitState(t, 5*time.Second, "the set ended", func(st agent.State) bool { return len(st.Sets) == 1 && st.Sets[0].Ended != "" })
	if !strings.Contains(st.Sets[0].Ended, "time to live") {
		t.Errorf("set ended: %q", st.Sets[0].Ended)
	}
	if err := f.agent.end(t, 30*time.Second); err != nil {
		t.Errorf("agent: %v", err)
	}
}

func resPid(s otelcoltest.Span) int {
	switch v := s.Resource["process.pid"].(type) {
	case float64:
		return int(v)
	case int64:
		return int(v)
	case int:
		return v
	case string:
		n, _ := strconv.Atoi(v)
		return n
	}
	return 0
}

// A set the server withdraws leaves every process, long before its time to live.
func TestAgentWithdraw(t *testing.T) {
	otelAppBin(t)
	s := startOpAMP(t)
	f := startFleet(t, s)
	h := s.set(fmt.Appendf(nil, checkoutSet, "10m", "1m"))
	s.waitStatus(t, h, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
	f.calls(t, 2)
	if _, ok := f.col.WaitSpans(20*time.Second, func(sp []otelcoltest.Span) bool { return len(sp) > 0 }); !ok {
		t.Fatal("no span arrived")
	}
	// A process of the service that starts now gets the set too.
	late := startApp(t, []string{"OTEL_SERVICE_NAME=checkout"}, "serve")
	s.waitState(t, 20*time.Second, "the late process runs the set", func(st agent.State) bool { return len(runningIn(st, late.pid)) == 1 })
	if on, held := probesOn(t, late.pid, appSpec); on == 0 || held == 0 {
		t.Errorf("late pid %d: %d probes on, %d held", late.pid, on, held)
	}
	late.do(t, "req 7")
	if _, ok := f.col.WaitSpans(20*time.Second, func(sp []otelcoltest.Span) bool {
		return slices.ContainsFunc(sp, func(x otelcoltest.Span) bool { return resPid(x) == late.pid })
	}); !ok {
		t.Error("no span from the late process")
	}
	withdrawn := time.Now()
	h2 := s.set(nil)
	s.waitStatus(t, h2, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 10*time.Second)
	waitOff(t, appSpec, 10*time.Second, append(f.pids(), late.pid)...)
	t.Logf("probes off %v after the withdrawal", time.Since(withdrawn).Round(time.Millisecond))
	s.waitState(t, 5*time.Second, "no set", func(st agent.State) bool { return len(st.Sets) == 0 })
	if _, y := s.state(t); strings.TrimSpace(y) != "probes: []" {
		t.Errorf("effective gosdt.yaml after the withdrawal: %q", y)
	}
}

// A server that goes away takes its sets with it after their server_timeout.
func TestAgentServerLost(t *testing.T) {
	otelAppBin(t)
	s := startOpAMP(t)
	f := startFleet(t, s)
	h := s.set(fmt.Appendf(nil, checkoutSet, "10m", "3s"))
	s.waitStatus(t, h, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
	killed := time.Now()
	s.kill()
	for _, pid := range f.checkoutPids() {
		// Checked while the server is gone for less than its server_timeout (3s).
		if on, _ := probesOn(t, pid, appSpec); on == 0 && time.Since(killed) < 2*time.Second {
			t.Errorf("pid %d: probes off %v after the server went: its server_timeout is 3s", pid, time.Since(killed))
		}
	}
	waitOff(t, appSpec, 20*time.Second, f.pids()...)
	if d := time.Since(killed); d < 3*time.Second {
		t.Errorf("probes off %v after the server went: its server_timeout is 3s", d)
	}
	if !strings.Contains(f.agent.stderr.String(), "unreachable") {
		t.Errorf("the agent did not say why the set ended:\n%s", f.agent.stderr.String())
	}
}

// Bad input changes nothing: the status says FAILED and why, the sets in force stay in
// force, in the processes and in the effective configuration.
func TestAgentBadInput(t *testing.T) {
	otelAppBin(t)
	s := startOpAMP(t)
	f := startFleetTo(t, nil, s, "--max-functions", "2")
	good := fmt.Appendf(nil, checkoutSet, "10m", "1m")
	h := s.set(good)
	s.waitStatus(t, h, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
	_, effective := s.state(t)
	held := map[int]int{}
	for _, pid := range f.pids() {
		_, held[pid] = probesOn(t, pid, appSpec)
	}
	set := func(extra string) string {
		return "probes:\n  - service: checkout\n    specs: [\"" + appSpec + "\"]\n" + extra
	}
	for _, tc := range []struct{ name, body, want string }{
		{"unknown field", set("    command: /bin/sh\n"), "field command not found"},
		{"a file", set("    file: /etc/passwd\n"), "field file not found"},
		{"bad spec", "probes:\n  - service: checkout\n    specs: [\"fbt:a:b:c:d:e\"]\n", "spec"},
		{"ttl out of range", set("    ttl: 48h\n"), "out of range"},
		{"ttl zero", set("    ttl: 0s\n"), "out of range"},
		{"cpu budget out of range", set("    budget: {cpu: 500%}\n"), "out of range"},
		{"fires budget out of range", set("    budget: {fires: 0/s}\n"), "out of range"},
		{"too many functions", "probes:\n  - service: checkout\n    specs: [\"fbt:strconv::entry\"]\n", "at most 2"},
		{"garbage", "\x00\xff{{{:\n\t- [", "gosdt.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := s.set([]byte(tc.body))
			msg := s.waitStatus(t, h, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, 20*time.Second)
			if !strings.Contains(msg, tc.want) {
				t.Errorf("FAILED %q, want it to say %q", msg, tc.want)
			}
			if _, y := s.state(t); y != effective {
				t.Errorf("effective configuration changed:\n%s\nwas:\n%s", y, effective)
			}
			for _, pid := range f.pids() {
				if _, n := probesOn(t, pid, appSpec); n != held[pid] {
					t.Errorf("pid %d: %d sites held, %d before", pid, n, held[pid])
				}
			}
			if on, _ := probesOn(t, f.checkout[0].pid, "fbt:strconv::"); on != 0 {
				t.Errorf("%d strconv probes on", on)
			}
		})
	}
	// Garbage in the protocol itself: a websocket frame that is no OpAMP message.
	s.mu.Lock()
	for c := range s.conns {
		// A header, then a field of 127 bytes that has 5: the message does not decode.
		payload := []byte("\x00\x0a\x7fshort")
		c.Connection().Write(append([]byte{0x82, byte(len(payload))}, payload...))
	}
	s.mu.Unlock()
	time.Sleep(time.Second)
	if log := f.agent.stderr.String(); !strings.Contains(log, "cannot decode") {
		t.Errorf("the agent did not say it received garbage:%s", lastLines(log, 5))
	}
	for _, pid := range f.pids() {
		if _, n := probesOn(t, pid, appSpec); n != held[pid] {
			t.Errorf("after a garbage frame, pid %d: %d sites held, %d before", pid, n, held[pid])
		}
	}
	// The agent goes on: a good configuration after all that applies.
	h = s.set(fmt.Appendf(nil, checkoutSet, "9m", "1m"))
	s.waitStatus(t, h, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
	st, _ := s.state(t)
	for _, pid := range f.checkoutPids() {
		if len(runningIn(st, pid)) != 1 {
			t.Errorf("pid %d runs %v after the refused configurations", pid, runningIn(st, pid))
		}
	}
}

// A server that drops the connection right after it sends a configuration: the agent
// applies it, and says so when it is back.
func TestAgentDisconnectMidApply(t *testing.T) {
	otelAppBin(t)
	s := startOpAMP(t)
	f := startFleetTo(t, nil, s)
	s.mu.Lock()
	s.dropNext = true
	s.mu.Unlock()
	h := s.set(fmt.Appendf(nil, checkoutSet, "10m", "1m"))
	s.waitStatus(t, h, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
	if s.connects() < 2 {
		t.Errorf("the agent connected %d times: the server dropped it", s.connects())
	}
	for _, pid := range f.checkoutPids() {
		if on, held := probesOn(t, pid, appSpec); on == 0 || held == 0 {
			t.Errorf("pid %d: %d on, %d held", pid, on, held)
		}
	}
	if on, held := probesOn(t, f.billing.pid, appSpec); on+held != 0 {
		t.Errorf("billing: %d on, %d held", on, held)
	}
}

// Two agents of two servers on the same processes: each server's sets are its own,
// and withdrawing one's leaves the other's.
func TestAgentTwoServers(t *testing.T) {
	otelAppBin(t)
	sa, sb := startOpAMP(t), startOpAMP(t)
	f := startFleetTo(t, nil, sa)
	startAgent(t, sb)
	sb.waitState(t, 20*time.Second, "the four processes reported to b", func(st agent.State) bool { return hasPids(st, f.pids()...) })
	ha := sa.set(fmt.Appendf(nil, checkoutSet, "10m", "1m"))
	hb := sb.set([]byte("probes:\n  - name: otelapp\n    specs: [\"" + appSpec + "\"]\n    export: metrics\n"))
	sa.waitStatus(t, ha, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
	sb.waitStatus(t, hb, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
	for _, srv := range []*opampServer{sa, sb} {
		srv.waitState(t, 5*time.Second, "its set", func(st agent.State) bool { return len(st.Sets) == 1 })
	}
	if st, _ := sa.state(t); st.Sets[0].Entry.Service != "checkout" || st.Sets[0].Entry.Export != "spans" {
		t.Errorf("a's set: %+v", st.Sets[0].Entry)
	}
	if st, _ := sb.state(t); st.Sets[0].Entry.Name != "otelapp" || st.Sets[0].Entry.Export != "metrics" {
		t.Errorf("b's set: %+v", st.Sets[0].Entry)
	}
	if !held(f.checkout[0].pid, []string{appSpec}, true, true) {
		t.Fatal("checkout's probes not held by a trace and a stat stream")
	}
	h2 := sa.set(nil)
	sa.waitStatus(t, h2, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 10*time.Second)
	for _, pid := range f.pids() {
		for deadline := time.Now().Add(10 * time.Second); held(pid, []string{appSpec}, true, false); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("pid %d: a trace stream still holds the probes after a's withdrawal", pid)
			}
		}
		if !held(pid, []string{appSpec}, false, true) {
			t.Errorf("pid %d: b's stat streams lost their probes when a withdrew its set", pid)
		}
	}
	if st, _ := sb.state(t); len(st.Sets) != 1 || len(runningIn(st, f.billing.pid)) != 1 {
		t.Errorf("b's state after a's withdrawal: %+v", st)
	}
}

// A set over its budget leaves the process, and the state says by how much: fires per
// second counted by the process, and CPU above what the process used before the set.
func TestAgentBudget(t *testing.T) {
	otelAppBin(t)
	s := startOpAMP(t)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	spinner := startApp(t, []string{"OTEL_SERVICE_NAME=spinner"}, "loop", "100")
	idle := startApp(t, []string{"OTEL_SERVICE_NAME=idle"}, "serve")
	startAgent(t, s)
	s.waitState(t, 20*time.Second, "both reported", func(st agent.State) bool { return hasPids(st, spinner.pid, idle.pid) })
	h := s.set([]byte(`probes:
  - service: spinner
    specs: ["fbt:example.com/otelapp/app:Spin:"]
    export: metrics
    budget: {fires: 1000/s}
  - service: idle
    specs: ["` + appSpec + `"]
    export: metrics
    budget: {cpu: 10%}
`))
	s.waitStatus(t, h, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
	removed := func(pid, set int, what string) func(agent.State) bool {
		return func(st agent.State) bool {
			for _, p := range st.Processes {
				if p.Pid == pid && strings.Contains(p.Removed[set], what) {
					return true
				}
			}
			return false
		}
	}
	st := s.waitState(t, 20*time.Second, "the spinner's set over its fires budget", removed(spinner.pid, 0, "fires/s"))
	t.Logf("spinner: %+v", st.Processes)
	if on, _ := probesOn(t, idle.pid, appSpec); on == 0 {
		t.Errorf("the idle process lost its set before it worked: %+v", st.Processes)
	}
	waitOff(t, "fbt:example.com/otelapp/app:Spin:", 10*time.Second, spinner.pid)
	// The idle process now works as hard as calls sent without waiting for their
	// answers make it: its CPU above its share before the set passes 10%. (The cpu
	// figure counts the workload's growth too: see the README.)
	done := make(chan struct{})
	defer close(done)
	go func() {
		for idle.out.Scan() {
		}
	}()
	go func() {
		chunk := []byte(strings.Repeat("nocontext 1\n", 4096)) // app.Lookup: no sleep
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := idle.in.Write(chunk); err != nil {
				return
			}
		}
	}()
	st = s.waitState(t, 30*time.Second, "the busy process's set over its cpu budget", removed(idle.pid, 1, "of a CPU above"))
	t.Logf("idle: %+v", st.Processes)
	waitOff(t, appSpec, 10*time.Second, idle.pid)
}

// An agent killed leaves no probe behind: the processes release what its connections
// held.
func TestAgentKilled(t *testing.T) {
	otelAppBin(t)
	s := startOpAMP(t)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	a := startApp(t, []string{"OTEL_SERVICE_NAME=checkout"}, "serve")
	cmd := exec.Command(testbin.Sdtctl(t), "agent", "--server", s.url)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s.waitState(t, 20*time.Second, "the process reported", func(st agent.State) bool { return hasPids(st, a.pid) })
	h := s.set(fmt.Appendf(nil, checkoutSet, "10m", "1m"))
	s.waitStatus(t, h, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
	if on, held := probesOn(t, a.pid, appSpec); on == 0 || held == 0 {
		t.Fatalf("%d on, %d held; agent:\n%s", on, held, stderr.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	waitOff(t, appSpec, 10*time.Second, a.pid)
}

// agent --help is true: every flag it lists is taken, the main usage's synopsis names
// only those, and bad flags, URLs and certificate files are said with their exit code.
func TestAgentHelp(t *testing.T) {
	var out, errb syncBuffer
	err := run([]string{"agent", "--help"}, &out, &errb)
	help := out.String()
	if exitCode(err) != exitOK || !strings.HasPrefix(help, "usage: sdtctl agent") || errb.String() != "" {
		t.Fatalf("agent --help: %v, stdout %.80q, stderr %q", err, help, errb.String())
	}
	for _, want := range []string{"gosdt.yaml", "ttl:", "server_timeout:", "budget:", "APPLIED", "OTEL_EXPORTER_OTLP_CERTIFICATE", agent.StateKey} {
		if !strings.Contains(help, want) {
			t.Errorf("agent --help does not say %q", want)
		}
	}
	listed := map[string]bool{}
	for _, f := range helpFlag.FindAllStringSubmatch(help, -1) {
		listed[f[1]] = true
		args := []string{"agent", "-" + f[1]}
		switch f[2] {
		case "":
		case "KEY=VALUE":
			args = append(args, "K=V")
		default:
			args = append(args, flagSample(f[2]))
		}
		if err := run(append(args, "--help"), &out, &errb); exitCode(err) != exitOK {
			t.Errorf("agent --help lists -%s, but sdtctl %s --help: %v", f[1], strings.Join(args, " "), err)
		}
	}
	for _, m := range regexp.MustCompile(`(?:^|[\s\[|])--?([a-z][a-z-]*)`).FindAllStringSubmatch(synopsis("agent"), -1) {
		if !listed[m[1]] {
			t.Errorf("sdtctl --help gives agent the flag %s, which agent --help does not list", m[0])
		}
	}
	if !strings.Contains(usage, "  agent --server URL") {
		t.Error("sdtctl --help does not list agent")
	}
	for _, tc := range []struct {
		args []string
		env  string
		code int
		want string
	}{
		{[]string{}, "", exitUsage, "--server URL is required"},
		{[]string{"--server", "ftp://x/y"}, "", exitUsage, "scheme"},
		{[]string{"--server", "not a url"}, "", exitUsage, "--server"},
		{[]string{"--server", "ws://127.0.0.1:1/v1/opamp", "extra"}, "", exitUsage, "unexpected argument"},
		{[]string{"--server", "ws://127.0.0.1:1/v1/opamp", "--max-functions", "0"}, "", exitUsage, "--max-functions"},
		{[]string{"--server", "ws://127.0.0.1:1/v1/opamp", "--header", "novalue"}, "", exitUsage, "KEY=VALUE"},
		{[]string{"--server", "wss://127.0.0.1:1/v1/opamp"}, "/nonexistent/ca.pem", exitError, "OTEL_EXPORTER_OTLP_CERTIFICATE"},
		{[]string{"--no-such-flag"}, "", exitUsage, "no-such-flag"},
	} {
		t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", tc.env)
		var out, errb syncBuffer
		err := run(append([]string{"agent"}, tc.args...), &out, &errb)
		if exitCode(err) != tc.code || err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("agent %q: %v (exit %d), want exit %d saying %q", tc.args, err, exitCode(err), tc.code, tc.want)
		}
	}
}

// selfSigned is a certificate for 127.0.0.1, and the file of its PEM.
func selfSigned(t *testing.T) (tls.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "opamp test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, file
}

// OpAMP over TLS (wss://, https://) trusts the CA OTEL_EXPORTER_OTLP_CERTIFICATE names,
// and a server it cannot verify gets nothing; OpAMP over plain HTTP polls.
func TestAgentTransports(t *testing.T) {
	otelAppBin(t)
	cert, caFile := selfSigned(t)
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	a := startApp(t, []string{"OTEL_SERVICE_NAME=checkout"}, "serve")
	for _, tc := range []struct {
		scheme string
		tls    bool
	}{{"wss", true}, {"https", true}, {"http", false}} {
		t.Run(tc.scheme, func(t *testing.T) {
			var tcfg *tls.Config
			if tc.tls {
				tcfg = &tls.Config{Certificates: []tls.Certificate{cert}}
			}
			s := startOpAMPWith(t, tc.scheme, tcfg)
			if tc.tls {
				// Not trusted: the system's roots do not know the test's CA.
				t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", "")
				r := runCmd(cmdAgent, "--server", s.url, "--poll", "200ms")
				time.Sleep(2 * time.Second)
				r.end(t, 20*time.Second)
				if st, _ := s.state(t); len(st.Processes) > 0 || s.connects() > 0 {
					t.Errorf("an agent that cannot verify the server reported to it")
				}
				if !strings.Contains(r.stderr.String(), "certificate") {
					t.Errorf("the agent did not say why it could not connect:\n%s", r.stderr.String())
				}
				// The variable serves OTLP too: its endpoint is TLS then.
				t.Setenv("OTEL_EXPORTER_OTLP_CERTIFICATE", caFile)
				t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "https://127.0.0.1:1")
			}
			startAgent(t, s, "--poll", "200ms")
			s.waitState(t, 20*time.Second, "the process reported", func(st agent.State) bool { return hasPids(st, a.pid) })
			h := s.set(fmt.Appendf(nil, checkoutSet, "10m", "1m"))
			s.waitStatus(t, h, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
			if on, held := probesOn(t, a.pid, appSpec); on == 0 || held == 0 {
				t.Errorf("%d on, %d held", on, held)
			}
			h2 := s.set(nil)
			s.waitStatus(t, h2, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, 30*time.Second)
			waitOff(t, appSpec, 10*time.Second, a.pid)
		})
	}
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	return "\n" + strings.Join(l[max(0, len(l)-n):], "\n")
}
