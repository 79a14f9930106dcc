package agent

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/open-telemetry/opamp-go/client"
	"github.com/open-telemetry/opamp-go/client/types"
	"github.com/open-telemetry/opamp-go/protobufs"
	"gopkg.in/yaml.v3"
)

// StateKey is the key, in the effective configuration the agent reports, of what runs
// where: every process, its sets, and what each set did there.
const StateKey = "gosdt.state.json"

// Options configure an Agent.
type Options struct {
	Server       string      // ws(s):// or http(s):// URL of the OpAMP server
	TLS          *tls.Config // for wss:// and https://
	Header       http.Header // sent with every request (authorization)
	Fleet        Fleet
	MaxFunctions int           // run-time probed functions per process, all sets together
	Scan         time.Duration // how often new processes are looked for
	Poll         time.Duration // how often the HTTP transport asks the server
	Log          func(Event)
}

// Event is what the agent says it did.
type Event struct {
	Time   time.Time `json:"time"`
	What   string    `json:"event"` // connected, disconnected, config, status, process, start, stop, budget, opamp
	Pid    int       `json:"pid,omitempty"`
	Set    *int      `json:"set,omitempty"` // index of the set in the configuration
	Status string    `json:"status,omitempty"`
	Msg    string    `json:"msg"`
}

// Agent is one OpAMP agent of one server.
type Agent struct {
	o      Options
	client client.OpAMPClient
	uid    types.InstanceUid

	wake chan struct{} // something for the loop to look at
	mu   sync.Mutex    // guards the fields below, which the OpAMP callbacks touch
	next *protobufs.AgentRemoteConfig
	conn struct {
		ok, failing bool
		since       time.Time // of the first failure since the last success
	}
	effective *protobufs.EffectiveConfig

	// The loop's own.
	sets    []*set
	body    []byte // the configuration accepted last
	hash    []byte
	procs   map[int]*proc
	started chan startResult
	pending *pendingApply
	scanned time.Time
	stops   sync.WaitGroup
	dirty   bool
	lostFor time.Duration
}

type set struct {
	e     Entry
	index int
	since time.Time // first applied: its time to live counts from here
	ended string    // why it ended for good (its time to live)
}

type run struct {
	s        *set
	started  time.Time
	sess     Session
	fires    uint64
	firesAt  time.Time
	lastRate float64
}

type proc struct {
	Process
	runs     map[string]*run
	starting map[string]bool
	removed  map[string]string // set key: why it is not (or no longer) in this process
	notes    map[string]string // set key: what the process said of it (refusals, misses)
	cpu      time.Duration
	cpuAt    time.Time
	base     float64 // CPU share (of one CPU) without any set, last measured
	baseOK   bool
	share    float64
}

type startResult struct {
	pid  int
	key  string
	sess Session
	note string
	err  error
}

type pendingApply struct {
	hash  []byte
	fails []string
}

// New makes an agent; Run runs it.
func New(o Options) (*Agent, error) {
	if o.Fleet == nil {
		return nil, fmt.Errorf("agent: no fleet")
	}
	if o.MaxFunctions <= 0 {
		o.MaxFunctions = 16
	}
	if o.Scan <= 0 {
		o.Scan = 500 * time.Millisecond
	}
	if o.Log == nil {
		o.Log = func(Event) {}
	}
	u, err := url.Parse(o.Server)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("--server %q: want ws://HOST:PORT/v1/opamp (or wss://, http://, https://)", o.Server)
	}
	a := &Agent{o: o, wake: make(chan struct{}, 1), procs: map[int]*proc{}, started: make(chan startResult)}
	switch u.Scheme {
	case "ws", "wss":
		a.client = client.NewWebSocket(logger{a})
	case "http", "https":
		hc := client.NewHTTP(logger{a})
		if o.Poll > 0 {
			hc.SetPollingInterval(o.Poll)
		}
		a.client = hc
	default:
		return nil, fmt.Errorf("--server %q: scheme %q: want ws, wss, http or https", o.Server, u.Scheme)
	}
	if (u.Scheme == "ws" || u.Scheme == "http") && o.TLS != nil && len(o.TLS.Certificates) > 0 {
		return nil, fmt.Errorf("--server %q: a client certificate is given, but %s:// is not TLS (wss://, https://)", o.Server, u.Scheme)
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	a.uid = types.InstanceUid(id)
	return a, nil
}

func (a *Agent) log(what string, pid int, s *set, format string, args ...any) {
	ev := Event{Time: time.Now(), What: what, Pid: pid, Msg: fmt.Sprintf(format, args...)}
	if s != nil {
		i := s.index
		ev.Set = &i
	}
	a.o.Log(ev)
}

func (a *Agent) poke() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Run connects to the server and keeps the sets it asks for until ctx ends; then it
// removes every probe it placed and disconnects.
func (a *Agent) Run(ctx context.Context) error {
	host, _ := os.Hostname()
	desc := &protobufs.AgentDescription{
		IdentifyingAttributes: []*protobufs.KeyValue{
			kv("service.name", "gosdt-agent"),
			kv("service.instance.id", uuid.UUID(a.uid).String()),
			kv("host.name", host),
		},
		NonIdentifyingAttributes: []*protobufs.KeyValue{
			kv("os.type", runtime.GOOS),
			kv("host.arch", runtime.GOARCH),
			kv("process.pid", fmt.Sprint(os.Getpid())),
		},
	}
	if err := a.client.SetAgentDescription(desc); err != nil {
		return err
	}
	a.mu.Lock()
	a.effective = a.effectiveLocked()
	a.mu.Unlock()
	if err := a.client.SetHealth(a.health(time.Now())); err != nil {
		return err
	}
	caps := protobufs.AgentCapabilities_AgentCapabilities_ReportsStatus |
		protobufs.AgentCapabilities_AgentCapabilities_AcceptsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsRemoteConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsEffectiveConfig |
		protobufs.AgentCapabilities_AgentCapabilities_ReportsHealth
	if err := a.client.SetCapabilities(&caps); err != nil {
		return err
	}
	err := a.client.Start(ctx, types.StartSettings{
		OpAMPServerURL: a.o.Server,
		TLSConfig:      a.o.TLS,
		Header:         a.o.Header,
		InstanceUid:    a.uid,
		Callbacks: types.Callbacks{
			OnConnect: func(context.Context) { a.setConn(true) },
			OnConnectFailed: func(_ context.Context, err error) {
				a.setConn(false)
			},
			OnError: func(_ context.Context, e *protobufs.ServerErrorResponse) {
				a.log("opamp", 0, nil, "the server says: %s", e.GetErrorMessage())
			},
			OnMessage: func(_ context.Context, m *types.MessageData) {
				a.setConn(true)
				if m.RemoteConfig != nil {
					a.mu.Lock()
					a.next = m.RemoteConfig
					a.mu.Unlock()
					a.poke()
				}
			},
			GetEffectiveConfig: func(context.Context) (*protobufs.EffectiveConfig, error) {
				a.mu.Lock()
				defer a.mu.Unlock()
				return a.effective, nil
			},
			// The agent stays with the server it was given: another one offered by this
			// one would mix two servers' sets.
			OnOpampConnectionSettings: func(context.Context, *protobufs.OpAMPConnectionSettings) error {
				return fmt.Errorf("sdtctl agent keeps the server of its --server flag")
			},
			OnConnectionSettings: func(context.Context, *protobufs.ConnectionSettingsOffers) error {
				return fmt.Errorf("sdtctl agent keeps the server of its --server flag")
			},
		},
	})
	if err != nil {
		return fmt.Errorf("opamp: %w", err)
	}
	a.loop(ctx)
	// Every probe goes before the server hears the agent leave.
	for _, p := range a.procs {
		for _, r := range p.runs {
			a.stopRun(p, r, "the agent stopped")
		}
	}
	a.stops.Wait()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return a.client.Stop(sctx)
}

func kv(k, v string) *protobufs.KeyValue {
	return &protobufs.KeyValue{Key: k, Value: &protobufs.AnyValue{Value: &protobufs.AnyValue_StringValue{StringValue: v}}}
}

func (a *Agent) setConn(ok bool) {
	a.mu.Lock()
	changed := a.conn.ok != ok || (!ok && !a.conn.failing)
	if ok {
		a.conn.ok, a.conn.failing = true, false
	} else if !a.conn.failing {
		a.conn.ok, a.conn.failing, a.conn.since = false, true, time.Now()
	}
	a.mu.Unlock()
	if changed {
		if ok {
			a.log("connected", 0, nil, "connected to %s", a.o.Server)
		} else {
			a.log("disconnected", 0, nil, "cannot reach %s", a.o.Server)
		}
		a.poke()
	}
}

const tick = 250 * time.Millisecond

func (a *Agent) loop(ctx context.Context) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			// Starts under way end: their sessions are stopped as they come.
			for a.starting() > 0 {
				r := <-a.started
				if r.sess != nil {
					a.stopSession(r.sess)
				}
				a.procs[r.pid].startDone(r.key)
			}
			return
		case <-t.C:
		case <-a.wake:
		case r := <-a.started:
			a.startDone(r)
		}
		now := time.Now()
		a.mu.Lock()
		next := a.next
		a.next = nil
		lost := time.Duration(0)
		if a.conn.failing {
			lost = now.Sub(a.conn.since)
		}
		a.mu.Unlock()
		a.lostFor = lost
		if next != nil {
			a.configure(next, now)
		}
		if now.Sub(a.scanned) >= a.o.Scan {
			a.scan(now)
		}
		a.reconcile(now)
		a.budgets(now)
		a.finishApply()
		if a.dirty {
			a.report(now)
		}
	}
}

func (a *Agent) starting() int {
	n := 0
	for _, p := range a.procs {
		n += len(p.starting)
	}
	return n
}

func (p *proc) startDone(key string) { delete(p.starting, key) }

// configure takes a remote configuration: refused, it changes nothing and says FAILED;
// taken, it replaces the sets (those it keeps unchanged keep running) and says
// APPLYING until every matching process has its sets, then APPLIED or FAILED.
func (a *Agent) configure(rc *protobufs.AgentRemoteConfig, now time.Time) {
	hash := rc.GetConfigHash()
	var body []byte
	var ctype string
	if f := rc.GetConfig().GetConfigMap()[ConfigKey]; f != nil {
		body, ctype = f.GetBody(), f.GetContentType()
	}
	if bytes.Equal(hash, a.hash) && bytes.Equal(body, a.body) && a.hash != nil {
		return // the same again (a reconnection): its status stands
	}
	a.status(hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLYING, "")
	fail := func(err error) {
		// The server hears of this configuration last: one still applying says
		// nothing more (its sets run on, as the effective configuration shows).
		a.pending = nil
		a.log("config", 0, nil, "refused, nothing changed: %v", err)
		a.status(hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED, err.Error())
	}
	switch ctype {
	case "", "text/yaml", "application/yaml", "application/x-yaml", "text/x-yaml":
	default:
		fail(fmt.Errorf("%s: content type %q: want text/yaml", ConfigKey, ctype))
		return
	}
	cfg, err := Parse(body)
	if err != nil {
		fail(err)
		return
	}
	if err := a.check(cfg); err != nil {
		fail(err)
		return
	}
	old := map[string]*set{}
	for _, s := range a.sets {
		old[s.e.key] = s // kept with its start: an ended set stays ended
	}
	var sets []*set
	for i, e := range cfg.Probes {
		s := old[e.key]
		if s == nil || slices.ContainsFunc(sets, func(x *set) bool { return x == s }) {
			s = &set{e: e, since: now}
		}
		s.index = i
		sets = append(sets, s)
	}
	a.sets, a.body, a.hash = sets, body, hash
	for _, p := range a.procs {
		for k := range p.removed {
			if !a.has(k) {
				delete(p.removed, k)
				delete(p.notes, k)
			}
		}
	}
	a.log("config", 0, nil, "%d probe sets", len(sets))
	a.pending = &pendingApply{hash: hash}
	a.dirty = true
}

func (a *Agent) has(key string) bool {
	return slices.ContainsFunc(a.sets, func(s *set) bool { return s.e.key == key })
}

// check asks every process a configuration's sets match what their specs match there,
// before anything is placed: a spec a process refuses, or more run-time probed
// functions in one process than MaxFunctions, refuse the whole configuration.
func (a *Agent) check(cfg *Config) error {
	a.scan(time.Now())
	for _, pid := range a.pids() {
		p := a.procs[pid]
		funcs := map[string]bool{}
		for i := range cfg.Probes {
			e := &cfg.Probes[i]
			if !e.Matches(p.Service, p.Command) {
				continue
			}
			if e.Budget.CPU != 0 {
				if _, err := ProcCPU(pid); err != nil {
					return fmt.Errorf("probes[%d]: pid %d: a cpu budget cannot be measured: %v", i, pid, err)
				}
			}
			pl, err := a.o.Fleet.Plan(pid, e.Specs)
			if errors.Is(err, ErrGone) {
				break // it exited meanwhile: nothing to check there
			}
			if err != nil {
				return fmt.Errorf("probes[%d]: pid %d (%s): %v", i, pid, p.Service, err)
			}
			for _, f := range pl.Functions {
				funcs[f] = true
			}
		}
		if len(funcs) > a.o.MaxFunctions {
			return fmt.Errorf("pid %d (%s): the sets would place run-time probes on %d functions: at most %d (sdtctl agent --max-functions)",
				pid, p.Service, len(funcs), a.o.MaxFunctions)
		}
	}
	return nil
}

func (a *Agent) pids() []int {
	var pids []int
	for pid := range a.procs {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	return pids
}

func (a *Agent) status(hash []byte, st protobufs.RemoteConfigStatuses, msg string) {
	a.log("status", 0, nil, "%s%s", strings.TrimPrefix(st.String(), "RemoteConfigStatuses_"), prefixed(": ", msg))
	if err := a.client.SetRemoteConfigStatus(&protobufs.RemoteConfigStatus{LastRemoteConfigHash: hash, Status: st, ErrorMessage: msg}); err != nil {
		a.log("opamp", 0, nil, "status: %v", err)
	}
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// scan finds the processes that came and those that went.
func (a *Agent) scan(now time.Time) {
	a.scanned = now
	seen := map[int]bool{}
	for _, pr := range a.o.Fleet.Processes() {
		seen[pr.Pid] = true
		if a.procs[pr.Pid] != nil {
			continue
		}
		p := &proc{Process: pr, runs: map[string]*run{}, starting: map[string]bool{}, removed: map[string]string{}, notes: map[string]string{}}
		p.cpu, _ = ProcCPU(pr.Pid)
		p.cpuAt = now
		a.procs[pr.Pid] = p
		a.log("process", pr.Pid, nil, "%s (%s, %s)", pr.Service, pr.Command, pr.GoVersion)
		a.dirty = true
	}
	for pid, p := range a.procs {
		if seen[pid] || len(p.starting) > 0 {
			continue
		}
		for _, r := range p.runs {
			a.stopRun(p, r, "the process is gone")
		}
		delete(a.procs, pid)
		a.log("process", pid, nil, "gone")
		a.dirty = true
	}
}

// active reports whether a set should run now: its time to live not over, the server
// not away for longer than it allows.
func (a *Agent) active(s *set, now time.Time) bool {
	if s.ended == "" && now.Sub(s.since) >= s.e.ttl {
		s.ended = "its time to live (" + s.e.ttl.String() + ") ended"
		a.log("stop", 0, s, "%s", s.ended)
		a.dirty = true
	}
	return s.ended == "" && a.lostFor < s.e.lost
}

func (a *Agent) reconcile(now time.Time) {
	want := map[string]*set{}
	for _, s := range a.sets {
		if a.active(s, now) {
			want[s.e.key] = s
		}
	}
	for _, pid := range a.pids() {
		p := a.procs[pid]
		for key, r := range p.runs {
			select {
			case <-r.sess.Done():
				delete(p.runs, key)
				p.removed[key] = fmt.Sprintf("ended: %v", r.sess.Err())
				a.log("stop", pid, r.s, "%s", p.removed[key])
				a.stopSession(r.sess)
				a.dirty = true
				continue
			default:
			}
			if want[key] == nil {
				why := "withdrawn by the server"
				switch {
				case r.s.ended != "":
					why = r.s.ended
				case a.has(key):
					why = fmt.Sprintf("the server is unreachable for %v (server_timeout %v)", a.lostFor.Round(time.Second), r.s.e.lost)
				}
				a.stopRun(p, r, why)
			}
		}
		for _, s := range a.sets {
			key := s.e.key
			if want[key] == nil || p.runs[key] != nil || p.starting[key] || p.removed[key] != "" || !s.e.Matches(p.Service, p.Command) {
				continue
			}
			if s.e.Budget.CPU != 0 && !p.baseOK {
				continue // its CPU without sets is measured first
			}
			p.starting[key] = true
			e := s.e
			go a.start(pid, key, &e)
		}
	}
}

func (a *Agent) start(pid int, key string, e *Entry) {
	r := startResult{pid: pid, key: key}
	defer func() { a.started <- r }()
	pl, err := a.o.Fleet.Plan(pid, e.Specs)
	if err != nil {
		r.err = err
		return
	}
	var notes []string
	if len(pl.Missing) > 0 {
		notes = append(notes, "no probe matches "+strings.Join(pl.Missing, ", "))
	}
	if len(pl.Refused) > 0 {
		notes = append(notes, "refused: "+strings.Join(pl.Refused, "; "))
	}
	r.note = strings.Join(notes, "; ")
	if pl.Probes == 0 {
		return // nothing to place here: said in its note
	}
	if len(pl.Functions) > a.o.MaxFunctions {
		r.err = fmt.Errorf("would place run-time probes on %d functions: at most %d", len(pl.Functions), a.o.MaxFunctions)
		return
	}
	r.sess, r.err = a.o.Fleet.Start(pid, e)
}

func (a *Agent) startDone(r startResult) {
	p := a.procs[r.pid]
	p.startDone(r.key)
	a.dirty = true
	var s *set
	for _, x := range a.sets {
		if x.e.key == r.key {
			s = x
		}
	}
	if r.note != "" {
		p.notes[r.key] = r.note
	}
	switch {
	case r.err != nil:
		p.removed[r.key] = "failed: " + r.err.Error()
		a.log("start", r.pid, s, "%s", p.removed[r.key])
		if a.pending != nil {
			a.pending.fails = append(a.pending.fails, fmt.Sprintf("pid %d (%s): %v", r.pid, p.Service, r.err))
		}
	case r.sess == nil:
		p.removed[r.key] = "nothing placed: " + r.note
		a.log("start", r.pid, s, "%s", p.removed[r.key])
	case s == nil || !a.active(s, time.Now()):
		a.stopSession(r.sess) // withdrawn while it started
	default:
		p.runs[r.key] = &run{s: s, sess: r.sess, started: time.Now()}
		a.log("start", r.pid, s, "probes on%s", prefixed("; ", r.note))
	}
}

func (a *Agent) stopRun(p *proc, r *run, why string) {
	delete(p.runs, r.s.e.key)
	if why != "" && a.has(r.s.e.key) && r.s.ended == "" && !strings.HasPrefix(why, "the server is unreachable") {
		p.removed[r.s.e.key] = why
	}
	a.log("stop", p.Pid, r.s, "%s", why)
	a.stopSession(r.sess)
	a.dirty = true
}

func (a *Agent) stopSession(s Session) {
	a.stops.Go(func() {
		if sum := s.Stop(); sum != "" {
			a.log("summary", 0, nil, "%s", sum)
		}
	})
}

// budgets measures what the sets cost each process, once a second, and removes a set
// whose cost passes its budget.
func (a *Agent) budgets(now time.Time) {
	for _, pid := range a.pids() {
		p := a.procs[pid]
		if now.Sub(p.cpuAt) < time.Second {
			continue
		}
		// A set's CPU is judged on whole windows after its start: placing its probes
		// (a stop-the-world per batch of sites) is paid once, not every second.
		from := p.cpuAt
		c, err := ProcCPU(pid)
		if err == nil {
			p.share = float64(c-p.cpu) / float64(now.Sub(p.cpuAt))
			// The baseline is the process without sets; one found running sets of
			// budgets other than cpu is measured with them (else a cpu budget would
			// wait for ever).
			if len(p.runs) == 0 && len(p.starting) == 0 || !p.baseOK {
				p.base, p.baseOK = p.share, true
			}
			p.cpu, p.cpuAt = c, now
		}
		for _, r := range p.runs {
			b := r.s.e.Budget
			switch {
			case b.CPU != 0 && err == nil && from.After(r.started):
				if over := (p.share - p.base) * 100; over > float64(b.CPU) {
					a.budgetOut(p, r, fmt.Sprintf("over budget: %.1f%% of a CPU above the %.1f%% it used before the set (budget %v%%)", over, p.base*100, float64(b.CPU)))
				}
			case b.Fires != 0:
				n, ferr := r.sess.Fires()
				if ferr != nil {
					continue
				}
				if !r.firesAt.IsZero() {
					r.lastRate = float64(n-r.fires) / now.Sub(r.firesAt).Seconds()
					if r.lastRate > float64(b.Fires) {
						a.budgetOut(p, r, fmt.Sprintf("over budget: %.0f fires/s (budget %v/s)", r.lastRate, float64(b.Fires)))
						continue
					}
				}
				r.fires, r.firesAt = n, now
			}
		}
	}
}

func (a *Agent) budgetOut(p *proc, r *run, why string) {
	a.log("budget", p.Pid, r.s, "%s", why)
	a.stopRun(p, r, why)
}

// finishApply says APPLIED or FAILED when every process a new configuration matches
// has its sets started or refused.
func (a *Agent) finishApply() {
	if a.pending == nil || a.starting() > 0 {
		return
	}
	// Sets still to start (a cpu budget waits for its baseline) keep it APPLYING.
	now := time.Now()
	for _, p := range a.procs {
		for _, s := range a.sets {
			if s.ended == "" && a.lostFor < s.e.lost && now.Sub(s.since) < s.e.ttl && s.e.Matches(p.Service, p.Command) &&
				p.runs[s.e.key] == nil && p.removed[s.e.key] == "" {
				return
			}
		}
	}
	pa := a.pending
	a.pending = nil
	if len(pa.fails) > 0 {
		a.status(pa.hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_FAILED,
			"not applied in every process: "+strings.Join(pa.fails, "; ")+" (the others run it: see "+StateKey+" in the effective configuration)")
		return
	}
	a.status(pa.hash, protobufs.RemoteConfigStatuses_RemoteConfigStatuses_APPLIED, "")
}

// report sends the effective configuration and the health of every process.
func (a *Agent) report(now time.Time) {
	a.dirty = false
	a.mu.Lock()
	a.effective = a.effectiveLocked()
	a.mu.Unlock()
	if err := a.client.UpdateEffectiveConfig(context.Background()); err != nil {
		a.log("opamp", 0, nil, "effective configuration: %v", err)
	}
	if err := a.client.SetHealth(a.health(now)); err != nil {
		a.log("opamp", 0, nil, "health: %v", err)
	}
}

// State is what the agent reports under StateKey.
type State struct {
	Sets      []SetState     `json:"sets"`
	Processes []ProcessState `json:"processes"`
}

type SetState struct {
	Index   int    `json:"index"`
	Entry   Entry  `json:"entry"`
	Since   string `json:"since"`
	Ended   string `json:"ended,omitempty"`
	Expires string `json:"expires,omitempty"`
}

type ProcessState struct {
	Process
	Running  []int           `json:"running"` // indexes of its sets that run
	Starting []int           `json:"starting,omitempty"`
	Removed  map[int]string  `json:"removed,omitempty"` // why a set does not run there
	Notes    map[int]string  `json:"notes,omitempty"`   // functions refused, specs without probes
	CPU      float64         `json:"cpu_percent"`       // of one CPU, the last second
	BaseCPU  float64         `json:"base_cpu_percent,omitempty"`
	Fires    map[int]float64 `json:"fires_per_s,omitempty"`
}

func (a *Agent) state() State {
	st := State{Sets: []SetState{}, Processes: []ProcessState{}}
	idx := map[string]int{}
	for _, s := range a.sets {
		idx[s.e.key] = s.index
		ss := SetState{Index: s.index, Entry: s.e, Since: s.since.UTC().Format(time.RFC3339), Ended: s.ended}
		if s.ended == "" {
			ss.Expires = s.since.Add(s.e.ttl).UTC().Format(time.RFC3339)
		}
		st.Sets = append(st.Sets, ss)
	}
	for _, pid := range a.pids() {
		p := a.procs[pid]
		ps := ProcessState{Process: p.Process, Running: []int{}, CPU: round1(p.share * 100)}
		if p.baseOK {
			ps.BaseCPU = round1(p.base * 100)
		}
		for key, r := range p.runs {
			ps.Running = append(ps.Running, r.s.index)
			if r.lastRate > 0 {
				if ps.Fires == nil {
					ps.Fires = map[int]float64{}
				}
				ps.Fires[r.s.index] = round1(r.lastRate)
			}
			_ = key
		}
		sort.Ints(ps.Running)
		for key := range p.starting {
			if i, ok := idx[key]; ok {
				ps.Starting = append(ps.Starting, i)
			}
		}
		for key, why := range p.removed {
			if i, ok := idx[key]; ok {
				if ps.Removed == nil {
					ps.Removed = map[int]string{}
				}
				ps.Removed[i] = why
			}
		}
		for key, n := range p.notes {
			if i, ok := idx[key]; ok {
				if ps.Notes == nil {
					ps.Notes = map[int]string{}
				}
				ps.Notes[i] = n
			}
		}
		st.Processes = append(st.Processes, ps)
	}
	return st
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// effectiveLocked is the configuration in force (its sets with their defaults) and the
// state of every process.
func (a *Agent) effectiveLocked() *protobufs.EffectiveConfig {
	var entries []Entry
	for _, s := range a.sets {
		entries = append(entries, s.e)
	}
	y, _ := yaml.Marshal(&Config{Probes: entries})
	if len(entries) == 0 {
		y = []byte("probes: []\n")
	}
	js, _ := json.Marshal(a.state())
	return &protobufs.EffectiveConfig{ConfigMap: &protobufs.AgentConfigMap{ConfigMap: map[string]*protobufs.AgentConfigFile{
		ConfigKey: {Body: y, ContentType: "text/yaml"},
		StateKey:  {Body: js, ContentType: "application/json"},
	}}}
}

// health is the agent's, with one component per process: its sets and what failed.
func (a *Agent) health(now time.Time) *protobufs.ComponentHealth {
	h := &protobufs.ComponentHealth{Healthy: true, StatusTimeUnixNano: uint64(now.UnixNano()), ComponentHealthMap: map[string]*protobufs.ComponentHealth{}}
	running := 0
	for _, ps := range a.state().Processes {
		c := &protobufs.ComponentHealth{Healthy: len(ps.Removed) == 0, StatusTimeUnixNano: uint64(now.UnixNano())}
		c.Status = fmt.Sprintf("%s (%s, %s): %d sets running", ps.Service, ps.Command, ps.GoVersion, len(ps.Running))
		var errs []string
		for i, why := range ps.Removed {
			errs = append(errs, fmt.Sprintf("set %d: %s", i, why))
		}
		sort.Strings(errs)
		c.LastError = strings.Join(errs, "; ")
		h.ComponentHealthMap[fmt.Sprintf("process:%d", ps.Pid)] = c
		running += len(ps.Running)
	}
	h.Status = fmt.Sprintf("%d gosdt processes, %d sets running", len(a.procs), running)
	return h
}

// logger says the OpAMP client's errors as events.
type logger struct{ a *Agent }

func (l logger) Debugf(context.Context, string, ...any) {}
func (l logger) Errorf(_ context.Context, format string, args ...any) {
	l.a.log("opamp", 0, nil, format, args...)
}
