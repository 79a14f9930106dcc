package registry

import "github.com/gosdt/gosdt/sdt/internal/fprobe"

// Run-time return events written by the return path itself into the buffers of the
// traces that consume them (fprobe.SetDirect), rather than put into the function's
// ring for drain to deliver: a trace's buffers are memory the process shares with
// sdtctl, and a return written there outlives the process (an exit, a panic,
// SIGKILL) where one waiting in a ring dies with it. A trace with a predicate is
// written so too, its predicate run by the return path (fprobe's Pred), but for one
// beyond a function's 64th trace (the return path's mask), which drain delivers to
// as to every other consumer; drain never delivers to a sink the return path writes.

// DirectBufs and DirectBuf are a trace's buffers as the return path writes them.
type (
	DirectBufs = fprobe.DirectBufs
	DirectBuf  = fprobe.DirectBuf
)

// Pred is a trace's predicate as the return path runs it (fprobe.Pred).
type Pred = fprobe.Pred

// NewDirectBufs makes a trace's DirectBufs (fprobe.NewDirectBufs).
func NewDirectBufs(lost *uint64, filters bool) *DirectBufs {
	return fprobe.NewDirectBufs(lost, filters)
}

// A DirectSink is a Sink whose fires of run-time return probes the return path may
// write itself: DirectBufs is its buffers, nil when it needs every fire delivered to
// Fire.
type DirectSink interface {
	Sink
	DirectBufs() *DirectBufs
}

// Argument kinds are fprobe's direct kinds.
const _ = uint(Int-fprobe.DirectInt) + uint(fprobe.DirectInt-Int) + uint(Uint-fprobe.DirectUint) +
	uint(Bool-fprobe.DirectBool) + uint(Float-fprobe.DirectFloat) + uint(String-fprobe.DirectString) +
	uint(fprobe.DirectString-String)

// maxFiltering is how many sinks of a function the return path may write whose
// predicate it runs: the first 64 (retWhere's mask of those it skips).
const maxFiltering = 64

// setDirect tells fprobe which of c's sinks, the new consumers of rf's return probe,
// the return path writes, and keeps the rest for drain (drainCons). Call with reg.mu
// held (rebuild).
func (rf *runtimeFunc) setDirect(c *Consumers) {
	if c == nil {
		rf.f.SetDirect(nil)
		rf.drainCons.Store(nil)
		return
	}
	var bufs []*DirectBufs
	filters := false
	rest := *c
	rest.Sinks, rest.one = nil, nil
	for _, e := range c.Sinks {
		if ds, ok := e.s.(DirectSink); ok && e.f.wide {
			if b := ds.DirectBufs(); b != nil && (!b.Filters() || len(bufs) < maxFiltering) {
				bufs = append(bufs, b)
				filters = filters || b.Filters()
				continue
			}
		}
		rest.Sinks = append(rest.Sinks, e)
	}
	if len(bufs) == 0 {
		rf.f.SetDirect(nil)
		rf.drainCons.Store(c)
		return
	}
	l := rf.args.Load()
	set := &fprobe.DirectSet{Ringless: len(rest.Sinks) == 0 && len(rest.Folds) == 0, Probe: c.id, Site: uint64(rf.f.Entry), Bufs: bufs, Filters: filters}
	for _, x := range l.results {
		set.Results = append(set.Results, fprobe.DirectArg{Word: uint8(x.word), Kind: uint8(x.kind), Size: x.size, Iface: x.iface})
	}
	var drain *Consumers
	if !set.Ringless {
		if len(rest.Sinks) == 1 && rest.Sinks[0].f.all && rest.Sinks[0].f.wide {
			rest.one = rest.Sinks[0].s
		}
		drain = &rest
	}
	// drain's consumers first: from the moment the return path writes a sink, drain
	// no longer delivers to it (one that had the event from the ring already did).
	rf.drainCons.Store(drain)
	rf.f.SetDirect(set)
}
