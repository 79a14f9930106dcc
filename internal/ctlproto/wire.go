package ctlproto

import (
	"encoding/binary"
	"math"
)

// A message's payload is a sequence of fields, each a key and a value. The key is a
// uvarint, tag<<1 | type: type 0 is a uvarint value, type 1 a uvarint length and that
// many bytes (strings, nested messages, packed data). Signed integers are zigzag
// encoded. A field that is zero or empty is left out; a repeated field is repeated.

const (
	wireVarint = 0
	wireBytes  = 1
)

// enc appends fields to b.
type enc struct{ b []byte }

// key is not inlined: inlined with its varint loop into every field of every message,
// it made each program that imports sdt tens of kilobytes larger (code and debug
// information), for a call per field of a reply; a trace's records travel as one field.
//
//go:noinline
func (e *enc) key(tag, typ int) { e.b = binary.AppendUvarint(e.b, uint64(tag)<<1|uint64(typ)) }

func (e *enc) uint(tag int, v uint64) {
	if v != 0 {
		e.key(tag, wireVarint)
		e.b = binary.AppendUvarint(e.b, v)
	}
}

func (e *enc) int(tag int, v int64) { e.uint(tag, zigzag(v)) }

func (e *enc) bool(tag int, v bool) {
	if v {
		e.uint(tag, 1)
	}
}

func (e *enc) str(tag int, s string) {
	if s != "" {
		e.bytesAlways(tag, s)
	}
}

// bytesAlways writes s even when empty: an element of a repeated string field.
func (e *enc) bytesAlways(tag int, s string) {
	e.key(tag, wireBytes)
	e.b = binary.AppendUvarint(e.b, uint64(len(s)))
	e.b = append(e.b, s...)
}

func (e *enc) strs(tag int, ss []string) {
	for _, s := range ss {
		e.bytesAlways(tag, s)
	}
}

// bytes writes b unless it is empty, without copying it to a string first (records
// are most of a trace's bytes).
func (e *enc) bytes(tag int, b []byte) {
	if len(b) > 0 {
		e.key(tag, wireBytes)
		e.b = binary.AppendUvarint(e.b, uint64(len(b)))
		e.b = append(e.b, b...)
	}
}

// msg writes a nested message, whatever fill appends.
func (e *enc) msg(tag int, fill func(*enc)) {
	var sub enc
	fill(&sub)
	e.key(tag, wireBytes)
	e.b = binary.AppendUvarint(e.b, uint64(len(sub.b)))
	e.b = append(e.b, sub.b...)
}

func zigzag(v int64) uint64   { return uint64(v<<1) ^ uint64(v>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }

// dec reads fields. The first malformed byte sets err, after which every read
// returns zero: callers check err once, at the end.
type dec struct {
	b   []byte
	err error
	typ int // of the field just read by next
}

// fail records the first error of a decode. Not inlined: it runs only on a bad
// message, and each of the decoder's calls carried a copy of it.
//
//go:noinline
func (d *dec) fail(what string) {
	if d.err == nil {
		d.err = Errorf(CodeBadRequest, "bad message: %s", what)
	}
	d.b = nil
}

// next reads a field's key; ok is false at the end of the payload or on an error.
func (d *dec) next() (tag int, ok bool) {
	if len(d.b) == 0 || d.err != nil {
		return 0, false
	}
	k := d.uvarint()
	if d.err != nil {
		return 0, false
	}
	if k>>1 == 0 || k>>1 > math.MaxInt32 || k&1 > wireBytes {
		d.fail("bad field key")
		return 0, false
	}
	d.typ = int(k & 1)
	return int(k >> 1), true
}

func (d *dec) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[n:]
	return v
}

// want checks the type of the field just read.
func (d *dec) want(typ int) bool {
	if d.typ != typ {
		d.fail("field of the wrong type")
		return false
	}
	return true
}

func (d *dec) uint() uint64 {
	if !d.want(wireVarint) {
		return 0
	}
	return d.uvarint()
}

func (d *dec) int() int64 { return unzigzag(d.uint()) }

// small reads a non-negative integer that must fit an int32 (lengths, counts, lines).
func (d *dec) small() int {
	v := d.uint()
	if v > math.MaxInt32 {
		d.fail("value out of range")
		return 0
	}
	return int(v)
}

func (d *dec) bool() bool { return d.uint() != 0 }

func (d *dec) bytes() []byte {
	if !d.want(wireBytes) {
		return nil
	}
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail("field runs past the end")
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) str() string { return string(d.bytes()) }

// fields calls f with the tag of each field, for f to read its value; a field f does
// not know (it returns false) is skipped.
func (d *dec) fields(f func(tag int) bool) {
	for {
		tag, ok := d.next()
		if !ok {
			return
		}
		if !f(tag) {
			d.skip()
		}
	}
}

// msg reads a nested message with decode.
func (d *dec) msg(decode func(*dec)) {
	s := &dec{b: d.bytes()}
	decode(s)
	if s.err != nil && d.err == nil {
		d.err = s.err
		d.b = nil
	}
}

// skip passes over the value of a field this side does not know.
func (d *dec) skip() {
	if d.typ == wireVarint {
		d.uvarint()
	} else {
		d.bytes()
	}
}
