package control

import (
	"github.com/gosdt/gosdt/sdt/internal/consume"
	"github.com/gosdt/gosdt/sdt/internal/ctlserver"
)

// Start starts the control plane: package sdt's init calls it, the registry complete,
// and a program need not. Unless SDT_CONTROL=off, it arms the automatic Serve. Calls
// after the first do nothing.
func Start() { ctlserver.Start() }

// Serve makes this process reachable by sdtctl now: it binds the control socket
// and serves it, if it does not already. Without it, sdt's initialisation has it
// done 20 ms later, unless SDT_CONTROL=off. Linux only: elsewhere an error.
func Serve() error { return ctlserver.Serve() }

// Stop stops serving sdtctl and removes the socket, until Serve; clients connected
// keep their connections. A program that must not be controlled calls it first thing
// in main (then it never binds), or is started with SDT_CONTROL=off.
func Stop() { ctlserver.Stop() }

// Socket is the path of this process's control socket, "" while it serves none.
func Socket() string { return ctlserver.Socket() }

type (
	// Trace receives the fires of the probes a spec matched, as events, from OpenTrace
	// until Close. While open it holds those probes on, as its own owner: sdt.Disable
	// elsewhere does not switch them off (sdt.List names it among their holders).
	//
	// Each P has a buffer of its own (TraceOptions.BufSize bytes), which a fire writes
	// without waiting; a fire that finds its buffer full is dropped and counted (Drops).
	// Events of one P arrive in the order they fired; those of different Ps may not.
	//
	// Its methods (an alias: go doc lists them under sdt/internal/consume):
	//
	//	Read(evs []Event, wait time.Duration) (int, error)          // the events arrived, oldest first per P
	//	Each(wait time.Duration, f func(*Record) bool) (int, error) // the same, without a copy
	//	Drops() uint64                                              // events lost to a full buffer
	//	Filtered() uint64                                           // fires TraceOptions.Where rejected
	//	Close() error                                               // releases the trace's probes
	Trace = consume.Trace

	// TraceOptions says how a trace records.
	TraceOptions = consume.TraceOptions
)

// OpenTrace switches on the probes spec matches (a DTrace probe description, as for
// sdt.Enable) and records their fires until Close. Errors match sdt.ErrNoMatch,
// sdt.ErrMalformedSpec and sdt.ErrNotSupported, and ErrBudget for buffers (GOMAXPROCS
// x BufSize) over the memory budget; bad options are reported before anything is
// switched.
func OpenTrace(spec string, o TraceOptions) (*Trace, error) {
	return consume.OpenTrace(spec, o)
}

// Event is one fire.
type Event = consume.Event

// Arg is one argument of an event.
type Arg = consume.Arg

// Record is one event as Trace.Each hands it over: a view of the trace's buffer,
// valid only during the call.
//
// Its methods (an alias: go doc lists them under sdt/internal/consume): Probe,
// Site, Time, Goroutine, NumArgs, Kind(i), Int(i), Value(i), Bytes(i), Cut(i),
// Stack(pcs) and Event (a copy).
type Record = consume.Record

// PredicateError is a predicate (TraceOptions.Where, AggOptions.Where) that does not
// compile for one of the probes a spec matched, named by Probe, or for any probe (its
// syntax: Probe ""): nothing was switched on. Its Caret method gives two lines: the
// expression, then a '^' under the error's position.
type PredicateError = consume.PredicateError

// ErrClosed is what a closed Trace's Read returns.
var ErrClosed = consume.ErrClosed

// ErrBudget is matched (errors.Is) by the error of a trace or aggregation that
// would take more memory than its budget allows.
var ErrBudget = consume.ErrBudget

// Buffer sizes of a trace, per P. The default is DTrace's: on a 2-core VM it carries
// a million events a second from one P with 99.9% delivered (bench/README.md).
const (
	DefaultBufSize = consume.DefaultBufSize
	MinBufSize     = consume.MinBufSize
	MaxBufSize     = consume.MaxBufSize
)

// StringMax is the bytes kept of one string argument of a traced event.
const StringMax = consume.StringMax

// MaxStack is the most return addresses a record's stack holds.
const MaxStack = consume.MaxStack

// Aggregation folds the fires of the probes a spec matched into rows, as sdtctl
// stat shows them, from OpenAggregation until Close, without recording each event.
// While open it holds those probes on, as its own owner.
//
// Each P folds into cells of its own (no cache line is written by two Ps); reading
// merges them, as DTrace merges its per-CPU aggregation buffers.
//
// Its methods (an alias: go doc lists them under sdt/internal/consume):
//
//	Snapshot() Snapshot // everything folded since it opened
//	Interval() Snapshot // what was folded since the previous Interval
//	Close() error       // releases the aggregation's probes
type Aggregation = consume.Aggregation

// AggOptions says what an aggregation's rows are keyed by and what they fold. An
// argument is named "argN" (N from 0) or by its name in the probe's definition;
// probes that have no such argument are not folded.
type AggOptions = consume.AggOptions

// OpenAggregation switches on the probes spec matches (as sdt.Enable) and folds their
// fires until Close. Errors match sdt.ErrNoMatch, sdt.ErrMalformedSpec,
// sdt.ErrNotSupported and ErrBudget; bad options (an argument no probe spec matches
// has) are reported before anything is switched. Keys past the memory budget are
// not folded: their fires are counted in Snapshot.Overflow.
func OpenAggregation(spec string, o AggOptions) (*Aggregation, error) {
	return consume.OpenAggregation(spec, o)
}

// Snapshot is an aggregation's rows at one moment, by count, largest first.
type Snapshot = consume.Snapshot

// Row is one key's fold. Sum, Min, Max, Avg and Hist are of the Value argument.
type Row = consume.Row

type (
	// Bucket is a histogram bucket: values from Low up to the next bucket's Low. In a
	// power-of-two histogram Low is the bound nearest zero; in a linear one the bucket
	// below Linear.Low has Low math.MinInt64.
	Bucket = consume.Bucket

	// Linear is a linear histogram: buckets of Step from Low up to High, one below Low
	// and one from High up.
	Linear = consume.Linear
)

// MaxRows bounds the keys one P folds into for one aggregation.
const MaxRows = consume.MaxRows

// AggStackDepth is how many return addresses a stack key holds.
const AggStackDepth = consume.AggStackDepth
