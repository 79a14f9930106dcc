package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"debug/buildinfo"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"

	"github.com/gosdt/gosdt/cmd/sdtctl/internal/agent"
	"github.com/gosdt/gosdt/cmd/sdtctl/internal/otelexport"
	"github.com/gosdt/gosdt/internal/ctlproto"
)

const agentUsage = `usage: sdtctl agent --server URL [flags]

An OpAMP agent (OpenTelemetry's agent management protocol): reports the gosdt processes
of this host that it may control (service name, from each one's OTEL_SERVICE_NAME, else
its command; pid; Go version) to the OpAMP server at URL (ws://HOST:4320/v1/opamp, or
http(s):// for OpAMP over plain HTTP), and keeps in them the probe sets the server's
remote configuration asks for: YAML under the config map key gosdt.yaml,

  probes:
    - service: checkout            # glob on the service name (or name: a glob on the command)
      specs: ["fbt:example.com/checkout/store::"]
      export: spans                # spans, metrics, or both (default)
      by: probe                    # metrics keyed as stat --by: probe (default), site, argN
      ttl: 10m                     # default 10m, 1s to 24h, counted from the set's first start
      server_timeout: 1m           # the set ends when the server is unreachable this long (default 1m)
      budget: {cpu: 2%}            # or {fires: 50000/s}: over it, the set leaves the process

Each set goes to every matching process, and to those that start later, and is exported
as export does (spans and metrics over OTLP, as the OTEL_EXPORTER_OTLP_* variables say).
A configuration is checked whole before anything changes: unknown fields, specs that do
not parse or that a process refuses, values out of range, more run-time probed functions
in a process than --max-functions: FAILED with the reason, and the sets in force stay.
Otherwise APPLYING, then APPLIED once every matching process runs its sets, or FAILED
naming the processes that refused. The effective configuration reported holds the sets
in force (gosdt.yaml) and, per process, what runs and why a set does not
(gosdt.state.json); health has one component per process.
A cpu budget is the process's CPU share (of one CPU, from /proc/PID/stat, every second)
above the share it used in the second before its sets; a fires budget is its probes'
fires per second. A set over its budget is removed from that process, with the figure.
Sets end when their ttl ends, when the server withdraws them (a configuration without
them, or without gosdt.yaml), and when the server cannot be reached for their
server_timeout (they start again when it can). The probes are held by the agent's
control connections: when the agent ends (Ctrl-C, SIGTERM) or is killed, the processes
release them.
The configuration names processes, probe specs and export settings only: never a
command, a file or a library. Only processes of the agent's user are reached (every
user's, as root), as with every sdtctl command.

Environment:
  OTEL_EXPORTER_OTLP_*, OTEL_TRACES_SAMPLER ...  where and how spans and metrics go (sdtctl export --help)
  OTEL_EXPORTER_OTLP_CERTIFICATE                  CA certificate (PEM) that wss:// and https:// servers are
                                                  verified with (default: the system's roots); as for OTLP,
                                                  which then wants an https:// endpoint too
  OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE, _CLIENT_KEY   client certificate and key (PEM), for both
  OTEL_EXPORTER_OTLP_HEADERS                      are not sent to the OpAMP server: --header is

With --json, what the agent does is one JSON object per line on stdout; else text lines
on stderr. Exit 0 when stopped (every probe removed first), 2 on a bad flag or URL,
1 when the certificate files are unusable.

Flags:
`

func cmdAgent(args []string, stdout, stderr io.Writer, stop <-chan struct{}) error {
	o := newFlags("agent", stderr, false)
	server := o.fs.String("server", "", "the OpAMP server's `URL` (ws://, wss://, http://, https://)")
	maxFuncs := o.fs.Int("max-functions", manyFuncs, "at most `N` functions with run-time probes in one process, all sets together")
	scan := o.fs.Duration("scan", 500*time.Millisecond, "look for new gosdt processes every `INTERVAL`")
	poll := o.fs.Duration("poll", 5*time.Second, "over http(s)://, ask the server every `INTERVAL`")
	flush := o.fs.Duration("flush-timeout", 5*time.Second, "when a set ends, how long to wait for the collector to take what is left")
	var headers headerFlag
	o.fs.Var(&headers, "header", "`KEY=VALUE` sent to the OpAMP server (repeatable), e.g. Authorization=Bearer ...")
	o.fs.Usage = func() {
		fmt.Fprint(o.fs.Output(), agentUsage)
		o.fs.PrintDefaults()
	}
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fail(exitUsage, "agent: unexpected argument %q", pos[0])
	}
	if *server == "" {
		return fail(exitUsage, "agent: --server URL is required (ws://HOST:4320/v1/opamp)")
	}
	if *maxFuncs <= 0 || *scan < 10*time.Millisecond || *poll <= 0 || *flush < 0 {
		return fail(exitUsage, "agent: --max-functions above 0, --scan at least 10ms, --poll above 0, --flush-timeout 0 or more")
	}
	tlsCfg, err := agentTLS(os.Getenv)
	if err != nil {
		return fail(exitError, "agent: %v", err)
	}
	cfg, err := otelexport.FromEnv(os.Getenv)
	if err != nil {
		return fail(exitUsage, "agent: %v", err)
	}
	if cfg.Interval < ctlproto.MinInterval {
		return fail(exitUsage, "agent: metrics every %v: at least %v", cfg.Interval, ctlproto.MinInterval)
	}
	var out io.Writer = stderr
	if o.json {
		out = stdout
	}
	lw := &otelexport.LockedWriter{W: out}
	logf := func(ev agent.Event) {
		if o.json {
			printJSON(lw, ev)
			return
		}
		var b strings.Builder
		fmt.Fprintf(&b, "sdtctl agent: %s %s", ev.Time.UTC().Format("15:04:05.000"), ev.What)
		if ev.Pid != 0 {
			fmt.Fprintf(&b, " pid %d", ev.Pid)
		}
		if ev.Set != nil {
			fmt.Fprintf(&b, " set %d", *ev.Set)
		}
		fmt.Fprintf(lw, "%s: %s\n", b.String(), ev.Msg)
	}
	otel.SetErrorHandler(&errorReport{w: stderr})
	exps, err := otelexport.NewExporters(context.Background(), cfg, nil)
	if err != nil {
		return fail(exitUsage, "agent: %v", err)
	}
	fl := &agentFleet{cfg: cfg, exps: exps, flush: *flush, known: map[int]agent.Process{}, failed: map[int]bool{}}
	a, err := agent.New(agent.Options{Server: *server, TLS: tlsCfg, Header: headers.h, Fleet: fl,
		MaxFunctions: *maxFuncs, Scan: *scan, Poll: *poll, Log: logf})
	if err != nil {
		return fail(exitUsage, "agent: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	go func() {
		select {
		case <-stop:
		case <-sigs:
		case <-ctx.Done():
		}
		cancel()
	}()
	err = a.Run(ctx)
	sctx, scancel := context.WithTimeout(context.Background(), *flush)
	exps.Shutdown(sctx)
	scancel()
	if err != nil && !errors.Is(err, context.Canceled) {
		return fail(exitError, "agent: %v", err)
	}
	return nil
}

// headerFlag gathers --header KEY=VALUE.
type headerFlag struct{ h http.Header }

func (f *headerFlag) String() string { return "" }
func (f *headerFlag) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(k) == "" {
		return fmt.Errorf("%q: want KEY=VALUE", s)
	}
	if f.h == nil {
		f.h = http.Header{}
	}
	f.h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	return nil
}

// agentTLS is the TLS configuration the OpenTelemetry certificate variables give, nil
// when they give none (the system's roots then serve wss:// and https://).
func agentTLS(getenv func(string) string) (*tls.Config, error) {
	ca, cert, key := getenv("OTEL_EXPORTER_OTLP_CERTIFICATE"), getenv("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE"), getenv("OTEL_EXPORTER_OTLP_CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		b, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CERTIFICATE: %s holds no PEM certificate", ca)
		}
		c.RootCAs = pool
	}
	if (cert == "") != (key == "") {
		return nil, errors.New("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and OTEL_EXPORTER_OTLP_CLIENT_KEY go together")
	}
	if cert != "" {
		kp, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE/_KEY: %v", err)
		}
		c.Certificates = []tls.Certificate{kp}
	}
	return c, nil
}

// agentFleet is the agent's way to the processes: sdtctl's control client, and
// export's per-process export for a set.
type agentFleet struct {
	cfg   otelexport.Config
	exps  *otelexport.Exporters
	flush time.Duration

	mu     sync.Mutex
	known  map[int]agent.Process
	failed map[int]bool // pids that are not gosdt processes of ours: not asked again
}

func (f *agentFleet) Processes() []agent.Process {
	pids := append(candidates(), otherUsers()...)
	slices.Sort(pids)
	pids = slices.Compact(pids)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []agent.Process
	now := map[int]bool{}
	for _, pid := range pids {
		now[pid] = true
		if p, ok := f.known[pid]; ok {
			if !gone(pid) {
				out = append(out, p)
			}
			continue
		}
		if f.failed[pid] {
			continue
		}
		cl, err := dial(pid)
		if err != nil {
			// A process that exited leaves its socket: its pid may come back, another
			// process's. Any other failure stays (not ours, not gosdt).
			if exitCode(err) != exitNoProcess && exitCode(err) != exitExited {
				f.failed[pid] = true
			}
			continue
		}
		cmd := cl.hello.Command
		cl.close()
		p := agent.Process{Pid: pid, Command: cmd, Service: serviceName(pid, cmd), GoVersion: goVersion(pid)}
		f.known[pid] = p
		out = append(out, p)
	}
	for pid := range f.known {
		if !now[pid] || gone(pid) {
			delete(f.known, pid)
		}
	}
	for pid := range f.failed {
		if !now[pid] {
			delete(f.failed, pid)
		}
	}
	return out
}

// serviceName is the service a process says it is (its OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES service.name), else its executable's name; the agent's own
// environment does not name it.
func serviceName(pid int, command string) string {
	res, err := otelexport.Resource(pid, command, func(string) string { return "" })
	if err == nil {
		if v, ok := res.Set().Value(attribute.Key("service.name")); ok && v.AsString() != "" {
			return v.AsString()
		}
	}
	return command
}

func goVersion(pid int) string {
	bi, err := buildinfo.ReadFile(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return ""
	}
	return bi.GoVersion
}

func (f *agentFleet) Plan(pid int, specs []string) (agent.Plan, error) {
	var pl agent.Plan
	cl, err := dial(pid)
	if err != nil {
		return pl, agentErr(err)
	}
	defer cl.close()
	funcs := map[string]bool{}
	for _, s := range specs {
		r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: s})
		if err != nil {
			return pl, agentErr(err)
		}
		if len(r.Probes) == 0 {
			pl.Missing = append(pl.Missing, s)
		}
		pl.Probes += len(r.Probes)
		names, _ := runtimeFuncs(r.Probes)
		for _, n := range names {
			funcs[n] = true
		}
		for _, p := range r.Probes {
			for _, site := range p.Sites {
				if site.State == "refused" {
					pl.Refused = append(pl.Refused, fmt.Sprintf("%s: %s", p.Name, site.Reason))
					break
				}
			}
		}
	}
	for n := range funcs {
		pl.Functions = append(pl.Functions, n)
	}
	slices.Sort(pl.Functions)
	return pl, nil
}

// agentErr is a control client's error as the agent says it: the process exited is
// agent.ErrGone.
func agentErr(err error) error {
	if c := exitCode(err); c == exitExited || c == exitNoProcess {
		return fmt.Errorf("%w: %v", agent.ErrGone, err)
	}
	return err
}

func (f *agentFleet) CPU(pid int) (time.Duration, error) { return agent.ProcCPU(pid) }

// Start runs export's per-process export of e's specs in pid, and waits until the
// process says its streams hold the probes' sites.
func (f *agentFleet) Start(pid int, e *agent.Entry) (agent.Session, error) {
	cl, err := dial(pid)
	if err != nil {
		return nil, agentErr(err)
	}
	cfg := f.cfg
	cfg.Traces = cfg.Traces && e.Spans()
	cfg.Metrics = cfg.Metrics && e.Metrics()
	if !cfg.Traces && !cfg.Metrics {
		cl.close()
		return nil, fmt.Errorf("export %s: OTEL_TRACES_EXPORTER/OTEL_METRICS_EXPORTER turn it off", e.Export)
	}
	s := &agentSession{pid: pid, specs: e.Specs, stop: make(chan struct{}), done: make(chan struct{})}
	eo := &exportOpts{specs: e.Specs, by: e.By, interval: min(cfg.Interval, time.Second), flush: f.flush,
		cfg: cfg, exps: f.exps, out: &s.sum, stderr: &s.sum}
	ex := &exporter{exportOpts: eo, fails: failures{stderr: io.Discard}, seen: map[int]bool{}}
	go func() {
		defer close(s.done)
		_, _, s.err = ex.exportProcess(cl, s.stop)
	}()
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case <-s.done:
			return nil, fmt.Errorf("%v%s", s.err, prefixed(": ", strings.TrimSpace(s.sum.String())))
		case <-time.After(20 * time.Millisecond):
		}
		if held(pid, e.Specs, cfg.Traces, cfg.Metrics) {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("its probes were not on 30s after the export started")
		}
	}
}

func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

// held reports whether every site the specs match in pid that is not refused is held
// by an sdtctl trace stream (spans) and stat stream (metrics).
func held(pid int, specs []string, traces, stats bool) bool {
	cl, err := dial(pid)
	if err != nil {
		return false
	}
	defer cl.close()
	for _, s := range specs {
		r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: s})
		if err != nil {
			return false
		}
		for _, p := range r.Probes {
			for _, site := range p.Sites {
				if site.State == "refused" {
					continue
				}
				tr, st := false, false
				for _, h := range site.HeldBy {
					if strings.HasPrefix(h, "sdtctl pid ") {
						tr = tr || strings.Contains(h, " trace")
						st = st || strings.Contains(h, " stat")
					}
				}
				if (traces && !tr) || (stats && !st) {
					return false
				}
			}
		}
	}
	return true
}

// agentSession is one set's export in one process.
type agentSession struct {
	pid   int
	specs []string
	stop  chan struct{}
	once  sync.Once
	done  chan struct{}
	err   error
	sum   lockedBuffer // what the export said: its summary, its errors
}

func (s *agentSession) Done() <-chan struct{} { return s.done }
func (s *agentSession) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

func (s *agentSession) Stop() string {
	s.once.Do(func() { close(s.stop) })
	<-s.done
	return strings.TrimSpace(s.sum.String())
}

func (s *agentSession) Fires() (uint64, error) {
	cl, err := dial(s.pid)
	if err != nil {
		return 0, err
	}
	defer cl.close()
	var n uint64
	seen := map[string]bool{}
	for _, sp := range s.specs {
		r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: sp})
		if err != nil {
			return 0, err
		}
		for _, p := range r.Probes {
			if !seen[p.Name] {
				seen[p.Name] = true
				n += p.Hits
			}
		}
	}
	return n, nil
}

// lockedBuffer is a strings.Builder several goroutines write.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
