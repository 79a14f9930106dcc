package consume

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// plane is whether package sdt has started the control plane (Start), at the end of
// its init: until then the consumers and the server do not touch the registry.
var plane struct{ started atomic.Bool }

// Start marks the registry complete and takes the clock's first pair: package sdt's
// init, through the server's Start; false if it had already.
func Start() bool {
	if plane.started.Load() {
		return false
	}
	startClock()
	plane.started.Store(true)
	return true
}

// Started is nil once Start has run: the consumers and the server touch the registry
// only then.
func Started() error {
	if !plane.started.Load() {
		return errNoRegistry
	}
	return nil
}

// errNoRegistry: package sdt has not finished its init, or is not in the program.
var errNoRegistry = errors.New("control: no probe registry yet (package sdt has not finished its initialisation)")

// optionError is a consumer's options in error (what an sdtctl client asked for
// wrong: the server answers badrequest).
type optionError struct{ msg string }

func (e *optionError) Error() string { return e.msg }

// Not inlined: every caller would carry its own copy of the call to fmt, and no
// caller is on a hot path.
//
//go:noinline
func badOption(format string, args ...any) error {
	return &optionError{fmt.Sprintf(format, args...)}
}

// ErrClosed is what a closed Trace's Read returns.
var ErrClosed = errors.New("control: trace closed")

// consumer is a sink subscribed to what a spec matches and holding it on, as its own
// owner, until close. Traces, aggregations and the server's streams are consumers.
type consumer struct {
	o      *registry.Owner
	probes map[uint32]*registry.Probe // what it covers, by id
	cancel func()
	once   sync.Once

	mu    sync.Mutex
	names map[[2]uintptr]string // full names by probe id and site, as asked for
}

// consumers counts the consumers open, for the tests that check that a stream's end
// leaves none behind.
var consumers atomic.Int64

// open subscribes sink to spec, tells ready what it covers, and then holds what spec
// matches on behalf of who: in this order, so that no fire of a probe it switches on
// is missed.
func open(who, spec string, sink registry.Sink, ready func([]*registry.Probe) error) (*consumer, error) {
	c, _, err := openAs(who, spec, sink, ready, feedFires, "")
	return c, err
}

// How a sink subscribes (openAs).
const (
	feedFires  = iota // every fire to Fire (registry.Subscribe)
	feedCounts        // counts by probe and site, read from sdt's counters (SubscribeCounts)
	feedFolds         // one argument's value to Fold (SubscribeFolds; the sink is a Folder)
)

// openAs is open, the sink subscribed as feed says (value: the argument a folder
// folds). It returns how to read the counts of a counting sink.
func openAs(who, spec string, sink registry.Sink, ready func([]*registry.Probe) error, feed int, value string) (*consumer, func([]registry.Count) []registry.Count, error) {
	if err := Started(); err != nil {
		return nil, nil, err
	}
	var (
		err    error
		probes []*registry.Probe
		counts func([]registry.Count) []registry.Count
		cancel func()
	)
	switch feed {
	case feedCounts:
		probes, counts, cancel, err = registry.SubscribeCounts(spec, sink)
	case feedFolds:
		probes, cancel, err = registry.SubscribeFolds(spec, value, sink.(registry.Folder))
	default:
		probes, cancel, err = registry.Subscribe(spec, sink)
	}
	if err != nil {
		return nil, nil, err
	}
	c := &consumer{o: &registry.Owner{Name: who}, probes: map[uint32]*registry.Probe{}, cancel: cancel}
	for _, p := range probes {
		c.probes[p.ID] = p
	}
	if ready != nil {
		if err := ready(probes); err != nil {
			cancel()
			return nil, nil, err
		}
	}
	if _, _, err := registry.Hold(c.o, []string{spec}); err != nil {
		cancel()
		return nil, nil, err
	}
	consumers.Add(1)
	return c, counts, nil
}

// release releases the consumer's holds, switching off what nobody else holds; its
// sink still takes what is fired meanwhile.
func (c *consumer) release() { registry.Release(c.o) }

// flush delivers to the sinks every fire made before it that waits to be delivered
// (registry.Flush): what a consumer reports after it counts them all.
func (c *consumer) flush() { registry.Flush() }

// close releases the consumer's holds, switching off what nobody else holds, and
// then detaches its sink. A fire admitted just before may still reach the sink.
func (c *consumer) close() {
	c.once.Do(func() {
		registry.Release(c.o)
		c.cancel()
		consumers.Add(-1)
	})
}

// soleFuncSite is the site of a function probe (fbt) that has one, whose fires all
// name that function (a run-time probe's entry, a function's entry or its one
// return): a stack's row is named with it. 0 for any other probe.
func (c *consumer) soleFuncSite(id uint32) uintptr {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.probes[id]; p != nil && p.Provider == "fbt" && len(p.Sites) > 0 {
		for _, s := range p.Sites[1:] {
			if s.Func != p.Sites[0].Func || s.Module != p.Sites[0].Module {
				return 0
			}
		}
		return p.Sites[0].Addr
	}
	return 0
}

// name is the full name of a fire of probe id at site, "?" for an unknown probe.
func (c *consumer) name(id uint32, site uintptr) string {
	k := [2]uintptr{uintptr(id), site}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n, ok := c.names[k]; ok {
		return n
	}
	n := "?"
	if p := c.probes[id]; p != nil {
		n = p.FullName(site)
	}
	if c.names == nil {
		c.names = map[[2]uintptr]string{}
	}
	c.names[k] = n
	return n
}

// Warnf tells the process's stderr what the control plane could not do.
//
// Not inlined: every caller would carry its own copy of the call to fmt, and no
// caller is on a hot path.
//
//go:noinline
func Warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "sdt: control: "+format+"\n", args...)
}
