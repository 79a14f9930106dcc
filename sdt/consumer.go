package sdt

// A consumer is an in-process reader of what a spec matches: while it is open it
// holds those probes on (as its own owner) and receives their fires, as events (a
// trace) or folded into an aggregation (a stat). The control server's traces and
// stats are consumers; so is any other in-process reader that needs more than a
// typed handler.
type consumer struct {
	sub    *subscription
	o      *owner
	agg    *aggregation // nil for a trace
	events chan event   // a trace's events; nil for an aggregation
	lost   func() uint64
	drops0 uint64
}

// openConsumer subscribes to what spec matches (a trace when agg is nil) and holds it
// on on behalf of who. Close it when done.
func openConsumer(who, spec string, agg *aggregation) (*consumer, error) {
	since := nanotime()
	sub, err := subscribe(spec, agg)
	if err != nil {
		return nil, err
	}
	c := &consumer{sub: sub, o: newOwner(who), agg: agg, drops0: ringDrops()}
	if _, _, err := hold(c.o, []string{spec}); err != nil {
		sub.close()
		return nil, err
	}
	if agg == nil {
		c.events, c.lost = dispatchTo(sub.bit, sub.probeIDs(), since)
	}
	return c, nil
}

// drops is how many of a trace's events were lost since it opened: the ring was
// full, or the trace did not keep up with the dispatcher.
func (c *consumer) drops() uint64 {
	d := ringDrops() - c.drops0
	if c.lost != nil {
		d += c.lost()
	}
	return d
}

// close stops delivery, releases the consumer's holds (switching off what nobody
// else holds) and detaches it.
func (c *consumer) close() {
	if c.events != nil {
		undispatch(c.sub.bit)
	}
	release(c.o)
	c.sub.close()
}
