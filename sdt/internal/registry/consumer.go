package registry

import (
	"errors"
	"math"
	"reflect"
)

// MaxArgs is the most arguments a probe has (sdt.Define0..Define6).
const MaxArgs = 6

// Errors of the registry, which sdt exports under the same names.
var (
	ErrNoMatch       = errors.New("spec matches no probe")
	ErrMalformedSpec = errors.New("malformed probe spec")
	ErrNotSupported  = errors.New("not supported on this platform")
)

// Kind is how a fire's argument is stored in its slot.
type Kind uint8

const (
	Int    Kind = iota // signed integers: the slot is int64(v)
	Uint               // unsigned integers and uintptr: uint64(v)
	Bool               // 0 or 1
	Float              // math.Float64bits(float64(v))
	String             // the slot is unused: the value is in Args.Strs

	// Unknown is a Probe's argument kind that only its fires tell: an fbt
	// argument of a named type.
	Unknown Kind = 0xff
)

// KindOf is the slot kind of an argument type: from its underlying kind, so that
// named types (type Reason int) work.
func KindOf(t reflect.Type) Kind {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return Int
	case reflect.Bool:
		return Bool
	case reflect.Float32, reflect.Float64:
		return Float
	case reflect.String:
		return String
	}
	return Uint
}

// Args is one fire's arguments, built only when a consumer is attached. Strs are
// not copied: they die with the fire, so a consumer copies what it keeps. Only the
// first N arguments are the fire's, and of Strs only those of kind String.
type Args struct {
	N     int
	Kinds Kinds
	Slots [MaxArgs]uint64
	Strs  [MaxArgs]string
}

// Kinds is the kinds of a fire's arguments: eight bytes, so that a fire copies its
// probe's in one move (the last two are unused).
type Kinds [8]Kind

// Firing is one admitted fire as sinks see it, built only when a consumer is
// attached: in the P's own firing, which the next fire on the P rewrites (or on the
// firing goroutine's stack). Sinks run on the firing goroutine while it is pinned to
// its P, whose id is P (0 <= P < GOMAXPROCS): per-P buffers and counters are written
// without atomic read-modify-writes.
type Firing struct {
	P     int
	Probe uint32  // Probe.ID
	Site  uintptr // the site's address; 0 for a fire not attributed to a site
	Ret   uintptr // the fire call's return address: where its call stack starts; NoStack: none
	Goid  uint64  // with Ret NoStack: the id of the goroutine that fired, 0 if unknown
	Ticks uint64  // with Ret NoStack: when it fired, on the CPU counter control stamps with; 0: when delivered
	Args
}

// NoStack is a Firing's Ret when the firing goroutine's stack is not the fire's: a
// run-time return probe's events are delivered later, by another goroutine.
const NoStack = ^uintptr(0)

// Int is argument i as an integer, what aggregations key, sum and quantize:
// unsigned values above MaxInt64 saturate, floats are truncated (NaN is 0),
// strings count their bytes.
func (a *Args) Int(i int) int64 { return SlotInt(a.Kinds[i], a.Slots[i], len(a.Strs[i])) }

// SlotInt is Int for a value stored elsewhere: its kind, its slot, and for a string
// its length.
func SlotInt(k Kind, s uint64, strLen int) int64 {
	switch k {
	case Uint:
		if s > math.MaxInt64 {
			return math.MaxInt64
		}
	case Float:
		f := math.Float64frombits(s)
		switch {
		case f != f:
			return 0
		case f >= math.MaxInt64:
			return math.MaxInt64
		case f <= math.MinInt64:
			return math.MinInt64
		}
		return int64(f)
	case String:
		return int64(strLen)
	}
	return int64(s)
}

// Owner is one holder of probes on: the program, the signal mode, a USDT tracer, a
// control connection, a trace or an aggregation. Owners are compared by pointer;
// Name is what sdt.List and sdtctl list show.
type Owner struct{ Name string }

// Sink consumes fires: package consume's traces and aggregations. Fire is called on
// the firing goroutine, pinned to its P: it must not block (no locks, no channel
// operations, no system calls), and must not keep f.
type Sink interface {
	Fire(f *Firing)
}

// Probe describes a probe definition a subscription covers: what its fires are
// named and carry.
type Probe struct {
	ID             uint32
	Provider, Name string
	Module         string // the package that defined it: the module of unattributed fires
	Args, Types    []string
	Kinds          []Kind // of each argument; Unknown where only a fire tells (fbt)
	Sites          []Site
}

// Site is where a probe's fires come from.
type Site struct {
	Addr         uintptr
	Module, Func string
	File         string
	Line         int
}

// FullName is the DTrace name of the probe's fires from site addr (0: unattributed).
func (p *Probe) FullName(addr uintptr) string {
	module, fn := p.Module, ""
	if s := p.Site(addr); s != nil {
		module, fn = s.Module, s.Func
	}
	return p.Provider + ":" + module + ":" + fn + ":" + p.Name
}

// Site returns the site at addr, nil when there is none.
func (p *Probe) Site(addr uintptr) *Site {
	if addr == 0 {
		return nil
	}
	for i := range p.Sites {
		if p.Sites[i].Addr == addr {
			return &p.Sites[i]
		}
	}
	return nil
}

// Folder is a Sink that folds one integer argument of each fire into a row per probe
// and site (SubscribeFolds): a fire of a probe that has the argument comes to
// Fold, without a Firing; the others to Fire.
type Folder interface {
	Sink
	// Fold folds x, the argument's value (as Args.Int reads it) of a fire of probe
	// from site (0: not attributed), on P p, to which the caller is pinned (as
	// Fire). slot, the site's index among the program's sites (-1: not attributed),
	// is the same for every fire of the site and small: where the folder may keep
	// the site's row at hand.
	Fold(p, slot int, probe uint32, site uintptr, x int64)
	// FoldTable is where the folder keeps, for a fire of a site on P p, the cell
	// that fire folds into, once Fold has made it: a fire that finds its cell
	// there folds into it (FoldCell.Fold) without calling Fold.
	FoldTable() *FoldTable
}

// Count is how many fires of a probe came from one of its sites (Site 0: fires not
// attributed to a site), as SubscribeCounts reads them.
type Count struct {
	Probe uint32
	Site  uintptr
	N     uint64
}
