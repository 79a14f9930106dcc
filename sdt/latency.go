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
//
// The types (Latency, Latency1) are written by sdt/internal/gen with the probe types,
// from the same fire template.

// Stamp is the monotonic time at which a timed block started, or 0 if its probe was
// off then.
type Stamp int64
