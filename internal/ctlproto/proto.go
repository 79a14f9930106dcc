package ctlproto

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
)

// Version is the protocol version this package speaks.
const Version = 1

// Limits.
const (
	MaxFrame    = 1 << 20 // bytes of one frame's payload
	MaxSpecs    = 64      // specs in one enable or disable
	MinInterval = 100 * time.Millisecond
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
	KindEvent   = "event"
	KindStat    = "stat"
	KindEnd     = "end"
	KindError   = "error"
)

// Request is what the client sends.
type Request struct {
	Op         string   `json:"op"`
	Version    int      `json:"version,omitempty"`
	Spec       string   `json:"spec,omitempty"`
	Specs      []string `json:"specs,omitempty"`
	Persist    bool     `json:"persist,omitempty"`
	Count      int      `json:"count,omitempty"`       // trace: stop after this many events
	DurationMS int64    `json:"duration_ms,omitempty"` // trace, stat: stop after this long
	By         string   `json:"by,omitempty"`          // stat: probe, site or argN
	Hist       string   `json:"hist,omitempty"`        // stat: argN to quantize
	IntervalMS int64    `json:"interval_ms,omitempty"` // stat: between snapshots
}

// Response is what the server sends.
type Response struct {
	Kind    string `json:"kind"`
	Code    string `json:"code,omitempty"`
	Message string `json:"message,omitempty"`

	// hello
	Version int    `json:"version,omitempty"`
	Pid     int    `json:"pid,omitempty"`
	Command string `json:"command,omitempty"`
	NProbes int    `json:"probes,omitempty"`
	SitesOn int    `json:"sites_on,omitempty"`

	// ok: N sites switched; for a disable, Kept stay on for other clients; for an
	// enable, AlreadyOn matched but were on before
	N         int `json:"n,omitempty"`
	Kept      int `json:"kept,omitempty"`
	AlreadyOn int `json:"already_on,omitempty"`
	// KeptBy names the owners that hold the Kept sites on ("program", "sdtctl pid N
	// trace", "usdt tracer", "signal", "sdtctl enable").
	KeptBy []string `json:"kept_by,omitempty"`

	Probes []Probe `json:"list,omitempty"`
	Event  *Event  `json:"event,omitempty"`
	Stat   *Stat   `json:"stat,omitempty"`
	Drops  uint64  `json:"drops,omitempty"`
}

// Probe is one logical probe, as sdt.List describes it.
type Probe struct {
	Name    string   `json:"name"` // provider:module:function:name
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

// Event is one fire.
type Event struct {
	Time  time.Time `json:"time"`
	Probe string    `json:"probe"`
	Site  uint64    `json:"site,omitempty"`
	Args  []Arg     `json:"args,omitempty"`
}

// Stat is one aggregation snapshot.
type Stat struct {
	Time     time.Time `json:"time"`
	By       string    `json:"by"`
	Value    string    `json:"value,omitempty"`
	Rows     []Row     `json:"rows"`
	Overflow uint64    `json:"overflow,omitempty"`
	Drops    uint64    `json:"drops,omitempty"`
}

// Row is one key of a snapshot.
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
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf makes an *Error.
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
	var e *Error
	if errors.As(err, &e) {
		return &Response{Kind: KindError, Code: e.Code, Message: e.Message}
	}
	return &Response{Kind: KindError, Code: CodeInternal, Message: err.Error()}
}

// WriteFrame writes v as one frame.
func WriteFrame(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if len(b) > MaxFrame {
		return Errorf(CodeBadRequest, "frame of %d bytes exceeds %d", len(b), MaxFrame)
	}
	buf := make([]byte, 4+len(b))
	binary.BigEndian.PutUint32(buf, uint32(len(b)))
	copy(buf[4:], b)
	_, err = w.Write(buf)
	return err
}

// ReadFrame reads one frame's payload. io.EOF means the connection ended cleanly
// between frames; a truncated, empty or oversized frame is a *Error with code
// badrequest.
func ReadFrame(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if err == io.EOF {
			return nil, io.EOF
		}
		if err == io.ErrUnexpectedEOF {
			return nil, Errorf(CodeBadRequest, "truncated frame header")
		}
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n == 0 || n > MaxFrame {
		return nil, Errorf(CodeBadRequest, "frame length %d not in 1..%d", n, MaxFrame)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil, Errorf(CodeBadRequest, "truncated frame: %d bytes announced", n)
		}
		return nil, err
	}
	return b, nil
}

// decode unmarshals one JSON object strictly: unknown fields and trailing data are
// errors.
func decode(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return Errorf(CodeBadRequest, "bad message: %v", err)
	}
	if d.More() {
		return Errorf(CodeBadRequest, "bad message: data after the object")
	}
	return nil
}

// DecodeRequest parses and checks a request frame.
func DecodeRequest(b []byte) (*Request, error) {
	var q Request
	if len(b) == 0 || b[0] != '{' {
		return nil, Errorf(CodeBadRequest, "bad message: not a JSON object")
	}
	if err := decode(b, &q); err != nil {
		return nil, err
	}
	if err := q.Check(); err != nil {
		return nil, err
	}
	return &q, nil
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
		if q.Count < 0 || q.DurationMS < 0 || q.IntervalMS < 0 {
			return bad("%s: negative count, duration or interval", q.Op)
		}
		if q.Op == OpStat && q.IntervalMS != 0 && q.IntervalMS < MinInterval.Milliseconds() {
			return bad("stat: interval below %v", MinInterval)
		}
	case "":
		return bad("no op")
	default:
		return bad("unknown op %q", q.Op)
	}
	return nil
}

// DecodeResponse parses a response frame.
func DecodeResponse(b []byte) (*Response, error) {
	var r Response
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, Errorf(CodeBadRequest, "bad response: %v", err)
	}
	if r.Kind == "" {
		return nil, Errorf(CodeBadRequest, "bad response: no kind")
	}
	return &r, nil
}
