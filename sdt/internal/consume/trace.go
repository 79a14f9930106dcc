package consume

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/goid"
	"github.com/gosdt/gosdt/sdt/internal/pred"
	"github.com/gosdt/gosdt/sdt/internal/registry"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// Trace receives the fires of the probes a spec matched, as events, from OpenTrace
// until Close. While open it holds those probes on, as its own owner: sdt.Disable
// elsewhere does not switch them off (sdt.List names it among their holders).
//
// Each P has a buffer of its own (TraceOptions.BufSize bytes), which a fire writes
// without waiting; a fire that finds its buffer full is dropped and counted (Drops).
// Events of one P arrive in the order they fired; those of different Ps may not.
type Trace struct {
	s      *traceSink
	c      *consumer
	mu     sync.Mutex // one reader at a time
	next   int        // the buffer Read starts with: each in turn
	closed atomic.Bool
}

// TraceOptions says how a trace records.
type TraceOptions struct {
	// BufSize is the bytes of each P's buffer, rounded up to a power of two; 0 is
	// DefaultBufSize, halved until the buffers fit the memory budget (OpenTrace). A
	// record takes 32 bytes, 8 per argument, a string's bytes, and 8 per return
	// address of its stack.
	BufSize int
	// Stack is how many return addresses of the fire's call stack each record
	// carries, innermost first (the caller of the probe statement's function is the
	// second), up to MaxStack; 0: none. Capturing them costs an unwinding per fire.
	Stack int
	// Where is a predicate on the arguments (sdtctl's --where: arg0 > 100 &&
	// path == "/api", arguments by name or argN), compiled once for each probe
	// matched: a fire it rejects writes nothing and is counted filtered. A probe
	// without an argument it names is left out (an error when every probe is). "": all.
	Where string

	// shared: buffers another process may map (a stream's, for sdtctl: memfds on
	// linux), with a log of the probes' descriptions beside them (descLog).
	shared bool
	// live: shared, and read by the other process as they are written, with heads
	// it keeps (headsMem): nothing read here.
	live bool
	// upTo: with BufSize 0, the size the default starts from instead of
	// DefaultBufSize (the client's: sdtctl trace --raw to a file asks for more),
	// halved as the default is
	upTo int
}

// Buffer sizes of a trace, per P. The default is DTrace's: on a 2-core VM it carries
// a million events a second from one P with 99.9% delivered (bench/README.md).
const (
	DefaultBufSize = 4 << 20
	MinBufSize     = 4 << 10
	MaxBufSize     = ctlproto.MaxBufSize
)

// StringMax is the bytes kept of one string argument of a traced event.
const StringMax = ctlproto.StringMax

// MaxStack is the most return addresses a record's stack holds.
const MaxStack = ctlproto.MaxStack

// Event is one fire.
type Event struct {
	Time      time.Time
	Probe     string  // provider:module:function:name
	Site      uintptr // the site's address; 0 for a fire not attributed to a site
	Goroutine uint64  // the firing goroutine's id; 0 where it cannot be told
	Args      []Arg
	Stack     []uintptr // with TraceOptions.Stack: return addresses, for runtime.CallersFrames
}

// Arg is one argument of an event.
type Arg struct {
	Name, Type string
	Value      any  // int64, uint64, bool, float64 or string
	Cut        bool // a string cut to StringMax bytes
}

// Argument kinds are the same on both sides of the wire.
const _ = uint(registry.String-ctlproto.ValString) + uint(ctlproto.ValString-registry.String) +
	uint(registry.Int-ctlproto.ValInt) + uint(registry.Float-ctlproto.ValFloat)

// traceSink writes fires into per-P buffers: what a trace subscribes.
type traceSink struct {
	// by probe id; nil until subscribed, and again once freed: Fire loads it first
	// and does nothing while it is nil (quiesce.go)
	probes atomic.Pointer[[]probeState]
	bufs   atomic.Pointer[[]*pbuf] // by P; grown by the reader (grow)
	size   int
	stack  int // return addresses per record
	// fires on a P that had no buffer yet: in the description log where there is
	// one (ctlproto.DescLogLost), so that they are counted after the process ends
	lost   atomic.Pointer[atomic.Uint64]
	goidAt uintptr // offset of the goroutine id in the runtime's g; 0: unknown
	grown  int64   // nanotime when grow last looked at GOMAXPROCS (the reader's)
	shared bool
	log    *descLog  // shared: the descriptions of what the buffers may hold
	heads  *headsMem // live: the reader's heads
	// the buffers as run-time return probes write them from their return path
	// (registry.DirectSink), which runs the predicate too (pred's Program.Direct)
	direct *registry.DirectBufs

	// The reader's (or, once closed, the one that frees the buffers):
	reserved uint64 // bytes of the budget the buffers hold
	armed    bool   // probes was set: fires may have written the buffers
	freed    bool
}

// probeState is what a trace knows of one of its probes.
type probeState struct {
	p     *registry.Probe // nil: not one of the trace's probes
	plain uint64          // the size of its records when they are words only, no predicate, no stack (Fire's fast path); 0: not
	where *pred.Program   // nil: every fire
	kinds atomic.Uint64   // as its fires tell (packKinds); 0 until one has
}

// packKinds packs a fire's argument kinds: byte i kind i, byte 6 the count, bit 63
// set (known).
func packKinds(a *registry.Args) uint64 {
	v := uint64(1)<<63 | uint64(a.N)<<48
	for i := 0; i < a.N; i++ {
		v |= uint64(a.Kinds[i]) << (8 * i)
	}
	return v
}

// kindsOf unpacks packKinds; with nothing known yet, the probe's own kinds, numbers
// where even those are not known.
func (st *probeState) kindsOf() []byte {
	v := st.kinds.Load()
	if v == 0 {
		ks := make([]byte, len(st.p.Kinds))
		for i, k := range st.p.Kinds {
			if k != registry.Unknown {
				ks[i] = byte(k)
			}
		}
		return ks
	}
	ks := make([]byte, v>>48&0xff)
	for i := range ks {
		ks[i] = byte(v >> (8 * i))
	}
	return ks
}

// check refuses options no trace can have.
func (o TraceOptions) check() error {
	if o.BufSize < 0 || o.BufSize > MaxBufSize {
		return badOption("control: trace buffers of %d bytes: want %d to %d", o.BufSize, MinBufSize, MaxBufSize)
	}
	if o.Stack < 0 || o.Stack > MaxStack {
		return badOption("control: a stack of %d return addresses: want 0 to %d", o.Stack, MaxStack)
	}
	return checkWhere(o.Where)
}

// newTraceSink makes a trace's buffers, one per P, within the memory budget
// (budget.go): a size asked for that does not fit is refused before anything is
// made; the default size is halved until it fits (down to MinBufSize).
func newTraceSink(o TraceOptions) (*traceSink, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	procs := max(runtime.GOMAXPROCS(0), 1)
	allowed := currentAllowance(0)
	size := MinBufSize
	for size < o.BufSize {
		size <<= 1
	}
	if o.BufSize == 0 {
		size = DefaultBufSize
		for size < o.upTo && size < MaxBufSize {
			size <<= 1
		}
		for size > MinBufSize && uint64(procs)*uint64(size) > allowed.n {
			size >>= 1
		}
	}
	need := uint64(procs) * uint64(size)
	what := "trace buffers of " + sizeString(uint64(size)) + " for each of " + strconv.Itoa(procs) + " Ps"
	if need > allowed.n {
		return nil, allowed.refuse(what, need)
	}
	if !takeBudget(need) { // another consumer took it meanwhile
		return nil, currentAllowance(0).refuse(what, need)
	}
	s := &traceSink{size: size, stack: o.Stack, goidAt: goid.Offset(), reserved: need, grown: rt.Nanotime(), shared: o.shared}
	s.lost.Store(new(atomic.Uint64))
	if o.shared {
		s.log = newDescLog() // nil where it cannot be made: the buffers are not shared then
		if s.log != nil {
			s.lost.Store(atomicAt(s.log.mem, ctlproto.DescLogLost))
		}
	}
	if o.live && s.log != nil {
		// room for GOMAXPROCS raised a good way while the trace runs (grow)
		s.heads = newHeads(max(4*procs, 256))
	}
	s.direct = registry.NewDirectBufs(lostWord(s.lost.Load()), o.Where != "")
	bufs := make([]*pbuf, procs)
	for i := range bufs {
		b, err := newPbuf(size, o.shared, s.heads.word(i))
		if err != nil {
			for _, b := range bufs[:i] {
				b.free()
			}
			s.log.free()
			s.heads.free()
			giveBudget(need)
			return nil, &budgetError{"control: " + what + ": " + err.Error()}
		}
		bufs[i] = b
	}
	s.bufs.Store(&bufs)
	s.publishDirect(bufs)
	return s, nil
}

// DirectBufs is the trace's buffers for run-time return probes to write from their
// return path (registry.DirectSink): what they write there outlives the process.
// With a predicate, the return path runs it (arm gives it the compiled programs).
func (s *traceSink) DirectBufs() *registry.DirectBufs { return s.direct }

// publishDirect tells the return path the buffers, by P.
func (s *traceSink) publishDirect(bufs []*pbuf) {
	if s.direct == nil {
		return
	}
	out := make([]registry.DirectBuf, len(bufs))
	for i, b := range bufs {
		out[i] = b.directBuf()
	}
	s.direct.SetBufs(out)
}

// stopDirect stops the return path writing the buffers; the caller then waits for
// the writers (quiesce), as for fires.
func (s *traceSink) stopDirect() {
	if s.direct != nil {
		s.direct.SetKnown(nil)
	}
}

// free stops the sink writing and gives its buffers and their budget back, once
// no fire can be writing them any more (quiesce). The reader's, once done reading:
// records are views of the buffers.
func (s *traceSink) free() {
	if s.freed {
		return
	}
	s.freed = true
	if s.armed {
		s.probes.Store(nil)
		s.stopDirect()
		if buffersUnmapped {
			quiesce()
		}
	}
	for _, b := range s.buffers() {
		b.free()
	}
	n := new(atomic.Uint64) // the count outlives the log
	n.Store(s.lost.Load().Load())
	s.lost.Store(n)
	s.log.free()
	s.heads.free()
	giveBudget(s.reserved)
	s.reserved = 0
}

// stopFires makes every later fire do nothing, and returns once none that began
// before is still writing (quiesce): what the buffers hold is all they will. The
// reader's; probes stay off until freed.
func (s *traceSink) stopFires() {
	if s.armed && !s.freed {
		s.probes.Store(nil)
		s.stopDirect()
		quiesce()
		s.armed = false // nothing left to wait for (free)
	}
}

// plainSize is the size of p's records if they are words only: no string argument,
// every kind known (an fbt argument's may not be), a little-endian machine.
func plainSize(p *registry.Probe) uint64 {
	if !littleEndian {
		return 0
	}
	for _, k := range p.Kinds {
		if k == registry.String || k == registry.Unknown {
			return 0
		}
	}
	return uint64(ctlproto.RecordHead + 8*len(p.Kinds))
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// recordSize is the bytes of a fire's record, its strings cut to StringMax.
func recordSize(a *registry.Args) uint64 {
	strs := 0
	for i := 0; i < a.N; i++ {
		if a.Kinds[i] == registry.String {
			strs += min(len(a.Strs[i]), StringMax)
		}
	}
	return uint64(ctlproto.RecordHead + 8*a.N + (strs+7)&^7)
}

// Fire writes one record into the buffer of the P it runs on: the trace is a
// registry.Sink.
func (s *traceSink) Fire(f *registry.Firing) {
	ticks, g := stamp()
	if f.Ret == registry.NoStack && f.Ticks != 0 {
		ticks = f.Ticks // a run-time return, delivered later: the time it returned
	}
	probes := s.probes.Load()
	if probes == nil || int(f.Probe) >= len(*probes) {
		return // subscribed, and not yet told its probes: fired before the trace began
	}
	st := &(*probes)[f.Probe]
	bufs := *s.bufs.Load()
	if need := st.plain; need != 0 && f.P < len(bufs) && int(need) == ctlproto.RecordHead+8*f.N {
		// The common record: words only, its size known, no predicate, no stack.
		b := bufs[f.P]
		tail := b.tail.Load()
		off, end := tail&b.mask, tail+need
		if !b.fits(tail, need) {
			var ok bool
			if off, end, ok = b.reserveSlow(tail, need); !ok {
				return
			}
		}
		*b.writing = end // what the end cuts short is counted, not read (ctlproto.RingWriting)
		writeWords(b.b[off:off+need], f, ticks, s.goidOf(f, g))
		publish(tailWord(b), end)
		return
	}
	s.fire(st, bufs, f, ticks, g)
}

// fire is Fire for the other records: with strings, a predicate, a stack; or fired
// before its P had a buffer.
func (s *traceSink) fire(st *probeState, bufs []*pbuf, f *registry.Firing, ticks uint64, g uintptr) {
	if st.p == nil {
		return
	}
	a := &f.Args
	if st.kinds.Load() == 0 {
		st.kinds.Store(packKinds(a))
	}
	if f.P >= len(bufs) {
		s.lost.Load().Add(1)
		return
	}
	if st.where != nil && !st.where.Match(a) {
		bufs[f.P].filter()
		return
	}
	if s.stack > 0 {
		s.writeStack(bufs[f.P], f, ticks, g)
		return
	}
	s.write(bufs[f.P], f, ticks, g, nil)
}

// write writes f's record, with stack, into b, or counts it dropped.
func (s *traceSink) write(b *pbuf, f *registry.Firing, ticks uint64, g uintptr, stack []uintptr) {
	need := recordSize(&f.Args) + 8*uint64(len(stack))
	off, end, ok := b.reserve(need)
	if !ok {
		return
	}
	writeRecord(b.b[off:off+need], f, ticks, s.goidOf(f, g), stack)
	publish(tailWord(b), end)
}

// goidOf is the id of the goroutine that fired f, g the running one: g's, or for an
// event another goroutine delivers (registry.NoStack) the one the event carries; 0
// where it cannot be told.
func (s *traceSink) goidOf(f *registry.Firing, g uintptr) uint64 {
	switch {
	case f.Ret == registry.NoStack:
		return f.Goid
	case g == 0 || s.goidAt == 0:
		return 0
	}
	return goid.At(g, s.goidAt)
}

// writeStack is write with the fire's call stack: out of Fire, so that a trace
// without stacks does not clear the room for one on every fire.
//
//go:noinline
func (s *traceSink) writeStack(b *pbuf, f *registry.Firing, ticks uint64, g uintptr) {
	var pcs [MaxStack + stackSkip]uintptr
	s.write(b, f, ticks, g, callStack(pcs[:s.stack+stackSkip], f.Ret, s.stack))
}

// stackSkip bounds the frames of sdt and control between a sink and the function
// that fired (and, for a run-time function probe, of fprobe's entry handler: its
// hook's call, the handler, the body that saves the registers).
const stackSkip = 16

// callStack is up to depth return addresses of the firing goroutine's stack (buf
// holds depth + stackSkip), from the function that fired: the one ret (the fire
// call's return address) is in, without sdt's frames inlined there (Probe1...).
func callStack(buf []uintptr, ret uintptr, depth int) []uintptr {
	if ret == registry.NoStack {
		return nil
	}
	n := runtime.Callers(2, buf)
	pcs := buf[:n]
	from := firer(pcs[:min(n, stackSkip)], ret)
	for from < n && ownFrame(funcName(pcs[from])) {
		from++
	}
	return pcs[from:min(n, from+depth)]
}

// firer is the index of the frame that fired in pcs: the one at ret or, as an fbt
// fire is delivered by a later call in the same function (Call.Entered, Returned),
// the first in ret's function; 0 if none is (ret 0 where the platform cannot tell).
func firer(pcs []uintptr, ret uintptr) int {
	for i, pc := range pcs {
		if pc == ret {
			return i
		}
	}
	if f := runtime.FuncForPC(ret); f != nil {
		for i, pc := range pcs {
			if g := runtime.FuncForPC(pc - 1); g != nil && g.Entry() == f.Entry() {
				return i
			}
		}
	}
	return 0
}

// funcName is the function (the innermost inlined one) of a return address of
// runtime.Callers.
func funcName(pc uintptr) string {
	if f := runtime.FuncForPC(pc - 1); f != nil {
		return f.Name()
	}
	return ""
}

// ownFrame reports whether fn (a function's name) is package sdt's, the registry's, consume's or fprobe's: the
// fire's machinery, not the program's, above the function that fired (all of it where
// ret is not told: js/wasm).
func ownFrame(fn string) bool {
	return strings.HasPrefix(fn, sdtPrefix) || strings.HasPrefix(fn, registryPrefix) || strings.HasPrefix(fn, controlPrefix) ||
		strings.HasPrefix(fn, fprobePrefix)
}

// The names of package sdt's, the registry's and package consume's functions begin so.
var (
	registryPrefix = reflect.TypeFor[registry.Probe]().PkgPath() + "."
	sdtPrefix      = strings.TrimSuffix(registryPrefix, "/internal/registry.") + "."
	controlPrefix  = reflect.TypeFor[traceSink]().PkgPath() + "."
	// fprobe calls a run-time probe's hook from the probed function's entry: its
	// frames (callHook, entryHandler, entryBody) are between the fire and the function.
	fprobePrefix = strings.TrimSuffix(sdtPrefix, ".") + "/internal/fprobe."
)

// writeRecord writes f as a record (ctlproto's layout) into r, recordSize bytes of a
// P's buffer that no reader reads until published.
//
//go:norace
func writeRecord(r []byte, f *registry.Firing, ticks, goid uint64, stack []uintptr) {
	a := &f.Args
	n := a.N
	le := binary.LittleEndian
	le.PutUint64(r[8:], uint64(f.Site))
	le.PutUint64(r[16:], ticks)
	le.PutUint64(r[24:], goid)
	var cut uint64
	off := ctlproto.RecordHead + 8*n
	for i := 0; i < n; i++ {
		v := a.Slots[i]
		if a.Kinds[i] == registry.String {
			s := a.Strs[i]
			if len(s) > StringMax {
				s = s[:StringMax]
				cut |= 1 << i
			}
			if len(s) > 0 {
				putString(r, off, s)
			}
			off += len(s)
			v = uint64(len(s))
		}
		le.PutUint64(r[ctlproto.RecordHead+8*i:], v)
	}
	for ; off&7 != 0; off++ {
		r[off] = 0
	}
	for _, pc := range stack {
		le.PutUint64(r[off:], uint64(pc))
		off += 8
	}
	le.PutUint64(r, uint64(len(r))|uint64(n)<<16|cut<<24|uint64(f.Probe)<<32)
}

// grow gives Ps added since the trace opened (runtime.GOMAXPROCS) buffers of their
// own: fires on them were counted lost until now. The reader calls it, now and
// then.
func (s *traceSink) grow() {
	if rt.Nanotime()-s.grown < int64(100*time.Millisecond) {
		return
	}
	s.grown = rt.Nanotime()
	old := *s.bufs.Load()
	procs := runtime.GOMAXPROCS(0)
	if procs <= len(old) || s.freed {
		return
	}
	// The new Ps' buffers come out of the budget too; those that do not fit are not
	// made, and fires on their Ps stay counted lost.
	n := uint64(procs-len(old)) * uint64(s.size)
	allowed := currentAllowance(s.reserved)
	for n > allowed.n || n > 0 && !takeBudget(n) {
		n -= uint64(s.size)
	}
	bufs := append(make([]*pbuf, 0, procs), old...)
	for ; n > 0; n -= uint64(s.size) {
		head := s.heads.word(len(bufs))
		if s.heads != nil && head == nil {
			break // no head for it: its fires stay counted lost
		}
		b, err := newPbuf(s.size, s.shared, head)
		if err != nil {
			break
		}
		bufs = append(bufs, b)
		s.reserved += uint64(s.size)
	}
	giveBudget(n) // what was taken and not made
	s.bufs.Store(&bufs)
	s.publishDirect(bufs)
}

// buffers is the trace's buffers, by P.
func (s *traceSink) buffers() []*pbuf { return *s.bufs.Load() }

// readDrops is what the trace has lost before the records read so far: per buffer,
// and in all. The reader's.
func (s *traceSink) readDrops() (per []uint64, all uint64) {
	for _, b := range s.buffers() {
		per = append(per, b.met)
		all += b.met
	}
	return per, all
}

// filtered is the number of fires the trace's predicate rejected.
func (s *traceSink) filtered() (n uint64) {
	for _, b := range s.buffers() {
		n += atomic.LoadUint64(&b.filtered)
	}
	return n
}

// drops is what the trace has lost: per buffer, and in all (with the fires that
// came before their P had one).
func (s *traceSink) drops() (per []uint64, all uint64) {
	all = s.lost.Load().Load()
	for _, b := range s.buffers() {
		d := b.dropped()
		per = append(per, d)
		all += d
	}
	return per, all
}

// OpenTrace switches on the probes spec matches (a DTrace probe description, as for
// sdt.Enable) and records their fires until Close. Errors match sdt.ErrNoMatch,
// sdt.ErrMalformedSpec and sdt.ErrNotSupported, and ErrBudget for buffers (GOMAXPROCS
// x BufSize) over the memory budget; bad options are reported before anything is
// switched.
func OpenTrace(spec string, o TraceOptions) (*Trace, error) {
	return openTrace("in-process trace", spec, o)
}

func openTrace(who, spec string, o TraceOptions) (*Trace, error) {
	s, err := newTraceSink(o)
	if err != nil {
		return nil, err
	}
	c, err := open(who, spec, s, func(probes []*registry.Probe) error { return s.arm(o.Where, probes) })
	if err != nil {
		s.free()
		return nil, err
	}
	return &Trace{s: s, c: c}, nil
}

// arm tells the sink its probes (again, with more, as a followed command defines
// them: follow.go), their predicates compiled.
func (s *traceSink) arm(where string, probes []*registry.Probe) error {
	top := uint32(0)
	for _, p := range probes {
		top = max(top, p.ID+1)
	}
	programs, left, err := compileWhere(where, probes, top)
	if err != nil {
		return err
	}
	states := make([]probeState, top)
	for _, p := range probes {
		if left != nil && left[p.ID] {
			continue // without an argument the predicate names: not traced
		}
		st := &states[p.ID]
		st.p = p
		if programs != nil {
			st.where = programs[p.ID]
		}
		if st.where == nil && s.stack == 0 {
			// Its kinds are known (plainSize): told now, not by a first fire.
			if st.plain = plainSize(p); st.plain != 0 {
				var a registry.Args
				a.N = len(p.Kinds)
				copy(a.Kinds[:], p.Kinds)
				st.kinds.Store(packKinds(&a))
			}
		}
	}
	if old := s.probes.Load(); old != nil {
		// re-armed: what fires taught of their kinds stays
		for i := range min(len(*old), len(states)) {
			if k := (*old)[i].kinds.Load(); k != 0 && states[i].kinds.Load() == 0 {
				states[i].kinds.Store(k)
			}
		}
	}
	if err := s.log.describe(probes, states); err != nil { // before any of them fires: published first
		return err
	}
	s.probes.Store(&states)
	if s.direct != nil {
		var ids []uint32
		var where []*registry.Pred
		for i := range states {
			if states[i].p != nil {
				ids = append(ids, uint32(i))
			}
			if states[i].where != nil {
				if where == nil {
					where = make([]*registry.Pred, len(states))
				}
				where[i] = states[i].where.Direct()
			}
		}
		s.direct.SetWhere(where) // before the probes are known: none written unfiltered
		s.direct.SetKnown(ids)
	}
	s.armed = true
	return nil
}

// Read fills evs with the events that have arrived, oldest first for each P, waiting
// up to wait for the first one. It returns how many it filled: 0 when none came in
// time, and ErrClosed once the trace is closed.
func (t *Trace) Read(evs []Event, wait time.Duration) (int, error) {
	n := 0
	_, err := t.Each(wait, func(r *Record) bool {
		if n == len(evs) {
			return false
		}
		evs[n] = r.Event()
		n++
		return true
	})
	return n, err
}

// Each calls f with each event that has arrived, oldest first for each P, until f
// returns false or none is left, waiting up to wait for the first one. It returns
// how many f took (those it returned true for; the one it refused stays for the next
// read), and ErrClosed once the trace is closed. The Record is valid only during the
// call: nothing is allocated or copied unless f asks (Event, Value).
func (t *Trace) Each(wait time.Duration, f func(r *Record) bool) (int, error) {
	t.mu.Lock()
	defer func() {
		t.mu.Unlock()
		if t.closed.Load() {
			t.freeIdle() // a Close meanwhile (f's, perhaps) left the buffers to us
		}
	}()
	n := 0
	r := Record{t: t}
	err := t.poll(wait, func() bool {
		t.s.grow()
		r.clock = nowClock()
		bufs := t.s.buffers()
		more := true
		for k := 0; k < len(bufs) && more; k++ {
			bufs[(t.next+k)%len(bufs)].read(func(rec ctlproto.Record) bool {
				if !r.set(rec) {
					return true // cannot be (this process wrote it): skipped
				}
				if more = f(&r); more {
					n++
				}
				return more
			})
		}
		t.next++
		return n > 0 || !more
	})
	return n, err
}

// poll calls take until it reports progress, the trace closes, or wait passes,
// sleeping a little longer each time nothing came.
func (t *Trace) poll(wait time.Duration, take func() bool) error {
	deadline := time.Now().Add(wait)
	for idle := 0; ; idle++ {
		if t.closed.Load() {
			return ErrClosed
		}
		if take() || !time.Now().Before(deadline) {
			return nil
		}
		time.Sleep(backoff(idle))
	}
}

// backoff is how long a reader that found nothing sleeps: short at first, so that a
// burst is read promptly, then up to a millisecond.
func backoff(idle int) time.Duration {
	if idle < 100 {
		return 50 * time.Microsecond
	}
	return time.Millisecond
}

// Drops is the number of events lost because the buffer of the P they fired on was
// full: fires faster than Read takes them.
func (t *Trace) Drops() uint64 {
	_, all := t.s.drops()
	return all
}

// Filtered is the number of fires its predicate (TraceOptions.Where) rejected: they
// took no room in any buffer. Every fire is read, dropped (Drops) or filtered.
func (t *Trace) Filtered() uint64 { return t.s.filtered() }

// Close releases the trace's probes (switching off what no other owner holds),
// stops recording, and gives its buffers back (at once, unless a Read or Each is
// under way: then as it returns). Events not read are lost.
func (t *Trace) Close() error {
	if !t.closed.Swap(true) {
		t.c.flush() // what fired before is in the buffers: counted, read or not
		t.c.close()
	}
	t.freeIdle()
	return nil
}

// freeIdle frees the closed trace's buffers, unless a reader is using them: that
// one calls it again as it leaves (Each), after Close's store of closed, so one of
// the two frees them.
func (t *Trace) freeIdle() {
	if t.mu.TryLock() {
		t.s.free()
		t.mu.Unlock()
	}
}
