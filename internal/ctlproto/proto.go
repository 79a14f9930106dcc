package ctlproto

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// Version is the protocol version this package speaks.
const Version = 3

// Limits.
const (
	MaxFrame    = 1 << 20 // bytes of one frame's payload
	MaxSpecs    = 64      // specs in one enable or disable
	MinInterval = 100 * time.Millisecond
	MaxBufSize  = 1 << 30 // bytes of one per-P trace buffer
	MaxWhere    = 1024    // bytes of a predicate
)

// Error codes.
const (
	CodeBadSpec      = "badspec"
	CodeNoMatch      = "nomatch"
	CodeBadRequest   = "badrequest"
	CodeVersion      = "version"
	CodePermission   = "permission"
	CodeInternal     = "internal"
	CodeNotSupported = "notsupported"
	CodeBudget       = "budget"
	CodeBusy         = "busy"
	CodeTimeout      = "timeout"
)

// Request ops.
const (
	OpHello   = "hello"
	OpList    = "list"
	OpEnable  = "enable"
	OpDisable = "disable"
	OpTrace   = "trace"
	OpStat    = "stat"
	OpStop    = "stop"
)

// Response kinds.
const (
	KindHello   = "hello"
	KindOK      = "ok"
	KindList    = "list"
	KindStarted = "started"
	KindEvents  = "events"
	KindStat    = "stat"
	KindEnd     = "end"
	KindError   = "error"
)

// The first byte of a payload says what the message is: index+1 in these lists.
// Codes are never reused: a new op or kind goes at the end.
var (
	ops   = []string{OpHello, OpList, OpEnable, OpDisable, OpTrace, OpStat, OpStop}
	kinds = []string{KindHello, KindOK, KindList, KindStarted, KindEvents, KindStat, KindEnd, KindError}
)

func code(list []string, name string) (byte, bool) {
	for i, s := range list {
		if s == name {
			return byte(i + 1), true
		}
	}
	return 0, false
}

// Request is what the client sends.
type Request struct {
	Op         string
	Version    int
	Spec       string
	Specs      []string
	Persist    bool
	Count      int    // trace: stop after this many events
	DurationMS int64  // trace, stat: stop after this long
	BufSize    int    // trace: bytes of each per-P buffer (0: the process's default)
	By         string // stat: probe, site, or an argument (argN or its name)
	Value      string // stat: an argument rows sum, bound and average
	Hist       string // stat: "", HistQuantize or HistLinear: rows quantize Value
	LinLow     int64  // stat: a linear histogram's buckets, LinStep wide from LinLow to LinHigh
	LinHigh    int64
	LinStep    int64
	Clear      bool   // stat: each snapshot holds its interval's values, not all since the start
	IntervalMS int64  // stat: between snapshots
	Stack      int    // trace: return addresses of the fire's call stack each record carries, 0 to MaxStack
	Where      string // trace, stat: a predicate (internal/pred) a fire must match to be recorded
	// enable, trace, stat: signatures of the functions the specs place run-time probes
	// on, read from the executable's DWARF (sig.go)
	Sigs []FuncSig
	// trace (linux): the client reads the shared rings while the process writes them
	// and counts Count itself (live.go); the process sends no records
	Live bool
	// trace, with BufSize 0: the per-P size the process's default starts from
	// instead of its own, halved as its default is until the buffers fit its
	// memory budget (0: its own; a hello's BufSizeUpTo says the process takes it)
	BufSizeUpTo int
}

// Request field tags.
const (
	tqVersion = 1 + iota
	tqSpec
	tqSpecs
	tqPersist
	tqCount
	tqDuration
	tqBy
	tqHist
	tqInterval
	tqBufSize
	tqValue
	tqLinLow
	tqLinHigh
	tqLinStep
	tqClear
	tqStack
	tqWhere
	tqSig
	tqLive
	tqBufSizeUpTo
)

// Histograms of a stat.
const (
	HistQuantize = "quantize" // power-of-two buckets
	HistLinear   = "linear"   // LinStep-wide buckets from LinLow to LinHigh, one below, one above
)

// Response is what the server sends.
type Response struct {
	Kind    string
	Code    string
	Message string

	// hello
	Version int
	Pid     int
	Command string
	NProbes int
	SitesOn int
	// GoVersion is the Go the process was built with; Layouts, where set, says that
	// gosdt has not read that Go's layouts and which parts it refuses for it.
	GoVersion string
	Layouts   string

	// ok: N sites switched; for a disable, Kept stay on for other clients; for an
	// enable, AlreadyOn matched but were on before
	N         int
	Kept      int
	AlreadyOn int
	// KeptBy names the owners that hold the Kept sites on ("program", "sdtctl pid N
	// trace", "usdt tracer", "signal", "sdtctl enable").
	KeptBy []string

	Probes []Probe // list
	// More says another list frame follows with more of the probes: a list longer
	// than a frame holds (a spec naming thousands of functions) comes in several.
	More bool

	// started (trace): the number of per-P buffers and the bytes of each
	Buffers int
	BufSize int

	// events: descriptions first met in this batch, the clock of its records, then
	// the records (see Desc); Drops so far
	Descs   []Desc
	Clock   *Clock
	Records []byte
	Frames  []Frame // the call stack frames first met in this batch's records (trace --stack)

	Stat *Stat
	// events and end of a trace: events lost to it, all told (Drops) and per buffer
	// (BufferDrops, end only), events sent (Delivered, end only)
	Drops       uint64
	BufferDrops []uint64
	Delivered   uint64
	Filtered    uint64 // end of a trace: fires its predicate (Where) rejected

	// Shared (started, events; linux): the descriptors this frame carries
	// (SCM_RIGHTS), read-only: with started, the trace's description log (DescLog)
	// and then its first buffers; with events, the buffers added since. A reader maps
	// them to read what the process wrote after the last frame it sent, once it has
	// exited (RingHeader). Heads (events): per buffer, where the records this frame
	// and those before it carried end, in the buffer's byte count.
	Shared int
	Heads  []uint64
	// Live (started): the trace is read live (Request.Live): Shared's descriptors
	// are the log, the heads (HeadsMagic), then the buffers. (hello): the process
	// takes Request.Live (a process of an earlier gosdt refuses the field)
	Live bool
	// BufSizeUpTo (hello): the process takes Request.BufSizeUpTo
	BufSizeUpTo bool
}

// Response field tags.
const (
	trCode = 1 + iota
	trMessage
	trVersion
	trPid
	trCommand
	trNProbes
	trSitesOn
	trN
	trKept
	trAlreadyOn
	trKeptBy
	trProbe
	trDesc
	trRecords
	trStat
	trDrops
	trBuffers
	trBufSize
	trClock
	trBufferDrops
	trDelivered
	trFrame
	trFiltered
	trMore
	trGoVersion
	trLayouts
	trShared
	trHeads
	trLive
	trBufSizeUpTo
)

// Probe is one logical probe, as sdt.List describes it.
type Probe struct {
	Name    string   `json:"name"` // provider:module:function:name
	Kind    string   `json:"kind"` // "static", "build" (fbt placed by rules) or "runtime" (fbt placed while running)
	Args    []Arg    `json:"args,omitempty"`
	Enabled bool     `json:"enabled"`
	Hits    uint64   `json:"hits"`
	HeldBy  []string `json:"held_by,omitempty"` // who holds its sites (or it as a whole) on
	Sites   []Site   `json:"sites"`
}

// Arg is an argument's name and Go type, and in events its value.
type Arg struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Value string `json:"value,omitempty"`
	Cut   bool   `json:"cut,omitempty"` // a string value cut to its bound
}

// Site is one physical site.
type Site struct {
	Addr    uint64   `json:"addr"`
	File    string   `json:"file"`
	Line    int      `json:"line"`
	Kind    string   `json:"kind"`
	State   string   `json:"state"`
	Enabled bool     `json:"enabled"`
	Reason  string   `json:"reason,omitempty"`
	Hits    uint64   `json:"hits"`
	HeldBy  []string `json:"held_by,omitempty"` // who holds it on
}

// Event is one fire, as a client decodes it from a batch (EventReader).
type Event struct {
	Time      time.Time `json:"time"`
	Probe     string    `json:"probe"`
	Site      uint64    `json:"site,omitempty"`
	Goroutine uint64    `json:"goroutine,omitempty"`
	Args      []Arg     `json:"args,omitempty"`
	Stack     []string  `json:"stack,omitempty"` // "func file:line", innermost first
}

// Stat is one aggregation snapshot.
type Stat struct {
	// Time is when it was taken, in nanoseconds since the Unix epoch: not a time.Time,
	// whose methods (its formatting, 40 KB of code) every traced process would link
	// because a Stat travels in an interface. Clients convert it (time.Unix).
	Time     int64   `json:"-"`
	By       string  `json:"by"`
	Value    string  `json:"value,omitempty"`
	Hist     string  `json:"hist,omitempty"`     // "", HistQuantize, HistLinear
	Linear   *Linear `json:"linear,omitempty"`   // a linear histogram's buckets
	Interval bool    `json:"interval,omitempty"` // the values of one interval (stat --clear)
	Rows     []Row   `json:"rows"`
	Overflow uint64  `json:"overflow,omitempty"`
	Drops    uint64  `json:"drops,omitempty"`
}

// Linear is a linear histogram's buckets: Step wide from Low to High, one below Low
// (whose Low is math.MinInt64) and one from High up.
type Linear struct {
	Low  int64 `json:"low"`
	High int64 `json:"high"`
	Step int64 `json:"step"`
}

// Row is one key of a snapshot. Avg is not sent: the client computes it.
type Row struct {
	Key   string   `json:"key"`
	Count int64    `json:"count"`
	Sum   int64    `json:"sum,omitempty"`
	Min   int64    `json:"min,omitempty"`
	Max   int64    `json:"max,omitempty"`
	Avg   float64  `json:"avg,omitempty"`
	Hist  []Bucket `json:"hist,omitempty"`
}

// Bucket is a power-of-two histogram bucket: values from Low up to the next bucket.
type Bucket struct {
	Low   int64  `json:"low"`
	Count uint64 `json:"count"`
}

// Error is a protocol error: a Response of kind "error", or a local framing error.
type Error struct {
	Code    string
	Message string
	cause   error // what the error is also (Unwrap): io.ErrUnexpectedEOF for a frame cut short
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Unwrap is the error's cause: a frame cut short is also io.ErrUnexpectedEOF, so
// that a reader takes it for what it is, the peer's end (a process that exited
// while it wrote), not a request or reply that was wrong.
func (e *Error) Unwrap() error { return e.cause }

// Errorf makes an *Error.
//
// Not inlined: every caller would carry its own copy of the call to fmt, and no
// caller is on a hot path.
//
//go:noinline
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Err returns the response's error, or nil if it is not an error reply.
func (r *Response) Err() error {
	if r.Kind != KindError {
		return nil
	}
	return &Error{Code: r.Code, Message: r.Message}
}

// ErrorResponse is the reply for err: its code when it is an *Error, else internal.
func ErrorResponse(err error) *Response {
	if e, ok := errors.AsType[*Error](err); ok {
		return &Response{Kind: KindError, Code: e.Code, Message: e.Message}
	}
	return &Response{Kind: KindError, Code: CodeInternal, Message: err.Error()}
}

// Message is a Request or a Response.
type Message interface {
	appendTo(b []byte) ([]byte, error)
}

// WriteFrame writes m as one frame, in one write.
func WriteFrame(w io.Writer, m Message) error {
	b, err := AppendFrame(make([]byte, 0, 256), m)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// AppendFrame appends m as one frame to b: a stream reuses its buffer for every batch.
func AppendFrame(b []byte, m Message) ([]byte, error) {
	at := len(b)
	b, err := m.appendTo(append(b, 0, 0, 0, 0))
	if err != nil {
		return b[:at], err
	}
	n := len(b) - at - 4
	if n > MaxFrame {
		return b[:at], Errorf(CodeBadRequest, "frame of %d bytes exceeds %d", n, MaxFrame)
	}
	binary.BigEndian.PutUint32(b[at:], uint32(n))
	return b, nil
}

// ReadFrame reads one frame's payload. io.EOF means the connection ended cleanly
// between frames; a truncated, empty or oversized frame is a *Error with code
// badrequest.
func ReadFrame(r io.Reader) ([]byte, error) { return ReadFrameInto(r, nil) }

// ReadFrameInto is ReadFrame reading into buf when it is large enough: the payload
// is valid until the next call with the same buf.
func ReadFrameInto(r io.Reader, buf []byte) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			e := Errorf(CodeBadRequest, "truncated frame header")
			e.cause = io.ErrUnexpectedEOF
			return nil, e
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > MaxFrame {
		return nil, Errorf(CodeBadRequest, "frame length %d not in 1..%d", n, MaxFrame)
	}
	b := buf
	if cap(b) < int(n) {
		b = make([]byte, n)
	}
	b = b[:n]
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			e := Errorf(CodeBadRequest, "truncated frame: %d bytes announced", n)
			e.cause = io.ErrUnexpectedEOF
			return nil, e
		}
		return nil, err
	}
	return b, nil
}

func (q *Request) appendTo(b []byte) ([]byte, error) {
	op, ok := code(ops, q.Op)
	if !ok {
		return nil, Errorf(CodeBadRequest, "unknown op %q", q.Op)
	}
	e := enc{b: append(b, op)}
	e.uint(tqVersion, uint64(q.Version))
	e.str(tqSpec, q.Spec)
	e.strs(tqSpecs, q.Specs)
	e.bool(tqPersist, q.Persist)
	e.int(tqCount, int64(q.Count))
	e.int(tqDuration, q.DurationMS)
	e.str(tqBy, q.By)
	e.str(tqHist, q.Hist)
	e.int(tqInterval, q.IntervalMS)
	e.int(tqBufSize, int64(q.BufSize))
	e.str(tqValue, q.Value)
	e.int(tqLinLow, q.LinLow)
	e.int(tqLinHigh, q.LinHigh)
	e.int(tqLinStep, q.LinStep)
	e.bool(tqClear, q.Clear)
	e.int(tqStack, int64(q.Stack))
	e.str(tqWhere, q.Where)
	for i := range q.Sigs {
		e.msg(tqSig, q.Sigs[i].append)
	}
	e.bool(tqLive, q.Live)
	e.int(tqBufSizeUpTo, int64(q.BufSizeUpTo))
	return e.b, nil
}

// DecodeRequest parses and checks a request frame. A field this version does not
// know is an error: the server must not ignore what a newer client asked for.
func DecodeRequest(b []byte) (*Request, error) {
	if len(b) == 0 || b[0] == 0 || int(b[0]) > len(ops) {
		return nil, Errorf(CodeBadRequest, "bad message: not a request")
	}
	q := &Request{Op: ops[b[0]-1]}
	d := &dec{b: b[1:]}
	d.fields(func(tag int) bool {
		switch tag {
		case tqVersion:
			q.Version = d.small()
		case tqSpec:
			q.Spec = d.str()
		case tqSpecs:
			if len(q.Specs) >= MaxSpecs {
				d.fail(fmt.Sprintf("%s: more than %d specs", q.Op, MaxSpecs))
			}
			q.Specs = append(q.Specs, d.str())
		case tqPersist:
			q.Persist = d.bool()
		case tqCount:
			q.Count = int(d.int())
		case tqDuration:
			q.DurationMS = d.int()
		case tqBy:
			q.By = d.str()
		case tqHist:
			q.Hist = d.str()
		case tqInterval:
			q.IntervalMS = d.int()
		case tqBufSize:
			q.BufSize = int(d.int())
		case tqValue:
			q.Value = d.str()
		case tqLinLow:
			q.LinLow = d.int()
		case tqLinHigh:
			q.LinHigh = d.int()
		case tqLinStep:
			q.LinStep = d.int()
		case tqClear:
			q.Clear = d.bool()
		case tqStack:
			q.Stack = int(d.int())
		case tqWhere:
			q.Where = d.str()
		case tqSig:
			if len(q.Sigs) >= MaxSigs {
				d.fail(fmt.Sprintf("%s: more than %d signatures", q.Op, MaxSigs))
				return true
			}
			q.Sigs = append(q.Sigs, FuncSig{})
			d.msg(q.Sigs[len(q.Sigs)-1].decode)
		case tqLive:
			q.Live = d.bool()
		case tqBufSizeUpTo:
			q.BufSizeUpTo = int(d.int())
		default:
			d.fail(fmt.Sprintf("unknown field %d in %s", tag, q.Op))
		}
		return true
	})
	if d.err != nil {
		return nil, d.err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	return q, nil
}

// Check validates a request's fields for its op.
func (q *Request) Check() error {
	bad := func(format string, args ...any) error { return Errorf(CodeBadRequest, format, args...) }
	switch q.Op {
	case OpHello, OpStop, OpList:
	case OpEnable, OpDisable:
		if len(q.Specs) == 0 {
			return bad("%s: no specs", q.Op)
		}
		if len(q.Specs) > MaxSpecs {
			return bad("%s: %d specs, at most %d", q.Op, len(q.Specs), MaxSpecs)
		}
	case OpTrace, OpStat:
		if q.Spec == "" {
			return bad("%s: no spec", q.Op)
		}
		if q.Count < 0 || q.DurationMS < 0 || q.IntervalMS < 0 || q.BufSize < 0 {
			return bad("%s: negative count, duration, interval or buffer size", q.Op)
		}
		if q.Stack < 0 || q.Stack > MaxStack || q.Stack > 0 && q.Op != OpTrace {
			return bad("%s: a stack of %d return addresses: want 0 to %d, in a trace", q.Op, q.Stack, MaxStack)
		}
		if len(q.Where) > MaxWhere {
			return bad("%s: a predicate of %d bytes, at most %d", q.Op, len(q.Where), MaxWhere)
		}
		if q.BufSize > MaxBufSize || q.BufSizeUpTo > MaxBufSize || q.BufSizeUpTo < 0 {
			return bad("%s: buffers of %d bytes, at most %d", q.Op, max(q.BufSize, q.BufSizeUpTo), MaxBufSize)
		}
		if q.Op == OpStat && q.IntervalMS != 0 && q.IntervalMS < MinInterval.Milliseconds() {
			return bad("stat: interval below %v", MinInterval)
		}
		switch q.Hist {
		case "", HistQuantize, HistLinear:
		default:
			return bad("stat: histogram %q: want %s or %s", q.Hist, HistQuantize, HistLinear)
		}
	case "":
		return bad("no op")
	default:
		return bad("unknown op %q", q.Op)
	}
	return nil
}

func (r *Response) appendTo(b []byte) ([]byte, error) {
	kind, ok := code(kinds, r.Kind)
	if !ok {
		return nil, Errorf(CodeInternal, "unknown response kind %q", r.Kind)
	}
	e := enc{b: append(b, kind)}
	e.str(trCode, r.Code)
	e.str(trMessage, r.Message)
	e.uint(trVersion, uint64(r.Version))
	e.uint(trPid, uint64(r.Pid))
	e.str(trCommand, r.Command)
	e.uint(trNProbes, uint64(r.NProbes))
	e.uint(trSitesOn, uint64(r.SitesOn))
	e.uint(trN, uint64(r.N))
	e.uint(trKept, uint64(r.Kept))
	e.uint(trAlreadyOn, uint64(r.AlreadyOn))
	e.strs(trKeptBy, r.KeptBy)
	for i := range r.Probes {
		e.msg(trProbe, r.Probes[i].append)
	}
	for i := range r.Descs {
		e.msg(trDesc, r.Descs[i].append)
	}
	e.uint(trBuffers, uint64(r.Buffers))
	e.uint(trBufSize, uint64(r.BufSize))
	if r.Clock != nil {
		e.msg(trClock, r.Clock.append)
	}
	e.bytes(trRecords, r.Records)
	if r.Stat != nil {
		e.msg(trStat, r.Stat.append)
	}
	e.uint(trDrops, r.Drops)
	if len(r.BufferDrops) > 0 {
		var b []byte
		for _, n := range r.BufferDrops {
			b = binary.AppendUvarint(b, n)
		}
		e.bytes(trBufferDrops, b)
	}
	e.uint(trDelivered, r.Delivered)
	for i := range r.Frames {
		e.msg(trFrame, r.Frames[i].append)
	}
	e.uint(trFiltered, r.Filtered)
	e.bool(trMore, r.More)
	e.str(trGoVersion, r.GoVersion)
	e.str(trLayouts, r.Layouts)
	e.uint(trShared, uint64(r.Shared))
	if len(r.Heads) > 0 {
		var b []byte
		for _, n := range r.Heads {
			b = binary.AppendUvarint(b, n)
		}
		e.bytes(trHeads, b)
	}
	e.bool(trLive, r.Live)
	e.bool(trBufSizeUpTo, r.BufSizeUpTo)
	return e.b, nil
}

// DecodeResponse parses a response frame. Fields it does not know are skipped, so
// that a newer server can add to what it tells.
func DecodeResponse(b []byte) (*Response, error) {
	if len(b) == 0 || b[0] == 0 || int(b[0]) > len(kinds) {
		return nil, Errorf(CodeBadRequest, "bad response: unknown kind")
	}
	r := &Response{Kind: kinds[b[0]-1]}
	d := &dec{b: b[1:]}
	d.fields(func(tag int) bool {
		switch tag {
		case trCode:
			r.Code = d.str()
		case trMessage:
			r.Message = d.str()
		case trVersion:
			r.Version = d.small()
		case trPid:
			r.Pid = d.small()
		case trCommand:
			r.Command = d.str()
		case trNProbes:
			r.NProbes = d.small()
		case trSitesOn:
			r.SitesOn = d.small()
		case trGoVersion:
			r.GoVersion = d.str()
		case trLayouts:
			r.Layouts = d.str()
		case trN:
			r.N = d.small()
		case trKept:
			r.Kept = d.small()
		case trAlreadyOn:
			r.AlreadyOn = d.small()
		case trKeptBy:
			r.KeptBy = append(r.KeptBy, d.str())
		case trProbe:
			r.Probes = append(r.Probes, Probe{})
			d.msg(r.Probes[len(r.Probes)-1].decode)
		case trDesc:
			r.Descs = append(r.Descs, Desc{})
			d.msg(r.Descs[len(r.Descs)-1].decode)
		case trRecords:
			r.Records = d.bytes()
		case trStat:
			r.Stat = new(Stat)
			d.msg(r.Stat.decode)
		case trDrops:
			r.Drops = d.uint()
		case trBuffers:
			r.Buffers = d.small()
		case trBufSize:
			r.BufSize = d.small()
		case trClock:
			r.Clock = new(Clock)
			d.msg(r.Clock.decode)
		case trBufferDrops:
			d.msg(func(h *dec) {
				for len(h.b) > 0 && h.err == nil {
					r.BufferDrops = append(r.BufferDrops, h.uvarint())
				}
			})
		case trDelivered:
			r.Delivered = d.uint()
		case trFiltered:
			r.Filtered = d.uint()
		case trMore:
			r.More = d.bool()
		case trShared:
			r.Shared = d.small()
		case trHeads:
			d.msg(func(h *dec) {
				for len(h.b) > 0 && h.err == nil {
					r.Heads = append(r.Heads, h.uvarint())
				}
			})
		case trLive:
			r.Live = d.bool()
		case trBufSizeUpTo:
			r.BufSizeUpTo = d.bool()
		case trFrame:
			r.Frames = append(r.Frames, Frame{})
			d.msg(r.Frames[len(r.Frames)-1].decode)
		default:
			return false
		}
		return true
	})
	if d.err != nil {
		return nil, d.err
	}
	if r.Kind == KindList && r.Probes == nil {
		r.Probes = []Probe{}
	}
	return r, nil
}

func (p *Probe) append(e *enc) {
	e.str(1, p.Name)
	for i := range p.Args {
		e.msg(2, p.Args[i].append)
	}
	e.bool(3, p.Enabled)
	e.uint(4, p.Hits)
	e.strs(5, p.HeldBy)
	for i := range p.Sites {
		e.msg(6, p.Sites[i].append)
	}
	e.str(7, p.Kind)
}

func (p *Probe) decode(d *dec) {
	p.Sites = []Site{}
	d.fields(func(tag int) bool {
		switch tag {
		case 1:
			p.Name = d.str()
		case 2:
			p.Args = append(p.Args, Arg{})
			d.msg(p.Args[len(p.Args)-1].decode)
		case 3:
			p.Enabled = d.bool()
		case 4:
			p.Hits = d.uint()
		case 5:
			p.HeldBy = append(p.HeldBy, d.str())
		case 6:
			p.Sites = append(p.Sites, Site{})
			d.msg(p.Sites[len(p.Sites)-1].decode)
		case 7:
			p.Kind = d.str()
		default:
			return false
		}
		return true
	})
}

func (a *Arg) append(e *enc) {
	e.str(1, a.Name)
	e.str(2, a.Type)
}

func (a *Arg) decode(d *dec) {
	d.fields(func(tag int) bool {
		switch tag {
		case 1:
			a.Name = d.str()
		case 2:
			a.Type = d.str()
		default:
			return false
		}
		return true
	})
}

func (s *Site) append(e *enc) {
	e.uint(1, s.Addr)
	e.str(2, s.File)
	e.uint(3, uint64(s.Line))
	e.str(4, s.Kind)
	e.str(5, s.State)
	e.bool(6, s.Enabled)
	e.str(7, s.Reason)
	e.uint(8, s.Hits)
	e.strs(9, s.HeldBy)
}

func (s *Site) decode(d *dec) {
	d.fields(func(tag int) bool {
		switch tag {
		case 1:
			s.Addr = d.uint()
		case 2:
			s.File = d.str()
		case 3:
			s.Line = d.small()
		case 4:
			s.Kind = d.str()
		case 5:
			s.State = d.str()
		case 6:
			s.Enabled = d.bool()
		case 7:
			s.Reason = d.str()
		case 8:
			s.Hits = d.uint()
		case 9:
			s.HeldBy = append(s.HeldBy, d.str())
		default:
			return false
		}
		return true
	})
}

func (st *Stat) append(e *enc) {
	e.int(1, st.Time)
	e.str(2, st.By)
	e.str(3, st.Value)
	for i := range st.Rows {
		e.msg(4, st.Rows[i].append)
	}
	e.uint(5, st.Overflow)
	e.uint(6, st.Drops)
	e.str(7, st.Hist)
	if l := st.Linear; l != nil {
		e.msg(8, func(e *enc) {
			e.int(1, l.Low)
			e.int(2, l.High)
			e.int(3, l.Step)
		})
	}
	e.bool(9, st.Interval)
}

func (st *Stat) decode(d *dec) {
	st.Rows = []Row{}
	d.fields(func(tag int) bool {
		switch tag {
		case 1:
			st.Time = d.int()
		case 2:
			st.By = d.str()
		case 3:
			st.Value = d.str()
		case 4:
			st.Rows = append(st.Rows, Row{})
			d.msg(st.Rows[len(st.Rows)-1].decode)
		case 5:
			st.Overflow = d.uint()
		case 6:
			st.Drops = d.uint()
		case 7:
			st.Hist = d.str()
		case 8:
			l := new(Linear)
			d.msg(func(m *dec) {
				m.fields(func(tag int) bool {
					switch tag {
					case 1:
						l.Low = m.int()
					case 2:
						l.High = m.int()
					case 3:
						l.Step = m.int()
					default:
						return false
					}
					return true
				})
			})
			st.Linear = l
		case 9:
			st.Interval = d.bool()
		default:
			return false
		}
		return true
	})
	for i := range st.Rows {
		if r := &st.Rows[i]; st.Value != "" && r.Count > 0 {
			r.Avg = float64(r.Sum) / float64(r.Count)
		}
	}
}

func (r *Row) append(e *enc) {
	e.str(1, r.Key)
	e.int(2, r.Count)
	e.int(3, r.Sum)
	e.int(4, r.Min)
	e.int(5, r.Max)
	if len(r.Hist) > 0 {
		var h []byte
		for _, b := range r.Hist {
			h = binary.AppendUvarint(h, zigzag(b.Low))
			h = binary.AppendUvarint(h, b.Count)
		}
		e.bytesAlways(6, string(h))
	}
}

func (r *Row) decode(d *dec) {
	d.fields(func(tag int) bool {
		switch tag {
		case 1:
			r.Key = d.str()
		case 2:
			r.Count = d.int()
		case 3:
			r.Sum = d.int()
		case 4:
			r.Min = d.int()
		case 5:
			r.Max = d.int()
		case 6:
			d.msg(func(h *dec) {
				for len(h.b) > 0 && h.err == nil {
					low := unzigzag(h.uvarint())
					r.Hist = append(r.Hist, Bucket{Low: low, Count: h.uvarint()})
				}
			})
		default:
			return false
		}
		return true
	})
}
