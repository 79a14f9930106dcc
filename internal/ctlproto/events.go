package ctlproto

import (
	"encoding/binary"
	"math"
	"strconv"
	"time"
)

// A trace streams its events in batches: a Response of kind "events" carries the
// descriptions (Desc) of the probe sites first met in it, then the records, packed
// one after another:
//
//	uvarint  desc     the Desc's ID: which probe, which site, the arguments' names and types
//	varint   time     Unix nanoseconds, as the difference from the previous record of
//	                  the batch (from 0 for the first)
//	byte     n        arguments that follow
//	n times:
//	  byte   kind     ValInt .. ValString; bit 7 set: a string cut to its bound
//	  value           ValInt: varint; ValUint, ValBool: uvarint; ValFloat: 8 bytes,
//	                  little-endian IEEE 754; ValString: uvarint length, bytes
//
// A record whose Desc has not been sent is an error.

// Value kinds of an event argument.
const (
	ValInt    = iota // signed integers
	ValUint          // unsigned integers
	ValBool          // 0 or 1
	ValFloat         // float64 bits
	ValString        // bytes
)

// valCut marks a string value cut to the process's bound.
const valCut = 0x80

// maxRecordArgs bounds the arguments a record may announce.
const maxRecordArgs = 16

// Desc describes the events of one probe at one site, once per trace stream.
type Desc struct {
	ID    uint64
	Probe string // provider:module:function:name
	Site  uint64 // 0: fires not attributed to a site
	Args  []Arg  // names and types
}

func (ds *Desc) append(e *enc) {
	e.uint(1, ds.ID)
	e.str(2, ds.Probe)
	e.uint(3, ds.Site)
	for i := range ds.Args {
		e.msg(4, ds.Args[i].append)
	}
}

func (ds *Desc) decode(d *dec) {
	d.fields(func(tag int) bool {
		switch tag {
		case 1:
			ds.ID = d.uint()
		case 2:
			ds.Probe = d.str()
		case 3:
			ds.Site = d.uint()
		case 4:
			ds.Args = append(ds.Args, Arg{})
			d.msg(ds.Args[len(ds.Args)-1].decode)
		default:
			return false
		}
		return true
	})
}

// AppendRecordHead appends the head of a record to a batch: its Desc, its time as
// the difference from the previous record's (dt), and how many values follow.
func AppendRecordHead(b []byte, desc uint64, dt int64, n int) []byte {
	b = binary.AppendUvarint(b, desc)
	b = binary.AppendUvarint(b, zigzag(dt))
	return append(b, byte(n))
}

// AppendValue appends one argument value: bits for the number kinds (an int64, a
// uint64, 0 or 1, float64 bits), str for ValString.
func AppendValue(b []byte, kind int, cut bool, bits uint64, str []byte) []byte {
	k := byte(kind)
	if cut {
		k |= valCut
	}
	b = append(b, k)
	switch kind {
	case ValInt:
		return binary.AppendUvarint(b, zigzag(int64(bits)))
	case ValFloat:
		return binary.LittleEndian.AppendUint64(b, bits)
	case ValString:
		b = binary.AppendUvarint(b, uint64(len(str)))
		return append(b, str...)
	}
	return binary.AppendUvarint(b, bits)
}

// EventReader decodes the event batches of one trace stream. It keeps the
// descriptions the stream has sent.
type EventReader struct {
	descs map[uint64]*Desc
}

// Read decodes the events of one batch.
func (er *EventReader) Read(r *Response) ([]Event, error) {
	if er.descs == nil {
		er.descs = map[uint64]*Desc{}
	}
	for i := range r.Descs {
		ds := r.Descs[i]
		er.descs[ds.ID] = &ds
	}
	d := &dec{b: r.Records}
	var out []Event
	var t int64
	for len(d.b) > 0 && d.err == nil {
		ds := er.descs[d.uvarint()]
		t += unzigzag(d.uvarint())
		if d.err != nil {
			break
		}
		if ds == nil {
			d.fail("record of an undescribed probe")
			break
		}
		n := int(d.byte())
		if n > maxRecordArgs {
			d.fail("record with too many arguments")
			break
		}
		ev := Event{Time: time.Unix(0, t), Probe: ds.Probe, Site: ds.Site, Args: make([]Arg, n)}
		for i := range n {
			a := &ev.Args[i]
			if i < len(ds.Args) {
				a.Name, a.Type = ds.Args[i].Name, ds.Args[i].Type
			} else {
				a.Name = "arg" + strconv.Itoa(i)
			}
			a.Value, a.Cut = d.value()
		}
		out = append(out, ev)
	}
	if d.err != nil {
		return nil, d.err
	}
	return out, nil
}

func (d *dec) byte() byte {
	if len(d.b) == 0 {
		d.fail("record cut short")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// value reads one argument value as text.
func (d *dec) value() (string, bool) {
	k := d.byte()
	cut := k&valCut != 0
	switch k &^ valCut {
	case ValInt:
		return strconv.FormatInt(unzigzag(d.uvarint()), 10), cut
	case ValUint:
		return strconv.FormatUint(d.uvarint(), 10), cut
	case ValBool:
		return strconv.FormatBool(d.uvarint() != 0), cut
	case ValFloat:
		if len(d.b) < 8 {
			d.fail("record cut short")
			return "", false
		}
		f := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
		d.b = d.b[8:]
		return strconv.FormatFloat(f, 'g', -1, 64), cut
	case ValString:
		d.typ = wireBytes
		return d.str(), cut
	}
	d.fail("unknown value kind")
	return "", false
}
