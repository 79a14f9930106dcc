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
		{Op: OpTrace, Spec: "*", Count: 3, DurationMS: 1500},
		{Op: OpStat, Spec: "x", By: "arg0", Hist: "arg1", IntervalMS: 500, DurationMS: 2},
		{Op: OpList}, {Op: OpStop},
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
		{Kind: KindOK, N: 2, Kept: 1, KeptBy: []string{"program", "sdtctl pid 7 trace"}},
		{Kind: KindError, Code: CodeNoMatch, Message: `"x" matches no probe`},
		{Kind: KindList, Probes: []Probe{{Name: "p:m:f:n", Args: []Arg{{Name: "i", Type: "int"}}, Enabled: true, Hits: 9,
			HeldBy: []string{"program"}, Sites: []Site{{Addr: 0x401000, File: "/x/y.go", Line: 12, Kind: "fire",
				State: "sealed-on", Enabled: true, Hits: 9, HeldBy: []string{"program"}}, {Addr: 1, Reason: "why"}}}}},
		{Kind: KindStat, Stat: &Stat{Time: now, By: "arg1", Value: "arg0", Overflow: 2, Drops: 1,
			Rows: []Row{{Key: "a", Count: 4, Sum: -10, Min: -9, Max: 3, Avg: -2.5, Hist: []Bucket{{Low: -8, Count: 1}, {Low: 2, Count: 3}}}}}},
		{Kind: KindEnd, Drops: 77},
	} {
		got, err := DecodeResponse(encode(t, &r))
		if err != nil || !reflect.DeepEqual(*got, r) {
			t.Errorf("%+v:\ndecoded %+v, %v", r, got, err)
		}
	}
}

func TestEvents(t *testing.T) {
	var recs []byte
	t0 := int64(1700000000123456789)
	recs = AppendRecordHead(recs, 1, t0, 5)
	recs = AppendValue(recs, ValInt, false, uint64(math.MaxUint64), nil) // -1
	recs = AppendValue(recs, ValUint, false, math.MaxUint64, nil)
	recs = AppendValue(recs, ValBool, false, 1, nil)
	recs = AppendValue(recs, ValFloat, false, math.Float64bits(-2.5), nil)
	recs = AppendValue(recs, ValString, true, 0, []byte("abc"))
	recs = AppendRecordHead(recs, 2, -5, 0)
	r := &Response{Kind: KindEvents, Records: recs, Descs: []Desc{
		{ID: 1, Probe: "p:m:f:n", Site: 0x1234, Args: []Arg{{Name: "a", Type: "int"}, {Name: "b", Type: "uint64"}}},
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
	if e := evs[0]; e.Probe != "p:m:f:n" || e.Site != 0x1234 || e.Time.UnixNano() != t0 || !reflect.DeepEqual(e.Args, want) {
		t.Errorf("event 0: %+v", e)
	}
	if e := evs[1]; e.Probe != "p:m::other" || e.Time.UnixNano() != t0-5 || len(e.Args) != 0 {
		t.Errorf("event 1: %+v", e)
	}
	// The descriptions stay known to the reader: a later batch need not repeat them.
	evs, err = er.Read(&Response{Kind: KindEvents, Records: AppendRecordHead(nil, 2, 9, 0)})
	if err != nil || len(evs) != 1 || evs[0].Time.UnixNano() != 9 {
		t.Errorf("second batch: %+v %v", evs, err)
	}
	if _, err := new(EventReader).Read(&Response{Records: AppendRecordHead(nil, 3, 0, 0)}); err == nil {
		t.Error("a record of an undescribed probe decodes")
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
	} {
		b, err := ReadFrame(bytes.NewReader(in))
		if err == nil {
			_, err = DecodeRequest(b)
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeBadRequest {
			t.Errorf("%s: %v, want a badrequest error", name, err)
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
	f.Add(encode(f, &Response{Kind: KindEvents, Descs: []Desc{{ID: 1, Probe: "p", Args: []Arg{{Name: "s"}}}},
		Records: AppendValue(AppendRecordHead(nil, 1, 5, 1), ValString, false, 0, []byte(strings.Repeat("x", 9)))}))
	f.Fuzz(func(t *testing.T, in []byte) {
		r, err := DecodeResponse(in)
		if err != nil {
			return
		}
		var er EventReader
		er.Read(r)
	})
}
