package sdt

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// The control server answers sdtctl over a unix socket (see server_linux.go for the
// socket and the peer check, internal/ctlproto for the protocol). This file is the
// platform-independent part: one goroutine per connection, and the holds that tie
// what a connection enabled to its life.

// persistOwner holds what sdtctl enable switched on: it outlives the connection,
// until an sdtctl disable releases it.
var persistOwner = newOwner("sdtctl enable")

// matchKeys resolves a spec to hold keys. Call with reg.mu held.
func matchKeys(specText string) ([]holdKey, error) {
	sp, err := parseSpec(specText)
	if err != nil {
		return nil, ctlproto.Errorf(ctlproto.CodeBadSpec, "%v", err)
	}
	reg.resolve()
	sites, wides := reg.match(sp)
	if len(sites) == 0 && len(wides) == 0 {
		return nil, ctlproto.Errorf(ctlproto.CodeNoMatch, "%q matches no probe", specText)
	}
	return keysOf(sites, wides), nil
}

// matchAll resolves specs to hold keys; any spec that fails fails them all. Call with
// reg.mu held.
func matchAll(specs []string) ([]holdKey, error) {
	var all []holdKey
	for _, sp := range specs {
		keys, err := matchKeys(sp)
		if err != nil {
			return nil, err
		}
		all = append(all, keys...)
	}
	return all, nil
}

// hold enables what specs match on behalf of o. All specs are checked before
// anything changes. n counts the sites switched on; already the sites that matched
// but were on before (held by another owner, or by o itself).
func hold(o *owner, specs []string) (n, already int, err error) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	keys, err := matchAll(specs)
	if err != nil {
		return 0, 0, err
	}
	if err := switchable(fmt.Sprint(specs), keys); err != nil {
		return 0, 0, err
	}
	seen := map[holdKey]bool{}
	for _, k := range keys {
		if k.s != nil && !seen[k] && k.s.on.Load() {
			already++
		}
		seen[k] = true
	}
	n, err = reg.holdLocked(o, keys, true, fmt.Sprint(specs))
	if err != nil {
		return 0, 0, err
	}
	return n, already, nil
}

// release drops all of o's holds, disabling what nobody else holds.
func release(o *owner) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	var keys []holdKey
	for _, s := range reg.sites {
		if slices.Contains(s.owners, o) {
			keys = append(keys, holdKey{s: s})
		}
	}
	for _, p := range reg.probes {
		if slices.Contains(p.wideOwners, o) {
			keys = append(keys, holdKey{p: p})
		}
	}
	if _, err := reg.holdLocked(o, keys, false, "release of "+o.name); err != nil {
		warnf("control: disabling what %s held: %v", o.name, err)
	}
}

// unhold is an explicit disable from a client: it releases that connection's and the
// persistent (sdtctl enable) holds on what specs match and disables what no other
// owner holds. kept counts the keys others still hold, keptBy names those owners.
func unhold(o *owner, specs []string) (n, kept int, keptBy []string, err error) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	keys, err := matchAll(specs)
	if err != nil {
		return 0, 0, nil, err
	}
	what := fmt.Sprint(specs)
	if n, err = reg.holdLocked(o, keys, false, what); err != nil {
		return 0, 0, nil, err
	}
	m, err := reg.holdLocked(persistOwner, keys, false, what)
	if err != nil {
		return n, 0, nil, err
	}
	var sh *StillHeldError
	if errors.As(stillHeld(what, keys), &sh) {
		kept, keptBy = sh.Sites, sh.Holders
	}
	return n + m, kept, keptBy, nil
}

// errCode maps an sdt error to a protocol error.
func errCode(err error) error {
	var pe *ctlproto.Error
	switch {
	case errors.As(err, &pe):
		return err
	case errors.Is(err, ErrMalformedSpec):
		return ctlproto.Errorf(ctlproto.CodeBadSpec, "%v", err)
	case errors.Is(err, ErrNoMatch):
		return ctlproto.Errorf(ctlproto.CodeNoMatch, "%v", err)
	case errors.Is(err, ErrNotSupported):
		return ctlproto.Errorf(ctlproto.CodeNotSupported, "%v", err)
	}
	return ctlproto.Errorf(ctlproto.CodeInternal, "%v", err)
}

// conn is one client.
type conn struct {
	c     net.Conn
	wmu   sync.Mutex
	o     *owner // what the connection holds, released when it ends
	name  string // "sdtctl pid N", for the owners it creates
	names map[[2]uintptr]string
}

func (cc *conn) send(r *ctlproto.Response) error {
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	cc.c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	return ctlproto.WriteFrame(cc.c, r)
}

func (cc *conn) fail(err error) error { return cc.send(ctlproto.ErrorResponse(errCode(err))) }

// serve runs one connection to its end. It never panics: a panic is recovered,
// logged, and ends the connection; the connection's holds are released in any case.
func serve(c net.Conn) {
	name := "sdtctl"
	if pid := peerPid(c); pid > 0 {
		name = fmt.Sprintf("sdtctl pid %d", pid)
	}
	cc := &conn{c: c, o: newOwner(name), name: name, names: map[[2]uintptr]string{}}
	defer c.Close()
	defer release(cc.o)
	defer func() {
		if r := recover(); r != nil {
			warnf("control: recovered from panic serving a client: %v\n%s", r, debug.Stack())
			cc.fail(fmt.Errorf("internal error"))
		}
	}()

	reqs := make(chan *ctlproto.Request)
	errc := make(chan error, 1)
	go func() {
		defer close(reqs)
		for {
			b, err := ctlproto.ReadFrame(c)
			if err == nil {
				var q *ctlproto.Request
				if q, err = ctlproto.DecodeRequest(b); err == nil {
					reqs <- q
					continue
				}
			}
			errc <- err
			return
		}
	}()
	next := func() (*ctlproto.Request, bool) {
		q, ok := <-reqs
		if !ok {
			if err := <-errc; err != io.EOF {
				cc.fail(err)
			}
		}
		return q, ok
	}

	q, ok := next()
	if !ok {
		return
	}
	if q.Op != ctlproto.OpHello || q.Version != ctlproto.Version {
		cc.fail(ctlproto.Errorf(ctlproto.CodeVersion, "want hello with version %d first", ctlproto.Version))
		return
	}
	if cc.send(helloResponse()) != nil {
		return
	}
	for {
		q, ok := next()
		if !ok {
			return
		}
		var err error
		switch q.Op {
		case ctlproto.OpList:
			err = cc.list(q)
		case ctlproto.OpEnable:
			o := cc.o
			if q.Persist {
				o = persistOwner
			}
			var n, already int
			if n, already, err = hold(o, q.Specs); err == nil {
				err = cc.send(&ctlproto.Response{Kind: ctlproto.KindOK, N: n, AlreadyOn: already})
			}
		case ctlproto.OpDisable:
			var n, kept int
			var keptBy []string
			if n, kept, keptBy, err = unhold(cc.o, q.Specs); err == nil {
				err = cc.send(&ctlproto.Response{Kind: ctlproto.KindOK, N: n, Kept: kept, KeptBy: keptBy})
			}
		case ctlproto.OpTrace, ctlproto.OpStat:
			var closed bool
			closed, err = cc.stream(q, reqs)
			if closed {
				return
			}
		case ctlproto.OpStop:
			err = cc.send(&ctlproto.Response{Kind: ctlproto.KindEnd})
		default:
			err = ctlproto.Errorf(ctlproto.CodeBadRequest, "%s: not here", q.Op)
		}
		if err != nil {
			if cc.fail(err) != nil {
				return
			}
		}
	}
}

func helloResponse() *ctlproto.Response {
	r := &ctlproto.Response{Kind: ctlproto.KindHello, Version: ctlproto.Version, Pid: os.Getpid(), Command: command()}
	list, _ := List("")
	r.NProbes = len(list)
	for _, pi := range list {
		for _, s := range pi.Sites {
			if s.Enabled {
				r.SitesOn++
			}
		}
	}
	return r
}

func command() string {
	if b, err := os.ReadFile("/proc/self/cmdline"); err == nil && len(b) > 0 {
		for i, c := range b {
			if c == 0 {
				b = b[:i]
				break
			}
		}
		return filepath.Base(string(b))
	}
	return filepath.Base(os.Args[0])
}

func (cc *conn) list(q *ctlproto.Request) error {
	list, err := List(q.Spec)
	if err != nil {
		return err
	}
	r := &ctlproto.Response{Kind: ctlproto.KindList, Probes: []ctlproto.Probe{}}
	for _, pi := range list {
		p := ctlproto.Probe{Name: pi.String(), Enabled: pi.Enabled, Hits: pi.Hits, HeldBy: pi.HeldBy, Sites: []ctlproto.Site{}}
		for _, a := range pi.Args {
			p.Args = append(p.Args, ctlproto.Arg{Name: a.Name, Type: a.Type})
		}
		for _, s := range pi.Sites {
			p.Sites = append(p.Sites, ctlproto.Site{Addr: uint64(s.Addr), File: s.File, Line: s.Line, Kind: s.Kind,
				State: s.State.String(), Enabled: s.Enabled, Reason: s.Reason, Hits: s.Hits, HeldBy: s.HeldBy})
		}
		r.Probes = append(r.Probes, p)
	}
	return cc.send(r)
}

// stream runs a trace or a stat until its count or duration is reached, the client
// sends stop, or the connection ends (closed true). The end is sent only after the
// stream's holds are released, so that a client that has read it sees its probes off.
func (cc *conn) stream(q *ctlproto.Request, reqs <-chan *ctlproto.Request) (closed bool, err error) {
	end, closed, err := cc.runStream(q, reqs)
	if end != nil {
		err = cc.send(end)
	}
	return closed, err
}

// runStream is stream up to its end, which it returns to be sent.
func (cc *conn) runStream(q *ctlproto.Request, reqs <-chan *ctlproto.Request) (end *ctlproto.Response, closed bool, err error) {
	var agg *aggregation
	if q.Op == ctlproto.OpStat {
		by, err := parseAggBy(q.By)
		if err != nil {
			return nil, false, ctlproto.Errorf(ctlproto.CodeBadRequest, "%v", err)
		}
		val := -1
		if q.Hist != "" {
			if val, err = argIndex(q.Hist); err != nil {
				return nil, false, ctlproto.Errorf(ctlproto.CodeBadRequest, "hist: %v", err)
			}
		}
		agg = newAggregation(by, val, val >= 0)
	}
	sub, err := subscribe(q.Spec, agg)
	if err != nil {
		return nil, false, errCode(err)
	}
	defer sub.close()
	o := newOwner(cc.name + " " + q.Op)
	if _, _, err := hold(o, []string{q.Spec}); err != nil {
		return nil, false, errCode(err)
	}
	defer release(o)
	var events chan event
	var lost func() uint64
	if agg == nil {
		events, lost = dispatchTo(sub.bit)
		defer undispatch(sub.bit)
	}
	if err := cc.send(&ctlproto.Response{Kind: ctlproto.KindStarted}); err != nil {
		return nil, true, nil
	}
	var deadline <-chan time.Time
	if q.DurationMS > 0 {
		t := time.NewTimer(time.Duration(q.DurationMS) * time.Millisecond)
		defer t.Stop()
		deadline = t.C
	}
	var tick <-chan time.Time
	if agg != nil {
		iv := time.Second
		if q.IntervalMS > 0 {
			iv = time.Duration(q.IntervalMS) * time.Millisecond
		}
		t := time.NewTicker(iv)
		defer t.Stop()
		tick = t.C
	}
	drops0 := ringDrops()
	drops := func() uint64 {
		d := ringDrops() - drops0
		if lost != nil {
			d += lost()
		}
		return d
	}
	lastStat := time.Now()
	statNow := func() error {
		lastStat = time.Now()
		return cc.send(&ctlproto.Response{Kind: ctlproto.KindStat, Stat: toStat(agg.snapshot())})
	}
	count := 0
	for {
		select {
		case e := <-events:
			if err := cc.send(&ctlproto.Response{Kind: ctlproto.KindEvent, Event: cc.event(&e)}); err != nil {
				return nil, true, nil
			}
			if count++; q.Count > 0 && count >= q.Count {
				return &ctlproto.Response{Kind: ctlproto.KindEnd, Drops: drops()}, false, nil
			}
		case <-tick:
			if err := statNow(); err != nil {
				return nil, true, nil
			}
		case <-deadline:
			if agg != nil && time.Since(lastStat) > 100*time.Millisecond {
				statNow()
			}
			return &ctlproto.Response{Kind: ctlproto.KindEnd, Drops: drops()}, false, nil
		case r, ok := <-reqs:
			if !ok {
				return nil, true, nil
			}
			if r.Op != ctlproto.OpStop {
				cc.fail(ctlproto.Errorf(ctlproto.CodeBadRequest, "%s during %s: send stop first", r.Op, q.Op))
				continue
			}
			if agg != nil {
				statNow()
			}
			return &ctlproto.Response{Kind: ctlproto.KindEnd, Drops: drops()}, false, nil
		}
	}
}

func toStat(s aggSnapshot) *ctlproto.Stat {
	st := &ctlproto.Stat{Time: time.Now(), By: s.By, Value: s.Value, Overflow: s.Overflow, Rows: []ctlproto.Row{}}
	for _, r := range s.Rows {
		row := ctlproto.Row{Key: r.Key, Count: r.Count, Sum: r.Sum, Min: r.Min, Max: r.Max, Avg: r.Avg}
		for _, b := range r.Hist {
			row.Hist = append(row.Hist, ctlproto.Bucket{Low: b.Low, Count: b.Count})
		}
		st.Rows = append(st.Rows, row)
	}
	return st
}

// event converts a ring event for the wire.
func (cc *conn) event(e *event) *ctlproto.Event {
	p := probeByID(e.Probe)
	out := &ctlproto.Event{Time: eventTime(e.Time), Site: uint64(e.Site)}
	if p == nil {
		out.Probe = "?"
		return out
	}
	k := [2]uintptr{p.self(), e.Site}
	name, ok := cc.names[k]
	if !ok {
		module, fn := p.module, ""
		reg.mu.Lock()
		for _, s := range p.sites {
			if s.Addr == e.Site {
				module, fn = s.Module, s.Func
			}
		}
		reg.mu.Unlock()
		name = p.provider + ":" + module + ":" + fn + ":" + p.name
		cc.names[k] = name
	}
	out.Probe = name
	for i := 0; i < int(e.NArgs) && i < len(p.args); i++ {
		out.Args = append(out.Args, ctlproto.Arg{Name: p.args[i], Type: p.types[i], Value: e.format(i), Cut: e.Trunc&(1<<i) != 0})
	}
	return out
}

// The dispatcher reads the process's ring and hands each event to the traces whose
// bits it carries. It runs while at least one trace does; a trace whose channel is
// full loses the event (counted).
var disp struct {
	mu      sync.Mutex
	outs    [64]*traceOut
	running bool
}

type traceOut struct {
	ch   chan event
	lost sync.Mutex
	n    uint64
}

func dispatchTo(bit uint64) (chan event, func() uint64) {
	o := &traceOut{ch: make(chan event, 1024)}
	disp.mu.Lock()
	defer disp.mu.Unlock()
	disp.outs[bitIndex(bit)] = o
	if !disp.running {
		disp.running = true
		go dispatch()
	}
	return o.ch, func() uint64 { o.lost.Lock(); defer o.lost.Unlock(); return o.n }
}

func undispatch(bit uint64) {
	disp.mu.Lock()
	defer disp.mu.Unlock()
	disp.outs[bitIndex(bit)] = nil
}

func bitIndex(bit uint64) int { return bits.TrailingZeros64(bit) }

func dispatch() {
	r := procRing.Load()
	var e event
	idle := 0
	for {
		if !r.get(&e) {
			disp.mu.Lock()
			any := false
			for _, o := range disp.outs {
				any = any || o != nil
			}
			if !any {
				disp.running = false
				disp.mu.Unlock()
				return
			}
			disp.mu.Unlock()
			if idle++; idle > 100 {
				time.Sleep(time.Millisecond)
			} else {
				time.Sleep(50 * time.Microsecond)
			}
			continue
		}
		idle = 0
		disp.mu.Lock()
		for m := e.Subs; m != 0; m &= m - 1 {
			o := disp.outs[bitIndex(m&-m)]
			if o == nil {
				continue
			}
			select {
			case o.ch <- e:
			default:
				o.lost.Lock()
				o.n++
				o.lost.Unlock()
			}
		}
		disp.mu.Unlock()
	}
}
