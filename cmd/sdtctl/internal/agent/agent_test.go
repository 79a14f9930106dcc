package agent

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/open-telemetry/opamp-go/protobufs"
	"github.com/open-telemetry/opamp-go/server"
	"github.com/open-telemetry/opamp-go/server/types"
)

// fakeFleet is two processes whose sets are counted, not placed.
type fakeFleet struct {
	mu      sync.Mutex
	starts  map[int]int // sets started per pid
	running map[int]int
}

func (f *fakeFleet) Processes() []Process {
	return []Process{{Pid: 1, Service: "checkout", Command: "a"}, {Pid: 2, Service: "billing", Command: "b"}}
}
func (f *fakeFleet) Plan(pid int, specs []string) (Plan, error) {
	return Plan{Probes: len(specs), Functions: specs}, nil
}
func (f *fakeFleet) CPU(int) (time.Duration, error) { return 0, nil }
func (f *fakeFleet) Start(pid int, e *Entry) (Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.starts[pid]++
	f.running[pid]++
	return &fakeSession{f: f, pid: pid, done: make(chan struct{})}, nil
}

func (f *fakeFleet) counts(pid int) (starts, running int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.starts[pid], f.running[pid]
}

type fakeSession struct {
	f    *fakeFleet
	pid  int
	once sync.Once
	done chan struct{}
}

func (s *fakeSession) Fires() (uint64, error) { return 0, nil }
func (s *fakeSession) Done() <-chan struct{}  { return s.done }
func (s *fakeSession) Err() error             { return nil }
func (s *fakeSession) Stop() string {
	s.once.Do(func() {
		s.f.mu.Lock()
		s.f.running[s.pid]--
		s.f.mu.Unlock()
	})
	return ""
}

// A set the next configuration keeps unchanged keeps running (not started again),
// one whose time to live ended stays ended when the server sends it again, and sets
// ended by the server's absence start again when it is back.
func TestKeepEndResume(t *testing.T) {
	var mu sync.Mutex
	var conn types.Connection
	var all []types.Connection
	srv := server.New(nil)
	settings := server.Settings{Callbacks: types.Callbacks{
		OnConnecting: func(*http.Request) types.ConnectionResponse {
			return types.ConnectionResponse{Accept: true, ConnectionCallbacks: types.ConnectionCallbacks{
				OnConnected: func(_ context.Context, c types.Connection) { mu.Lock(); conn = c; all = append(all, c); mu.Unlock() },
			}}
		},
	}}
	err := srv.Start(server.StartSettings{ListenEndpoint: "127.0.0.1:0", Settings: settings})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Stop(context.Background()) }()
	f := &fakeFleet{starts: map[int]int{}, running: map[int]int{}}
	a, err := New(Options{Server: "ws://" + srv.Addr().String() + "/v1/opamp", Fleet: f, Scan: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- a.Run(ctx) }()
	send := func(body string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			mu.Lock()
			c := conn
			mu.Unlock()
			if c != nil {
				c.Send(context.Background(), &protobufs.ServerToAgent{RemoteConfig: &protobufs.AgentRemoteConfig{
					ConfigHash: []byte(body),
					Config:     &protobufs.AgentConfigMap{ConfigMap: map[string]*protobufs.AgentConfigFile{ConfigKey: {Body: []byte(body)}}}}})
				return
			}
			if time.Now().After(deadline) {
				t.Fatal("the agent did not connect")
			}
		}
	}
	wait := func(what string, ok func() bool) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); !ok(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not in 10s", what)
			}
		}
	}
	long := "probes:\n  - {service: checkout, specs: [\"a:::\"], server_timeout: 1s}\n"
	short := "  - {service: checkout, specs: [\"b:::\"], ttl: 1s}\n"
	send(long)
	wait("the set runs", func() bool { s, r := f.counts(1); return s == 1 && r == 1 })
	if s, _ := f.counts(2); s != 0 {
		t.Errorf("billing got %d sets", s)
	}
	send(long + short)
	wait("both run", func() bool { s, r := f.counts(1); return s == 2 && r == 2 })
	wait("the short one ended", func() bool { _, r := f.counts(1); return r == 1 })
	send("# again\n" + long + short)
	time.Sleep(500 * time.Millisecond)
	if s, r := f.counts(1); s != 2 || r != 1 {
		t.Errorf("after the same sets again: %d starts, %d running; want 2, 1 (the ended set stays ended, the other runs on)", s, r)
	}
	// The server goes: after the long set's server_timeout (1s) it ends; the server
	// back, on the same address, it runs again.
	// opamp-go's server.Stop closes its listener but not the connections it accepted,
	// and the agent redials at once: stop listening first, then close every
	// connection, or one made in between outlives the server.
	addr := srv.Addr().String()
	srv.Stop(context.Background())
	mu.Lock()
	for _, c := range all {
		c.Connection().Close()
	}
	all, conn = nil, nil
	mu.Unlock()
	wait("ended with the server gone", func() bool { _, r := f.counts(1); return r == 0 })
	srv = server.New(nil)
	if err := srv.Start(server.StartSettings{ListenEndpoint: addr, Settings: settings}); err != nil {
		t.Fatal(err)
	}
	wait("running again with the server back", func() bool { s, r := f.counts(1); return s == 3 && r == 1 })
	send("probes: []\n")
	wait("withdrawn", func() bool { _, r := f.counts(1); return r == 0 })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
