package ctlproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

func frame(b []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	return append(out, b...)
}

func encode(t testing.TB, m Message) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteFrame(&buf, m); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFrame(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFrame(&buf); err != io.EOF {
		t.Fatalf("after the last frame: %v", err)
	}
	return b
}

func TestRequestRoundTrip(t *testing.T) {
	for _, q := range []Request{
		{Op: OpHello, Version: Version},
		{Op: OpEnable, Specs: []string{"proc:::exit", ""}, Persist: true},
		{Op: OpDisable, Specs: []string{"a:b:c:d"}},
		{Op: OpTrace, Spec: "*", Count: 3, DurationMS: 1500, BufSize: 4096},
		{Op: OpTrace, Spec: "*", Live: true, BufSizeUpTo: 32 << 20},
		{Op: OpTrace, Spec: "*", Stack: StackDepth, Where: `arg0 > 100 && path == "/api"`},
		{Op: OpStat, Spec: "x", By: "arg0", Value: "arg1", Hist: HistQuantize, IntervalMS: 500, DurationMS: 2},
		{Op: OpStat, Spec: "x", By: "path", Value: "latency_ns", Hist: HistLinear, LinLow: -5, LinHigh: 100, LinStep: 5, Clear: true},
		{Op: OpList}, {Op: OpStop},
		{Op: OpTrace, Spec: "fbt:a:F:", Sigs: []FuncSig{{Func: "a.F",
			Spills:  []Spill{{Reg: 0, Size: 8, Off: 0}, {Reg: 32, Size: 4, Off: -8}},
			Params:  []SigValue{{Name: "s", Type: "string", Kind: "string", Words: []SigWord{{Reg: 0, Size: 8}, {Reg: 1, Size: 8}}}, {Name: "f", Type: "float32", Kind: "float", Words: []SigWord{{Float: true, Size: 4}}}},
			Results: []SigValue{{Name: "r0", Type: "error", Kind: "error", Words: []SigWord{{Reg: 0, Size: 8}, {Reg: 1, Size: 8}}}}}}},
	} {
		got, err := DecodeRequest(encode(t, &q))
		if err != nil || !reflect.DeepEqual(*got, q) {
			t.Errorf("%+v: decoded %+v, %v", q, got, err)
		}
	}
}

func TestResponseRoundTrip(t *testing.T) {
	now := time.Unix(1700000000, 123456789)
	for _, r := range []Response{
		{Kind: KindHello, Version: Version, Pid: 4242, Command: "app", NProbes: 3, SitesOn: 1},
		{Kind: KindHello, Version: Version, Pid: 1, Live: true, BufSizeUpTo: true},
		{Kind: KindOK, N: 2, Kept: 1, KeptBy: []string{"program", "sdtctl pid 7 trace"}},
		{Kind: KindError, Code: CodeNoMatch, Message: `"x" matches no probe`},
		{Kind: KindList, More: true, Probes: []Probe{{Name: "p:m:f:n", Kind: "runtime", Args: []Arg{{Name: "i", Type: "int"}}, Enabled: true, Hits: 9,
			HeldBy: []string{"program"}, Sites: []Site{{Addr: 0x401000, File: "/x/y.go", Line: 12, Kind: "fire",
				State: "sealed-on", Enabled: true, Hits: 9, HeldBy: []string{"program"}}, {Addr: 1, Reason: "why"}}}}},
		{Kind: KindStat, Stat: &Stat{Time: now.UnixNano(), By: "arg1", Value: "arg0", Overflow: 2, Drops: 1, Hist: HistLinear, Linear: &Linear{Low: -10, High: 10, Step: 2}, Interval: true,
			Rows: []Row{{Key: "a", Count: 4, Sum: -10, Min: -9, Max: 3, Avg: -2.5, Hist: []Bucket{{Low: -8, Count: 1}, {Low: 2, Count: 3}}}}}},
		{Kind: KindEnd, Drops: 77, BufferDrops: []uint64{70, 0, 7}, Delivered: 5, Filtered: 9},
		{Kind: KindStarted, Buffers: 2, BufSize: 1 << 20},
	} {
		got, err := DecodeResponse(encode(t, &r))
		if err != nil || !reflect.DeepEqual(*got, r) {
			t.Errorf("%+v:\ndecoded %+v, %v", r, got, err)
		}
	}
}

// appendRecord appends a record in the layout of events.go, as a process's buffers
// hold it.
func appendRecord(b []byte, probe uint32, site, ticks, goid uint64, kinds []byte, vals []uint64, strs []string, cut uint8, stack []uint64) []byte {
	at := len(b)
	b = binary.LittleEndian.AppendUint64(b, uint64(len(kinds))<<16|uint64(cut)<<24|uint64(probe)<<32)
	b = binary.LittleEndian.AppendUint64(b, site)
	b = binary.LittleEndian.AppendUint64(b, ticks)
	b = binary.LittleEndian.AppendUint64(b, goid)
	for i, k := range kinds {
		v := vals[i]
		if k == ValString {
			v = uint64(len(strs[i]))
		}
		b = binary.LittleEndian.AppendUint64(b, v)
	}
	for i, k := range kinds {
		if k == ValString {
			b = append(b, strs[i]...)
		}
	}
	for len(b)%8 != 0 {
		b = append(b, 0)
	}
	for _, pc := range stack {
		b = binary.LittleEndian.AppendUint64(b, pc)
	}
	binary.LittleEndian.PutUint16(b[at:], uint16(len(b)-at))
	return b
}

func TestEvents(t *testing.T) {
	kinds := []byte{ValInt, ValUint, ValBool, ValFloat, ValString}
	var recs []byte
	recs = appendRecord(recs, 1, 0x1234, 1000, 17, kinds, []uint64{math.MaxUint64, math.MaxUint64, 1, math.Float64bits(-2.5), 0},
		[]string{4: "abc"}, 1<<4, []uint64{0x401000, 0x402000})
	recs = appendRecord(recs, 2, 0, 1010, 0, nil, nil, nil, 0, nil)
	clock := &Clock{Ticks: 1000, Wall: 1700000000123456789, NsPerTick: 0.5}
	r := &Response{Kind: KindEvents, Records: recs, Clock: clock, Frames: []Frame{{PC: 0x401000, Func: "main.step", File: "/src/main.go", Line: 17}}, Descs: []Desc{
		{ID: 1, Probe: "p:m:f:n", Site: 0x1234, Args: []Arg{{Name: "a", Type: "int"}, {Name: "b", Type: "uint64"}}, Kinds: kinds},
		{ID: 2, Probe: "p:m::other"}}}
	got, err := DecodeResponse(encode(t, r))
	if err != nil {
		t.Fatal(err)
	}
	var er EventReader
	evs, err := er.Read(got)
	if err != nil || len(evs) != 2 {
		t.Fatalf("%+v %v", evs, err)
	}
	want := []Arg{{Name: "a", Type: "int", Value: "-1"}, {Name: "b", Type: "uint64", Value: "18446744073709551615"},
		{Name: "arg2", Value: "true"}, {Name: "arg3", Value: "-2.5"}, {Name: "arg4", Value: "abc", Cut: true}}
	if e := evs[0]; e.Probe != "p:m:f:n" || e.Site != 0x1234 || e.Goroutine != 17 || e.Time.UnixNano() != clock.Wall ||
		!reflect.DeepEqual(e.Args, want) || !reflect.DeepEqual(e.Stack, []string{"main.step /src/main.go:17", "? :0"}) {
		t.Errorf("event 0: %+v", e)
	}
	if e := evs[1]; e.Probe != "p:m::other" || e.Time.UnixNano() != clock.Wall+5 || len(e.Args) != 0 || e.Stack != nil {
		t.Errorf("event 1: %+v", e)
	}
	// The descriptions and the clock stay known to the reader: a later batch need not
	// repeat them.
	evs, err = er.Read(&Response{Kind: KindEvents, Records: appendRecord(nil, 2, 0, 1020, 0, nil, nil, nil, 0, nil)})
	if err != nil || len(evs) != 1 || evs[0].Time.UnixNano() != clock.Wall+10 {
		t.Errorf("second batch: %+v %v", evs, err)
	}
	for _, bad := range []struct {
		what string
		r    *Response
	}{
		{"a record of an undescribed probe", &Response{Clock: clock, Records: appendRecord(nil, 3, 0, 0, 0, nil, nil, nil, 0, nil)}},
		{"records before a clock", &Response{Descs: []Desc{{ID: 2}}, Records: appendRecord(nil, 2, 0, 0, 0, nil, nil, nil, 0, nil)}},
		{"a record with more arguments than its desc", &Response{Clock: clock, Descs: []Desc{{ID: 2}},
			Records: appendRecord(nil, 2, 0, 0, 0, []byte{ValInt}, []uint64{1}, nil, 0, nil)}},
		{"a string past the record's end", &Response{Clock: clock, Descs: []Desc{{ID: 2, Kinds: []byte{ValString}}},
			Records: appendRecord(nil, 2, 0, 0, 0, []byte{ValInt}, []uint64{60}, nil, 0, nil)}},
		{"a record cut short", &Response{Clock: clock, Descs: []Desc{{ID: 2}}, Records: appendRecord(nil, 2, 0, 0, 0, nil, nil, nil, 0, nil)[:24]}},
	} {
		if _, err := new(EventReader).Read(bad.r); err == nil {
			t.Errorf("%s decodes", bad.what)
		}
	}
}

func TestBadInput(t *testing.T) {
	req := func(op byte, fields ...[]byte) []byte {
		return frame(append([]byte{op}, bytes.Join(fields, nil)...))
	}
	str := func(tag int, s string) []byte {
		var e enc
		e.bytesAlways(tag, s)
		return e.b
	}
	num := func(tag int, v int64) []byte {
		var e enc
		e.int(tag, v)
		return e.b
	}
	for name, in := range map[string][]byte{
		"truncated header": {0, 0},
		"zero length":      {0, 0, 0, 0},
		"oversized":        {0x7f, 0, 0, 0},
		"truncated body":   append([]byte{0, 0, 0, 10}, 1, 2),
		"no op":            frame([]byte{0}),
		"unknown op":       frame([]byte{99}),
		"unknown field":    req(2, num(60, 1)),
		"bad key":          req(2, []byte{0}),
		"bad varint":       req(2, []byte{tqCount << 1, 0xff}),
		"past the end":     req(5, []byte{tqSpec<<1 | 1, 9, 'x'}),
		"wrong type":       req(5, num(tqSpec, 7)),
		"enable no specs":  req(3),
		"negative count":   req(5, str(tqSpec, "x"), num(tqCount, -1)),
		"too many specs":   req(3, bytes.Repeat(str(tqSpecs, "a"), MaxSpecs+1)),
		"short interval":   req(6, str(tqSpec, "x"), num(tqInterval, 5)),
		"deep stack":       req(5, str(tqSpec, "x"), num(tqStack, MaxStack+1)),
		"negative stack":   req(5, str(tqSpec, "x"), num(tqStack, -1)),
		"stat with stack":  req(6, str(tqSpec, "x"), num(tqStack, 4)),
		"long predicate":   req(5, str(tqSpec, "x"), str(tqWhere, strings.Repeat("1", MaxWhere+1))),
		"huge default":     req(5, str(tqSpec, "x"), num(tqBufSizeUpTo, MaxBufSize+1)),
		"negative default": req(5, str(tqSpec, "x"), num(tqBufSizeUpTo, -1)),
	} {
		b, err := ReadFrame(bytes.NewReader(in))
		if err == nil {
			_, err = DecodeRequest(b)
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest {
			t.Errorf("%s: %v, want a badrequest error", name, err)
		}
		// a frame cut short is the peer's end (a process that exited while it
		// wrote), which readers tell from a wrong frame by io.ErrUnexpectedEOF
		if cut := strings.HasPrefix(name, "truncated"); errors.Is(err, io.ErrUnexpectedEOF) != cut {
			t.Errorf("%s: errors.Is(%v, io.ErrUnexpectedEOF) = %v, want %v", name, err, !cut, cut)
		}
	}
}

// TestResponseSkipsUnknown: a newer server may add fields; this client reads on.
func TestResponseSkipsUnknown(t *testing.T) {
	b := encode(t, &Response{Kind: KindOK, N: 3})
	var e enc
	e.uint(90, 5)
	e.str(91, "new")
	r, err := DecodeResponse(append(b, e.b...))
	if err != nil || r.N != 3 {
		t.Fatalf("%+v %v", r, err)
	}
}

func FuzzReadFrame(f *testing.F) {
	f.Add(encode(f, &Request{Op: OpHello, Version: Version}))
	f.Add([]byte{0, 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 1})
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		for {
			b, err := ReadFrame(r)
			if err != nil {
				return
			}
			if len(b) == 0 || len(b) > MaxFrame {
				t.Fatalf("frame of %d bytes", len(b))
			}
			DecodeRequest(b)
		}
	})
}

func FuzzDecodeRequest(f *testing.F) {
	for _, q := range []Request{{Op: OpHello, Version: 1}, {Op: OpEnable, Specs: []string{"a:b:c:d"}, Persist: true},
		{Op: OpStat, Spec: "x", By: "arg0", Hist: "arg1", IntervalMS: 500}, {Op: OpTrace, Spec: "*", Count: 3}} {
		f.Add(encode(f, &q))
	}
	f.Add([]byte{5, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		q, err := DecodeRequest(in)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) || e.Code != CodeBadRequest {
				t.Fatalf("error %v is not a badrequest *Error", err)
			}
			return
		}
		if q.Check() != nil {
			t.Fatal("decoded request does not pass Check")
		}
		// What decodes encodes back to something that decodes the same.
		again, err := DecodeRequest(encode(t, q))
		if err != nil || !reflect.DeepEqual(again, q) {
			t.Fatalf("%+v re-decodes as %+v, %v", q, again, err)
		}
	})
}

func FuzzDecodeResponse(f *testing.F) {
	f.Add(encode(f, &Response{Kind: KindList, Probes: []Probe{{Name: "a", Sites: []Site{{Addr: 1}}}}}))
	f.Add(encode(f, &Response{Kind: KindStat, Stat: &Stat{Rows: []Row{{Key: "k", Hist: []Bucket{{Low: 1, Count: 2}}}}}}))
	f.Add(encode(f, &Response{Kind: KindEvents, Descs: []Desc{{ID: 1, Probe: "p", Args: []Arg{{Name: "s"}}, Kinds: []byte{ValString}}},
		Clock: &Clock{NsPerTick: 1}, Records: appendRecord(nil, 1, 0, 5, 1, []byte{ValString}, []uint64{0}, []string{strings.Repeat("x", 9)}, 0, nil)}))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := DecodeResponse(in)
		if err != nil {
			return
		}
		// What decodes is a response the server could have sent: encoded again, it
		// decodes to what encodes the same (fields skipped as unknown, and empty ones,
		// which the encoding leaves out, aside).
		b, err := AppendFrame(nil, r)
		if err != nil {
			if len(in) <= MaxFrame {
				t.Fatalf("a decoded response does not encode: %v\n%+v", err, r)
			}
			return
		}
		again, err := DecodeResponse(b[4:])
		if err != nil {
			t.Fatalf("a decoded response, encoded again, does not decode: %v\n%+v", err, r)
		}
		if b2, err := AppendFrame(nil, again); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("decoded %+v, encoded again and decoded %+v, which encodes otherwise (%v)", r, again, err)
		}
		var er EventReader
		er.Read(r)
	})
}

// FuzzRecords: any bytes, read as a batch's records against descriptions of every
// kind, decode or fail; they never read out of bounds.
func FuzzRecords(f *testing.F) {
	kinds := []byte{ValInt, ValUint, ValBool, ValFloat, ValString}
	f.Add(appendRecord(nil, 0, 0, 1, 2, kinds, []uint64{1, 2, 1, 0, 0}, []string{4: "hello"}, 0, []uint64{1, 2, 3}))
	f.Add(appendRecord(appendRecord(nil, 1, 0, 1, 2, []byte{ValString, ValString}, []uint64{0, 0}, []string{"a", "bc"}, 3, nil),
		2, 7, 3, 0, nil, nil, nil, 0, []uint64{9}))
	f.Fuzz(func(t *testing.T, in []byte) {
		var er EventReader
		er.Take(&Response{Clock: &Clock{NsPerTick: 1}, Descs: []Desc{{ID: 0, Kinds: kinds},
			{ID: 1, Kinds: []byte{ValString, ValString}}, {ID: 2, Site: 7}}})
		er.Each(in, func(rec Record, ds *Desc, l *Layout) bool {
			er.Event(rec, ds, l)
			return true
		})
	})
}
