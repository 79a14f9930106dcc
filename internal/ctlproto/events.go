package ctlproto

import (
	"encoding/binary"
	"math"
	"strconv"
)

// A trace streams its events in batches: a Response of kind "events" carries the
// descriptions (Desc) of the probe sites first met in it, the stream's clock (Clock),
// and the records, packed one after another exactly as the process's per-P buffers
// hold them. Every field is little-endian and every record a multiple of 8 bytes:
//
//	u16     size      bytes of the whole record
//	u8      n         arguments (at most 6)
//	u8      cut       bit i: string argument i was cut to StringMax bytes
//	u32     probe     the probe's id in the process
//	u64     site      the site's address; 0 for a fire not attributed to a site
//	u64     ticks     when it fired, in the stream's clock (Clock converts)
//	u64     goid      the firing goroutine's id; 0 where the process cannot tell
//	u64 x n           each argument's bits: an int64, a uint64, 0 or 1, float64 bits;
//	                  for a string, the number of its bytes that follow
//	bytes             the strings' bytes, in argument order, then zeros to a multiple of 8
//	u64 x k           the call stack (--stack): return addresses, innermost first, to
//	                  the end of the record
//
// The record does not say its arguments' kinds: its Desc, keyed by probe and site,
// does, once per stream. A record whose probe and site no Desc has described is an
// error.

// Value kinds of an event argument.
const (
	ValInt    = iota // signed integers
	ValUint          // unsigned integers
	ValBool          // 0 or 1
	ValFloat         // float64 bits
	ValString        // bytes
)

// Record limits.
const (
	RecordHead = 32  // bytes before the arguments
	StringMax  = 64  // bytes kept of one string argument
	MaxArgs    = 6   // arguments of one record
	MaxStack   = 32  // return addresses of one record's stack
	StackDepth = 16  // return addresses sdtctl trace --stack asks for
	PadRecord  = 255 // n of the filler a buffer holds where a record did not fit at its end; never sent
	LostRecord = 254 // n of a 16-byte record whose second word counts the records dropped before it; never sent
)

// Desc describes the events of one probe at one site, once per trace stream.
type Desc struct {
	ID    uint32 // the probe's id, as records name it
	Probe string // provider:module:function:name
	Site  uint64 // 0: fires not attributed to a site
	Args  []Arg  // names and types
	Kinds []byte // ValInt .. ValString, one per argument
	// Pending (the description log): some kind is not known until the probe fires
	// (an fbt argument's); a later entry of the log tells them. A reader waits for
	// it before it decodes a record of the probe.
	Pending bool
}

func (ds *Desc) append(e *enc) {
	e.uint(1, uint64(ds.ID))
	e.str(2, ds.Probe)
	e.uint(3, ds.Site)
	for i := range ds.Args {
		e.msg(4, ds.Args[i].append)
	}
	e.bytes(5, ds.Kinds)
	e.bool(6, ds.Pending)
}

func (ds *Desc) decode(d *dec) {
	d.fields(func(tag int) bool {
		switch tag {
		case 1:
			v := d.uint()
			if v > math.MaxUint32 {
				d.fail("probe id out of range")
			}
			ds.ID = uint32(v)
		case 2:
			ds.Probe = d.str()
		case 3:
			ds.Site = d.uint()
		case 4:
			ds.Args = append(ds.Args, Arg{})
			d.msg(ds.Args[len(ds.Args)-1].decode)
		case 5:
			ds.Kinds = append([]byte(nil), d.bytes()...)
		case 6:
			ds.Pending = d.bool()
		default:
			return false
		}
		return true
	})
	if len(ds.Kinds) > MaxArgs {
		d.fail("desc with too many arguments")
	}
	for _, k := range ds.Kinds {
		if k > ValString {
			d.fail("desc with an unknown argument kind")
		}
	}
}

// Frame names one return address of the call stacks a trace's records carry: the
// process symbolizes each once per stream, with its runtime's own tables, which know
// what was inlined where (a reader of the binary's pclntab, debug/gosym, does not).
type Frame struct {
	PC   uint64
	Func string // "main.step"; "?" when the process cannot tell
	File string
	Line int
}

// String is "func file:line", as ustack() lines and --json show a frame.
func (f *Frame) String() string { return f.Func + " " + f.File + ":" + strconv.Itoa(f.Line) }

func (f *Frame) append(e *enc) {
	e.uint(1, f.PC)
	e.str(2, f.Func)
	e.str(3, f.File)
	e.uint(4, uint64(f.Line))
}

func (f *Frame) decode(d *dec) {
	d.fields(func(tag int) bool {
		switch tag {
		case 1:
			f.PC = d.uint()
		case 2:
			f.Func = d.str()
		case 3:
			f.File = d.str()
		case 4:
			f.Line = d.small()
		default:
			return false
		}
		return true
	})
}

// Clock converts a stream's ticks to wall-clock time: Wall (Unix nanoseconds) was
// read at Ticks, and a tick is NsPerTick nanoseconds.
type Clock struct {
	Ticks     uint64
	Wall      int64
	NsPerTick float64
}

// UnixNano is the wall-clock time of ticks.
func (c *Clock) UnixNano(ticks uint64) int64 {
	return c.Wall + int64(float64(int64(ticks-c.Ticks))*c.NsPerTick)
}

func (c *Clock) append(e *enc) {
	e.uint(1, c.Ticks)
	e.int(2, c.Wall)
	e.uint(3, math.Float64bits(c.NsPerTick))
}

func (c *Clock) decode(d *dec) {
	d.fields(func(tag int) bool {
		switch tag {
		case 1:
			c.Ticks = d.uint()
		case 2:
			c.Wall = d.int()
		case 3:
			c.NsPerTick = math.Float64frombits(d.uint())
		default:
			return false
		}
		return true
	})
	if !(c.NsPerTick > 0 && c.NsPerTick < 1e9) {
		d.fail("clock with a bad tick length")
	}
}

// Record is one packed record: a view of its bytes (Split checks them).
type Record []byte

func (r Record) word(i int) uint64 { return binary.LittleEndian.Uint64(r[8*i:]) }

// Size is the record's length in bytes.
func (r Record) Size() int { return int(binary.LittleEndian.Uint16(r)) }

// N is the number of arguments.
func (r Record) N() int { return int(r[2]) }

// Cut reports whether string argument i was cut to StringMax bytes.
func (r Record) Cut(i int) bool { return r[3]&(1<<i) != 0 }

// Probe is the probe's id.
func (r Record) Probe() uint32 { return binary.LittleEndian.Uint32(r[4:]) }

// Site is the site's address, 0 for a fire not attributed to a site.
func (r Record) Site() uint64 { return r.word(1) }

// Ticks is when it fired, in the stream's clock.
func (r Record) Ticks() uint64 { return r.word(2) }

// Goroutine is the firing goroutine's id; 0 where the process cannot tell.
func (r Record) Goroutine() uint64 { return r.word(3) }

// Slot is argument i's bits (a string's length).
func (r Record) Slot(i int) uint64 { return r.word(4 + i) }

// Split takes the first record off b: its size is checked against b, not its
// contents (Layout does that, with the record's Desc).
func Split(b []byte) (rec Record, rest []byte, err error) {
	if len(b) < RecordHead {
		return nil, nil, Errorf(CodeBadRequest, "bad record: %d bytes left, a record has at least %d", len(b), RecordHead)
	}
	n := int(binary.LittleEndian.Uint16(b))
	if n < RecordHead || n%8 != 0 || n > len(b) {
		return nil, nil, Errorf(CodeBadRequest, "bad record: size %d (%d bytes left)", n, len(b))
	}
	return Record(b[:n]), b[n:], nil
}

// Layout is where a record's parts are, from its Desc's kinds.
type Layout struct {
	str   [MaxArgs][2]int // each string argument's bytes: offset and length
	stack int             // offset of the stack
	depth int             // return addresses in it
}

// Layout checks rec against kinds (its Desc's) and says where its strings and its
// stack are.
func (r Record) Layout(kinds []byte) (Layout, error) {
	var l Layout
	n := r.N()
	if n != len(kinds) {
		return l, Errorf(CodeBadRequest, "bad record: %d arguments, its probe has %d", n, len(kinds))
	}
	off := RecordHead + 8*n
	if off > len(r) {
		return l, Errorf(CodeBadRequest, "bad record: %d arguments in %d bytes", n, len(r))
	}
	for i, k := range kinds {
		if k != ValString {
			continue
		}
		m := r.Slot(i)
		if m > StringMax || off+int(m) > len(r) {
			return l, Errorf(CodeBadRequest, "bad record: string argument %d of %d bytes", i, m)
		}
		l.str[i] = [2]int{off, int(m)}
		off += int(m)
	}
	off = (off + 7) &^ 7
	if off > len(r) || (len(r)-off)/8 > MaxStack {
		return l, Errorf(CodeBadRequest, "bad record: %d bytes after the strings", len(r)-off)
	}
	l.stack, l.depth = off, (len(r)-off)/8
	return l, nil
}

// Str is string argument i's bytes.
func (l *Layout) Str(r Record, i int) []byte { return r[l.str[i][0] : l.str[i][0]+l.str[i][1]] }

// Depth is the number of return addresses in the record's stack.
func (l *Layout) Depth() int { return l.depth }

// PC is the stack's return address i, innermost first.
func (l *Layout) PC(r Record, i int) uint64 { return binary.LittleEndian.Uint64(r[l.stack+8*i:]) }

// AppendValue appends argument i of rec as text: a number, true or false, or the
// string's bytes as they are.
func AppendValue(b []byte, kind byte, r Record, l *Layout, i int) []byte {
	s := r.Slot(i)
	switch kind {
	case ValInt:
		return strconv.AppendInt(b, int64(s), 10)
	case ValUint:
		return strconv.AppendUint(b, s, 10)
	case ValBool:
		return strconv.AppendBool(b, s != 0)
	case ValFloat:
		return strconv.AppendFloat(b, math.Float64frombits(s), 'g', -1, 64)
	}
	return append(b, l.Str(r, i)...)
}

// A trace's buffers are memory the traced process shares with sdtctl (linux): each
// is a RingHeader bytes header, then the ring of records. The header's words, all
// little-endian u64, written by the process only:
//
//	0    "gosdtrg1"
//	8    the ring's bytes (a power of two)
//	64   tail: the end of the last record written (bytes written, from the start)
//	72   writing: the end of the record being written; above tail while one is, so
//	     that one cut short by the process's end is counted (dropped), never read
//	80   drops: records dropped because the ring was full
//	128  head: the end of the records the process has sent in frames
//
// A reader whose process has ended reads what lies between the last head it was sent
// (Heads) and tail: the records are laid out as in a frame, with filler (PadRecord)
// and drop counts (LostRecord) among them.
const (
	RingHeader  = 4096
	RingMagic   = 0x3167727464736f67 // "gosdtrg1"
	RingSize    = 8
	RingTail    = 64
	RingWriting = 72
	RingDrops   = 80
	RingHead    = 128
)

// A trace's description log (DescLog) is shared too: the descriptions of every probe
// site the trace may record, written as the process arms its probes (before they can
// fire), so that a reader can decode records the process never sent. Its words:
//
//	0    "gosdtdl1"
//	8    bytes of frames written after DescLogStart: Responses of kind events with
//	     Descs only (AppendFrame's framing)
//	16   1 when some descriptions did not fit (a trace refuses probes that do not)
//	24   fires on a P that had no buffer (DescLogLost)
//
// A description may come again, later in the log, with the kinds its probe's first
// fire told (Desc.Pending): the last one of a probe and site is the one to use. The
// log's pages are committed as they are written: its size is address space only.
const (
	DescLogMagic = 0x316c647464736f67 // "gosdtdl1"
	DescLogLen   = 8
	DescLogFull  = 16
	DescLogStart = 64
	DescLogSize  = 64 << 20
)

// Leftover is the records of a ring (header and ring, as mapped) written after from
// (a byte count, as Heads): the records themselves, packed; marked, the drops the
// ring's records count there (LostRecord: a part of the header's drops, which count
// them all); cut, 1 when the end cut a record short (one was being written). A ring
// that cannot be read to its end is an error, with what could be read before. Every
// bound is checked: a ring is read as its process left it, and nothing in it is
// trusted.
func Leftover(m []byte, from uint64) (records []byte, marked, cut uint64, err error) {
	records, marked, err = leftover(m, from, &cut)
	return records, marked, cut, err
}

func leftover(m []byte, from uint64, cut *uint64) (records []byte, lost uint64, err error) {
	if len(m) < RingHeader+MinRing {
		return nil, 0, Errorf(CodeBadRequest, "ring of %d bytes", len(m))
	}
	le := binary.LittleEndian
	size := le.Uint64(m[RingSize:])
	if le.Uint64(m) != RingMagic || size == 0 || size&(size-1) != 0 || size > uint64(len(m)-RingHeader) {
		return nil, 0, Errorf(CodeBadRequest, "not a trace ring")
	}
	ring := m[RingHeader : RingHeader+int(size)]
	tail, writing := le.Uint64(m[RingTail:]), le.Uint64(m[RingWriting:])
	if writing > tail {
		*cut = 1
	}
	if head := le.Uint64(m[RingHead:]); head > from {
		from = head
	}
	if tail < from {
		return nil, lost, nil
	}
	if tail-from > size {
		return nil, lost, Errorf(CodeBadRequest, "ring: %d bytes to read of %d", tail-from, size)
	}
	for pos := from; pos < tail; {
		off := pos & (size - 1)
		if off+8 > size || pos&7 != 0 {
			return records, lost, Errorf(CodeBadRequest, "ring: misaligned record at %d", pos)
		}
		w := le.Uint64(ring[off:])
		n := w & 0xffff
		if n < 8 || n&7 != 0 || off+n > size || pos+n > tail {
			return records, lost, Errorf(CodeBadRequest, "ring: bad record of %d bytes at %d", n, pos)
		}
		switch w >> 16 & 0xff {
		case PadRecord:
		case LostRecord:
			if n != 16 {
				return records, lost, Errorf(CodeBadRequest, "ring: bad drop count at %d", pos)
			}
			lost += le.Uint64(ring[off+8:])
		default:
			if _, _, err := Split(ring[off : off+n]); err != nil {
				return records, lost, err
			}
			records = append(records, ring[off:off+n]...)
		}
		pos += n
	}
	return records, lost, nil
}

// MinRing is the smallest ring.
const MinRing = 4 << 10
