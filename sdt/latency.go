package sdt

// Latency probes time a block of code. Start reads the clock only while the probe is
// enabled (its check is a guard site: sealed, one jump while off); End fires the probe
// with the nanoseconds since Start as its first argument, latency_ns (its check is a
// fire site). So while nobody traces, a timed block costs two jumps and no clock read.
//
//	var reqLatency = sdt.DefineLatency1[int]("http", "request", "status")
//
//	t := reqLatency.Start()
//	...
//	reqLatency.End(t, status)
//
// or, for a whole function, a deferred closure that names the probe variable:
//
//	t := funcLatency.Start()
//	defer func() { funcLatency.End(t) }()
//
// The shorter `defer funcLatency.End(funcLatency.Start())` works too, but the deferred
// call captures the probe's address: its End compares the flag through a pointer,
// which is no site, so it keeps its branch check (a load and a compare while off).
//
// A Stamp taken while the probe was off is zero, and End ignores it: a probe switched
// on between Start and End fires from the next block on, never with a bogus duration.

// Stamp is the monotonic time at which a timed block started, or 0 if its probe was
// off then.
type Stamp int64

// Latency is a latency probe with no argument besides latency_ns. Define it once, as a
// package-level variable, with DefineLatency; copying it is a vet error.
type Latency struct {
	head
	handlers *handlers[func(int64)]
}

// DefineLatency defines the latency probe provider:name, whose one argument is
// latency_ns.
//
//go:noinline
func DefineLatency(provider, name string) Latency {
	return Latency{head: define(provider, name, []string{"latency_ns"}, []argT{argType[int64]()}),
		handlers: new(handlers[func(int64)])}
}

// Start returns the time, if p is enabled; else 0, without reading the clock.
func (p *Latency) Start() Stamp {
	if p.on != 0 {
		return Stamp(nanotime())
	}
	return 0
}

// End fires p with the nanoseconds since t, if p is enabled and t was taken while it
// was.
func (p *Latency) End(t Stamp) {
	if p.on != 0 {
		p.fire(t)
	}
}

// Enabled reports whether p is on.
func (p *Latency) Enabled() bool { return p.on != 0 }

// Attach adds an in-process handler of the latencies, called while p is enabled.
func (p *Latency) Attach(h func(latencyNS int64)) (detach func()) { return p.handlers.add(h) }

// fire is the out-of-line half of End: the clock is read here, not at the site.
//
//go:noinline
func (p *Latency) fire(t Stamp) {
	ret := callerPC()
	if t == 0 {
		return
	}
	pid, s, ok := p.admit(ret)
	if !ok {
		return
	}
	d := nanotime() - int64(t)
	if cs := p.consumers(); cs != nil {
		var v firing
		v.N, v.Kinds = cs.n, cs.kinds
		setArg(&v.Args, 0, &d)
		cs.emit(pid, s, ret, &v)
	}
	procUnpin()
	for _, h := range p.handlers.list.load() {
		(*h)(d)
	}
}

// Latency1 is a latency probe with one argument after latency_ns (a status, a
// size). Define it once, as a package-level variable, with DefineLatency1.
type Latency1[A Arg] struct {
	head
	handlers *handlers[func(int64, A)]
}

// DefineLatency1 defines the latency probe provider:name, whose arguments are
// latency_ns and aName.
//
//go:noinline
func DefineLatency1[A Arg](provider, name, aName string) Latency1[A] {
	return Latency1[A]{head: define(provider, name, []string{"latency_ns", aName}, []argT{argType[int64](), argType[A]()}),
		handlers: new(handlers[func(int64, A)])}
}

// Start returns the time, if p is enabled; else 0, without reading the clock.
func (p *Latency1[A]) Start() Stamp {
	if p.on != 0 {
		return Stamp(nanotime())
	}
	return 0
}

// End fires p with the nanoseconds since t and a, if p is enabled and t was taken
// while it was.
func (p *Latency1[A]) End(t Stamp, a A) {
	if p.on != 0 {
		p.fire(t, a)
	}
}

// Enabled reports whether p is on.
func (p *Latency1[A]) Enabled() bool { return p.on != 0 }

// Attach adds an in-process handler of the latencies, called while p is enabled.
func (p *Latency1[A]) Attach(h func(latencyNS int64, a A)) (detach func()) {
	return p.handlers.add(h)
}

// fire is the out-of-line half of End.
//
//go:noinline
func (p *Latency1[A]) fire(t Stamp, a A) {
	ret := callerPC()
	if t == 0 {
		return
	}
	pid, s, ok := p.admit(ret)
	if !ok {
		return
	}
	d := nanotime() - int64(t)
	if cs := p.consumers(); cs != nil {
		var v firing
		v.N, v.Kinds = cs.n, cs.kinds
		setArg(&v.Args, 0, &d)
		setArg(&v.Args, 1, &a)
		cs.emit(pid, s, ret, &v)
	}
	procUnpin()
	for _, h := range p.handlers.list.load() {
		(*h)(d, a)
	}
}
