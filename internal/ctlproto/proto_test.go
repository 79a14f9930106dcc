package ctlproto

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
)

func frame(b []byte) []byte {
	out := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	return append(out, b...)
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	q := Request{Op: OpEnable, Specs: []string{"proc:::exit"}, Persist: true}
	if err := WriteFrame(&buf, q); err != nil {
		t.Fatal(err)
	}
	b, err := ReadFrame(&buf)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRequest(b)
	if err != nil || got.Op != OpEnable || got.Specs[0] != "proc:::exit" || !got.Persist {
		t.Fatalf("%+v %v", got, err)
	}
	if _, err := ReadFrame(&buf); err != io.EOF {
		t.Fatalf("after the last frame: %v", err)
	}
}

func TestBadInput(t *testing.T) {
	for name, in := range map[string][]byte{
		"truncated header": {0, 0},
		"zero length":      {0, 0, 0, 0},
		"oversized":        {0x7f, 0, 0, 0},
		"truncated body":   append([]byte{0, 0, 0, 10}, "{}"...),
		"not json":         frame([]byte("garbage!")),
		"array":            frame([]byte(`[1,2]`)),
		"unknown field":    frame([]byte(`{"op":"list","x":1}`)),
		"unknown op":       frame([]byte(`{"op":"format-disk"}`)),
		"no op":            frame([]byte(`{}`)),
		"trailing":         frame([]byte(`{"op":"list"}{}`)),
		"enable no specs":  frame([]byte(`{"op":"enable"}`)),
		"negative count":   frame([]byte(`{"op":"trace","spec":"x","count":-1}`)),
		"wrong type":       frame([]byte(`{"op":"trace","spec":7}`)),
		"too many specs":   frame([]byte(`{"op":"enable","specs":[` + strings.Repeat(`"a",`, MaxSpecs) + `"a"]}`)),
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

func FuzzReadFrame(f *testing.F) {
	f.Add(frame([]byte(`{"op":"hello","version":1}`)))
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
	for _, s := range []string{`{"op":"hello","version":1}`, `{"op":"enable","specs":["a:b:c:d"],"persist":true}`,
		`{"op":"stat","spec":"x","by":"arg0","hist":"arg1","interval_ms":500}`, `{"op":"trace","spec":"*","count":3}`, `nul`, `{"op":`} {
		f.Add([]byte(s))
	}
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
	})
}
