package consume

import (
	"fmt"
	"hash/maphash"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gosdt/gosdt/internal/quantize"
	"github.com/gosdt/gosdt/sdt/internal/pred"
	"github.com/gosdt/gosdt/sdt/internal/registry"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Aggregation folds the fires of the probes a spec matched into rows, as sdtctl
// stat shows them, from OpenAggregation until Close, without recording each event.
// While open it holds those probes on, as its own owner.
//
// Each P folds into cells of its own (no cache line is written by two Ps); reading
// merges them, as DTrace merges its per-CPU aggregation buffers.
type Aggregation struct {
	a *aggregation
	c *consumer
}

// AggOptions says what an aggregation's rows are keyed by and what they fold. An
// argument is named "argN" (N from 0) or by its name in the probe's definition;
// probes that have no such argument are not folded.
type AggOptions struct {
	By     string  // "probe" (the default), "site", "stack" (the fire's Go call stack), or an argument: one row per value
	Value  string  // an argument: rows also sum, bound and average it; "": they count only
	Hist   bool    // rows also quantize Value in power-of-two buckets (DTrace's quantize)
	Linear *Linear // rows also quantize Value in linear buckets (DTrace's lquantize)
	Where  string  // a predicate a fire must match to be folded, as TraceOptions.Where
}

// Linear is a linear histogram: buckets of Step from Low up to High, one below Low
// and one from High up.
type Linear struct{ Low, High, Step int64 }

// maxLinear bounds the buckets of a linear histogram.
const maxLinear = 1000

// Snapshot is an aggregation's rows at one moment, by count, largest first.
type Snapshot struct {
	By, Value string
	Hist      string  // "", "quantize" or "linear"
	Linear    *Linear // the buckets of a linear histogram
	Rows      []Row
	// fires not counted: their key would have been row MaxRows+1 of a P, or past the
	// aggregation's memory budget (SDT_MEMORY_TRACE, SDT_MEMORY)
	Overflow uint64
}

// Row is one key's fold. Sum, Min, Max, Avg and Hist are of the Value argument.
type Row struct {
	Key        string
	Count, Sum int64
	Min, Max   int64
	Avg        float64
	Hist       []Bucket // the non-empty buckets, lowest first
}

// Bucket is a histogram bucket: values from Low up to the next bucket's Low. In a
// power-of-two histogram Low is the bound nearest zero; in a linear one the bucket
// below Linear.Low has Low math.MinInt64.
type Bucket struct {
	Low   int64
	Count uint64
}

// MaxRows bounds the keys one P folds into for one aggregation.
const MaxRows = 4096

// OpenAggregation switches on the probes spec matches (as sdt.Enable) and folds their
// fires until Close. Errors match sdt.ErrNoMatch, sdt.ErrMalformedSpec,
// sdt.ErrNotSupported and ErrBudget; bad options (an argument no probe spec matches
// has) are reported before anything is switched. Keys past the memory budget are
// not folded: their fires are counted in Snapshot.Overflow.
func OpenAggregation(spec string, o AggOptions) (*Aggregation, error) {
	return openAggregation("in-process aggregation", spec, o)
}

func openAggregation(who, spec string, o AggOptions) (*Aggregation, error) {
	a, err := newAggregation(o)
	if err != nil {
		return nil, err
	}
	c, counts, err := openAs(who, spec, a, a.resolve, a.feed(), a.o.Value)
	if err != nil {
		a.retire()
		return nil, err
	}
	a.c, a.counts = c, counts
	return &Aggregation{a: a, c: c}, nil
}

// Snapshot reads the aggregation: everything folded since it opened, every fire
// made before the call included (run-time return events too: flushed first).
func (a *Aggregation) Snapshot() Snapshot {
	a.c.flush()
	return a.a.read(false)
}

// Interval reads what was folded since the previous Interval (or since the
// aggregation opened): counts, sums and histograms exactly; the minimum and maximum
// of the fires of the interval, less one that raced with its end by nanoseconds.
// Every fire made before the call is in this interval or an earlier one; a fire
// that raced with the previous read may have its count there and its value and
// bucket here (a row may then have Count 0): the intervals add up to the whole.
func (a *Aggregation) Interval() Snapshot {
	a.c.flush()
	return a.a.read(true)
}

// Close releases the aggregation's probes (switching off what no other owner holds)
// and stops folding, once every fire made before it is folded.
func (a *Aggregation) Close() error {
	a.c.flush()
	a.c.close()
	a.a.retire()
	return nil
}

// Keys of an aggregation.
const (
	byProbe = iota
	bySite
	byArg
	byStack // the fire's Go call stack (aggstack.go)
)

// aggregation folds the fires it is fed (a registry.Sink) into per-P shards.
type aggregation struct {
	o       AggOptions
	by      int
	buckets int // histogram buckets; 0 without
	seed    maphash.Seed
	probes  atomic.Pointer[[]aggProbe] // by probe id; nil until subscribed, and once closed
	limit   uint64                     // the most bytes it may be charged (budget.go)
	charged atomic.Uint64              // bytes charged to the budget; aggClosed once given back
	shards  atomic.Pointer[[]*aggShard]
	// how fires fold a value, and a folding aggregation's cells at hand by P and
	// site; its Gen is the interval fires fold their minimum and maximum into, 0
	// until the first Interval read: till then nobody needs them (its interval is
	// the whole life, whose minimum and maximum every fire folds), and fires skip them
	ft     registry.FoldTable
	missed atomic.Uint64 // fires on a P that had no shard yet
	c      *consumer     // names probes and sites
	// counts reads the fires sdt counts for the aggregation instead of feeding it
	// them (a count by probe or site with no predicate: counting); nil otherwise
	counts func([]registry.Count) []registry.Count

	mu sync.Mutex // readers
	// stackNames: the row names of stack keys (byStack), made once (aggstack.go)
	stackNames map[aggKey]string
	prev       map[*aggCell]*cellRead
	prevCounts map[aggKey]uint64 // what the previous Interval read of counts (counting)
	countBuf   []registry.Count
	grown      int64 // nanotime when grow last looked at GOMAXPROCS
	closed     bool  // retired: no cells at hand (setShards)
}

// feed is how the aggregation is fed. Keyed by probe or by site with no predicate,
// it needs of a fire only its site and (folding a value) one argument: a count is
// what each site's own hit counters, bumped by every fire anyway, already say, so sdt
// is asked for them when the aggregation is read (feedCounts); a value is given to
// Fold, with the site's index, without the firing a sink is built (feedFolds).
// Anything else takes every fire's firing.
func (a *aggregation) feed() int {
	switch {
	case a.by != byProbe && a.by != bySite || a.o.Where != "":
		return feedFires
	case a.o.Value == "":
		return feedCounts
	}
	return feedFolds
}

// aggProbe is where one probe's key and value are.
type aggProbe struct {
	ok    bool
	fast  bool          // ok, keyed by probe or site, no predicate: Fire's fast path
	byArg int           // the key argument (byArg)
	val   int           // the value argument; -1: none
	where *pred.Program // nil: every fire
}

// aggKey is a row's key: probe and site, an integer argument, or a string one.
type aggKey struct {
	x, y uint64
	s    string
	str  bool
}

// aggCell is one key's fold on one P: written by the P's writers only (plain stores,
// pinned), read by readers with atomic loads. Its size is a multiple of a cache line,
// and so is its histogram's, so that no line holds two Ps' cells.
type aggCell struct {
	cellFields
	_ [cellPad]byte
}

type cellFields struct {
	registry.FoldCell // first: the cell sdt's fires fold into (registry.FoldTable)
	key               aggKey
}

func newAggregation(o AggOptions) (*aggregation, error) {
	a := &aggregation{o: o, seed: maphash.MakeSeed(), prev: map[*aggCell]*cellRead{}, grown: rt.Nanotime()}
	switch o.By {
	case "", "probe":
		a.o.By = "probe"
	case "site":
		a.by = bySite
	case "stack":
		a.by = byStack
	default:
		if !validArg(o.By) {
			return nil, badOption("control: aggregation key %q: want probe, site, or an argument (argN or its name)", o.By)
		}
		a.by = byArg
	}
	if o.Value != "" && !validArg(o.Value) {
		return nil, badOption("control: aggregated value %q: want an argument (argN or its name)", o.Value)
	}
	if err := checkWhere(o.Where); err != nil {
		return nil, err
	}
	switch {
	case o.Hist && o.Linear != nil:
		return nil, badOption("control: a histogram is quantized or linear, not both")
	case (o.Hist || o.Linear != nil) && o.Value == "":
		return nil, badOption("control: a histogram needs a value (an argument) to quantize")
	case o.Hist:
		a.buckets = quantize.Buckets
	case o.Linear != nil:
		l := *o.Linear
		if l.Step <= 0 || l.High <= l.Low || (l.High-l.Low)/l.Step > maxLinear || (l.High-l.Low)/l.Step < 1 {
			return nil, badOption("control: linear histogram %d to %d by %d: want Low < High, Step > 0, at most %d buckets",
				l.Low, l.High, l.Step, maxLinear)
		}
		a.o.Linear = &l
		a.buckets = int((l.High-l.Low+l.Step-1)/l.Step) + 2
		a.ft.SetHist(a.buckets, true, l.Low, l.High, l.Step)
	}
	if a.buckets == quantize.Buckets && a.o.Linear == nil {
		a.ft.SetHist(a.buckets, false, 0, 0, 0)
	}
	procs := max(runtime.GOMAXPROCS(0), 1)
	allowed := currentAllowance(0)
	need := uint64(procs) * shardCost
	if need > allowed.n || !takeBudget(need) {
		return nil, currentAllowance(0).refuse("an aggregation over "+strconv.Itoa(procs)+" Ps", need)
	}
	a.limit = allowed.own
	a.charged.Store(need)
	shards := make([]*aggShard, procs)
	for i := range shards {
		shards[i] = newAggShard()
	}
	a.setShards(shards)
	return a, nil
}

// What an aggregation takes of the budget, as estimates that err high: a shard with
// its first table, and a cell with its histogram (and the copy an interval read
// keeps of it), its key's string, and its share of the table's slots (twice as many
// as cells, and the smaller table the last growth left to the collector).
const (
	shardCost    = 512
	cellBaseCost = 192 + 4*16
)

// cellCost is what a cell for k takes.
func (a *aggregation) cellCost(k *aggKey) uint64 {
	hist := uint64(a.buckets+7) &^ 7 * 8
	return cellBaseCost + 2*hist + uint64(len(k.s)+15)&^15
}

// aggClosed marks charged once the aggregation has given its budget back.
const aggClosed = 1 << 63

// charge charges n bytes to the aggregation and the process's budget; false, and
// nothing charged, when either has no room or the aggregation is closed. Atomics
// only: the caller may be pinned.
func (a *aggregation) charge(n uint64) bool {
	if !takeBudget(n) {
		return false
	}
	for {
		c := a.charged.Load()
		if c&aggClosed != 0 || c+n > a.limit {
			giveBudget(n)
			return false
		}
		if a.charged.CompareAndSwap(c, c+n) {
			return true
		}
	}
}

// retire stops the aggregation folding and gives its budget back: what charge
// took, whether before or, by a fire under way, racing with this (charge gives
// back what it takes once closed). Its cells are the collector's to free, once
// nothing reads them.
func (a *aggregation) retire() {
	a.probes.Store(nil)
	a.mu.Lock()
	a.closed = true
	a.ft.SetShards(nil) // fires take Fold, which sees probes nil
	a.mu.Unlock()
	if c := a.charged.Or(aggClosed); c&aggClosed == 0 {
		giveBudget(c)
	}
}

// validArg reports whether s can name an argument: argN, or an identifier.
func validArg(s string) bool {
	if s == "" || s == "probe" || s == "site" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}

// argIndex is the index of the argument name names in p: argN, or its name; -1 if p
// has none.
func argIndex(p *registry.Probe, name string) int {
	if len(name) >= 4 && strings.HasPrefix(name, "arg") {
		if n, err := strconv.Atoi(name[3:]); err == nil && n >= 0 && n < registry.MaxArgs && strconv.Itoa(n) == name[3:] {
			if n < len(p.Args) {
				return n
			}
			return -1
		}
	}
	for i, a := range p.Args {
		if a == name {
			return i
		}
	}
	return -1
}

// resolve finds, in each probe subscribed, the key and value arguments; an argument
// that none of them has is an error.
func (a *aggregation) resolve(probes []*registry.Probe) error {
	top := uint32(0)
	for _, p := range probes {
		top = max(top, p.ID+1)
	}
	where, left, err := compileWhere(a.o.Where, probes, top)
	if err != nil {
		return err
	}
	ps := make([]aggProbe, top)
	var any bool
	for _, p := range probes {
		ap := aggProbe{ok: true, val: -1}
		if where != nil {
			ap.where = where[p.ID]
		}
		if a.by == byArg {
			ap.byArg = argIndex(p, a.o.By)
			ap.ok = ap.byArg >= 0
		}
		if a.o.Value != "" {
			ap.val = argIndex(p, a.o.Value)
			ap.ok = ap.ok && ap.val >= 0
		}
		if left != nil && left[p.ID] {
			ap.ok = false // without an argument the predicate names, as without --by's
		}
		ap.fast = ap.ok && ap.where == nil && a.by != byArg && a.by != byStack
		ps[p.ID] = ap
		any = any || ap.ok
	}
	if !any {
		var what []string
		for _, n := range []string{a.o.By, a.o.Value} {
			if validArg(n) {
				what = append(what, strconv.Quote(n))
			}
		}
		return badOption("control: no probe matched has the argument%s %s (%s)", plural(len(what)),
			strings.Join(what, " and "), describeArgs(probes))
	}
	a.probes.Store(&ps)
	return nil
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// describeArgs lists probes' arguments, for errors: "p:m:f:n: a, b; ...".
func describeArgs(probes []*registry.Probe) string {
	var out []string
	for i, p := range probes {
		if i == 3 {
			out = append(out, fmt.Sprintf("and %d more", len(probes)-3))
			break
		}
		args := "no arguments"
		if len(p.Args) > 0 {
			args = "arguments " + strings.Join(p.Args, ", ")
		}
		out = append(out, p.Provider+":"+p.Module+"::"+p.Name+" has "+args)
	}
	return strings.Join(out, "; ")
}

// Fire folds one fire into the shard of the P it runs on: the aggregation is a
// registry.Sink.
func (a *aggregation) Fire(f *registry.Firing) {
	probes := a.probes.Load()
	if probes == nil || int(f.Probe) >= len(*probes) {
		return // not yet told its probes: fired before the aggregation began
	}
	ap := &(*probes)[f.Probe]
	shards := *a.shards.Load()
	if ap.fast && uint(f.P) < uint(len(shards)) {
		// Keyed by probe or site, no predicate: most fires fold into the cell the
		// P folded into last.
		if c := shards[f.P].recent(uint64(f.Probe)); c != nil && c.key.x == uint64(f.Probe) && c.key.y == uint64(f.Site) {
			switch {
			case ap.val < 0:
				c.Inc()
				return
			case ap.val < f.N:
				a.fold(c, ap, f)
				return
			}
		}
	}
	a.fire(ap, shards, f)
}

// Fold folds value x of a fire of probe from site into the shard of P p, to which
// the caller is pinned: the aggregation is a registry.Folder when keyed by probe or by
// site with no predicate and a value (feedFolds). The site's cell is kept at hand in
// the shard, by the site's slot, from its first fire on: no key to compare or hash.
// The registry folds the later fires of the site on that P into it itself
// (registry.FoldTable): Fold sees a site's first fire on each P, and fires of sites
// not all of whose probe's fires the aggregation takes.
func (a *aggregation) Fold(p, slot int, probe uint32, site uintptr, x int64) {
	if a.probes.Load() == nil {
		return // not yet told its probes, or closed
	}
	shards := *a.shards.Load()
	if uint(p) >= uint(len(shards)) {
		a.missed.Add(1)
		return
	}
	sh := shards[p]
	var c *aggCell
	if uint(slot) < uint(len(sh.fold.Slots)) {
		c = cellOf(sh.fold.Slots[slot])
	}
	if c == nil {
		if c = a.slotCell(sh, slot, probe, site); c == nil {
			return
		}
	}
	c.Fold(x, &a.ft)
}

// FoldTable is where the aggregation's fires find their cells (registry.Folder).
func (a *aggregation) FoldTable() *registry.FoldTable { return &a.ft }

// slotCell is the cell of probe's fires from site in sh (nil: past MaxRows or the
// budget, counted), kept at hand by slot if it has one. The P's writers.
//
//go:norace
func (a *aggregation) slotCell(sh *aggShard, slot int, probe uint32, site uintptr) *aggCell {
	k := aggKey{x: uint64(probe), y: uint64(site)}
	c := sh.lookup(a, &k, mix(k.x, k.y))
	if c != nil && slot >= 0 && slot < maxSlots {
		// A fire of another P may read its own Slots; this P's fires read these.
		if s := &sh.fold.Slots; slot >= len(*s) {
			*s = append(*s, make([]*registry.FoldCell, slot+1-len(*s))...)
		}
		sh.fold.Slots[slot] = &c.FoldCell
	}
	return c
}

// maxSlots bounds a shard's cells at hand by site index: sites past it take the
// table's lookup.
const maxSlots = 1 << 16

// fire is Fire for the other fires: keyed by an argument, filtered, or to a cell
// other than the last.
func (a *aggregation) fire(ap *aggProbe, shards []*aggShard, f *registry.Firing) {
	if !ap.ok || ap.val >= f.N || a.by == byArg && ap.byArg >= f.N || ap.where != nil && !ap.where.Match(&f.Args) {
		return
	}
	if f.P >= len(shards) {
		a.missed.Add(1)
		return
	}
	sh := shards[f.P]
	var c *aggCell
	if a.by == byStack {
		if c = a.stackCell(sh, f); c == nil {
			return
		}
	} else if a.by != byArg {
		if c = sh.recent(uint64(f.Probe)); c == nil || c.key.x != uint64(f.Probe) || c.key.y != uint64(f.Site) {
			k := aggKey{x: uint64(f.Probe), y: uint64(f.Site)}
			if c = sh.lookup(a, &k, mix(k.x, k.y)); c == nil {
				return // MaxRows: counted in the shard's overflow
			}
		}
	} else {
		var k aggKey
		i := ap.byArg
		if f.Kinds[i] == registry.String {
			s := f.Strs[i]
			k.s, k.str = s[:min(len(s), StringMax)], true
		} else {
			k.x = uint64(registry.SlotInt(f.Kinds[i], f.Slots[i], 0))
		}
		if c = sh.recent(k.x); c == nil || !c.key.is(&k) {
			if c = sh.lookup(a, &k, a.hash(&k)); c == nil {
				return
			}
		}
	}
	a.fold(c, ap, f)
}

// fold folds f into its cell c: counts it, and folds its value if ap has one.
func (a *aggregation) fold(c *aggCell, ap *aggProbe, f *registry.Firing) {
	if ap.val < 0 {
		c.Inc()
		return
	}
	i := ap.val
	x := int64(f.Slots[i])
	if k := f.Kinds[i]; k != registry.Int {
		x = registry.SlotInt(k, f.Slots[i], len(f.Strs[i]))
	}
	c.Fold(x, &a.ft)
}

// is reports whether k and o are the same key (without the generic struct
// comparison's call). The P's writers, of their own cells.
//
//go:norace
func (k *aggKey) is(o *aggKey) bool {
	return k.x == o.x && k.y == o.y && k.str == o.str && (!k.str || k.s == o.s)
}

func (a *aggregation) hash(k *aggKey) uint64 {
	if k.str {
		return maphash.String(a.seed, k.s)
	}
	return mix(k.x, k.y)
}

// mix hashes two words (splitmix64's finalizer).
func mix(x, y uint64) uint64 {
	h := x ^ y*0x9e3779b97f4a7c15
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}

// bucketLow is the Low of bucket i.
func (a *aggregation) bucketLow(i int) int64 {
	l := a.o.Linear
	switch {
	case l == nil:
		return quantize.Low(i)
	case i == 0:
		return math.MinInt64
	}
	return l.Low + int64(i-1)*l.Step
}

// grow gives Ps added since the aggregation opened (runtime.GOMAXPROCS) shards of
// their own. Readers call it, now and then, with a.mu held.
func (a *aggregation) grow() {
	if rt.Nanotime()-a.grown < int64(100*time.Millisecond) {
		return
	}
	a.grown = rt.Nanotime()
	old := *a.shards.Load()
	procs := runtime.GOMAXPROCS(0)
	if procs <= len(old) {
		return
	}
	shards := append(make([]*aggShard, 0, procs), old...)
	for len(shards) < procs && a.charge(shardCost) {
		shards = append(shards, newAggShard())
	}
	a.setShards(shards)
}

// setShards publishes the Ps' shards, and their cells at hand to sdt's fires: the
// same P's on both sides, unless closed. Call with a.mu held, or before a is shared.
func (a *aggregation) setShards(shards []*aggShard) {
	a.shards.Store(&shards)
	if a.closed {
		return // fires find no cell at hand (retire)
	}
	fs := make([]*registry.FoldShard, len(shards))
	for i, sh := range shards {
		fs[i] = &sh.fold
	}
	a.ft.SetShards(fs)
}

// cellRead is what a reader read of a cell.
type cellRead struct {
	count, sum int64
	min, max   int64
	hist       []uint64
}

// load reads c; the minimum and maximum are those since it was made (interval < 0)
// or of that interval (ok false if no value of the interval was folded).
func (c *aggCell) load(r *cellRead, interval int64) (ok bool) {
	r.count, r.sum = atomic.LoadInt64(&c.Count), atomic.LoadInt64(&c.Sum)
	if interval <= 0 { // the whole life; the first interval is that too
		r.min, r.max = atomic.LoadInt64(&c.Min), atomic.LoadInt64(&c.Max)
		ok = true
	} else {
		s := &c.MM[interval&1]
		r.min, r.max = atomic.LoadInt64(&s.Min), atomic.LoadInt64(&s.Max)
		ok = atomic.LoadUint64(&s.Gen) == uint64(interval)
	}
	if len(r.hist) != len(c.Hist) {
		r.hist = make([]uint64, len(c.Hist))
	}
	for i := range c.Hist {
		r.hist[i] = atomic.LoadUint64(&c.Hist[i])
	}
	return ok
}

// read merges every shard's cells into rows: all they folded, or (interval) what
// they folded since the previous interval read.
func (a *aggregation) read(interval bool) Snapshot {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.grow()
	snap := Snapshot{By: a.o.By, Value: a.o.Value, Linear: a.o.Linear}
	switch {
	case a.o.Hist:
		snap.Hist = "quantize"
	case a.o.Linear != nil:
		snap.Hist = "linear"
	}
	gen := int64(-1)
	if interval {
		// Fires from now on fold their minimum and maximum into the next interval's
		// slot; those of the one ending stay in the other until it is read, below.
		// The first interval is the aggregation's life so far (gen 0).
		gen = int64(a.ft.Gen.Add(1) - 1)
	}
	type acc struct {
		row  Row
		hist []uint64
	}
	rows := map[aggKey]*acc{}
	var cur cellRead
	for _, sh := range *a.shards.Load() {
		snap.Overflow += sh.overflowed()
		sh.each(func(c *aggCell) {
			mmOK := c.load(&cur, gen)
			r := cur
			if interval {
				p := a.prev[c]
				if p == nil {
					p = &cellRead{hist: make([]uint64, len(cur.hist))}
					a.prev[c] = p
				}
				r.count, r.sum = cur.count-p.count, cur.sum-p.sum
				r.hist = make([]uint64, len(cur.hist))
				moved := r.count != 0 || r.sum != 0
				for i := range cur.hist {
					r.hist[i] = cur.hist[i] - p.hist[i]
					moved = moved || r.hist[i] != 0
				}
				p.count, p.sum = cur.count, cur.sum
				p.hist = append(p.hist[:0], cur.hist...)
				// A fire's fields are stored one after another while this reads
				// them: a fire whose count the previous interval read may have
				// its value and bucket in this one. Its row is shown (count 0)
				// rather than lost: the intervals add up to the whole.
				if !moved {
					return
				}
			}
			ac := rows[c.key]
			if ac == nil {
				ac = &acc{row: Row{Min: math.MaxInt64, Max: math.MinInt64}, hist: make([]uint64, a.buckets)}
				rows[c.key] = ac
			}
			ac.row.Count += r.count
			ac.row.Sum += r.sum
			if mmOK {
				ac.row.Min, ac.row.Max = min(ac.row.Min, r.min), max(ac.row.Max, r.max)
			}
			for i, n := range r.hist {
				ac.hist[i] += n
			}
		})
	}
	if a.counts != nil {
		a.countBuf = a.counts(a.countBuf[:0])
		for _, n := range a.countBuf {
			k := aggKey{x: uint64(n.Probe), y: uint64(n.Site)}
			count := int64(n.N)
			if interval {
				if a.prevCounts == nil {
					a.prevCounts = map[aggKey]uint64{}
				}
				count -= int64(a.prevCounts[k])
				a.prevCounts[k] = n.N
				if count == 0 {
					continue
				}
			}
			ac := rows[k]
			if ac == nil {
				ac = &acc{row: Row{Min: math.MaxInt64, Max: math.MinInt64}, hist: make([]uint64, a.buckets)}
				rows[k] = ac
			}
			ac.row.Count += count
		}
	}
	snap.Overflow += a.missed.Load()
	// Keys that name the same row (probe: every site of a probe in one function)
	// are folded by name.
	byName := map[string]*acc{}
	var names []string
	for k, ac := range rows {
		name := a.keyName(k)
		if x := byName[name]; x != nil {
			x.row.Count += ac.row.Count
			x.row.Sum += ac.row.Sum
			x.row.Min, x.row.Max = min(x.row.Min, ac.row.Min), max(x.row.Max, ac.row.Max)
			for i, n := range ac.hist {
				x.hist[i] += n
			}
			continue
		}
		ac.row.Key = name
		byName[name] = ac
		names = append(names, name)
	}
	for _, name := range names {
		ac := byName[name]
		r := &ac.row
		switch {
		case a.o.Value == "":
			r.Sum, r.Min, r.Max = 0, 0, 0
		case r.Count == 0: // the rest of fires counted in the previous interval
			r.Min, r.Max = 0, 0
		default:
			r.Avg = float64(r.Sum) / float64(r.Count)
			if r.Min > r.Max { // no minimum of the interval survived: none to show
				r.Min, r.Max = 0, 0
			}
		}
		for i, n := range ac.hist {
			if n > 0 {
				r.Hist = append(r.Hist, Bucket{Low: a.bucketLow(i), Count: n})
			}
		}
		snap.Rows = append(snap.Rows, *r)
	}
	// sort.Slice, not slices.SortFunc: no sort code instantiated for Row in every
	// program that uses probes.
	sort.Slice(snap.Rows, func(i, j int) bool {
		x, y := &snap.Rows[i], &snap.Rows[j]
		return x.Count > y.Count || x.Count == y.Count && x.Key < y.Key
	})
	return snap
}

func (a *aggregation) keyName(k aggKey) string {
	switch a.by {
	case byArg:
		if k.str {
			return k.s
		}
		return strconv.FormatInt(int64(k.x), 10)
	case byStack:
		return a.stackName(k)
	case bySite:
		probe, site := uint32(k.x), uintptr(k.y)
		name := a.c.name(probe, site)
		if p := a.c.probes[probe]; p != nil {
			if s := p.Site(site); s != nil {
				return fmt.Sprintf("%s %#x %s:%d", name, s.Addr, s.File, s.Line)
			}
		}
		return name + " (not attributed to a site)"
	}
	return a.c.name(uint32(k.x), uintptr(k.y))
}
