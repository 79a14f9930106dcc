package main

import (
	"bytes"
	"encoding/binary"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// rings are a traced process's buffers, mapped read-only (linux: the process passes
// them with its stream's start, ctlproto.Response.Shared): once the process has
// ended, what it wrote and did not send is read from them.
type rings struct {
	started bool
	log     []byte   // the description log; nil: nothing shared
	bufs    [][]byte // by buffer; nil where one was not passed
	heads   []uint64 // by buffer: where what the frames carried ends; live: where sdtctl has read to

	// live (ctlproto's live.go): sdtctl reads the rings as they are written
	live    bool
	headMem []byte           // the heads the process reads, sdtctl's to write
	views   []*ctlproto.Ring // by buffer; nil where one cannot be read
	met     []uint64         // by buffer: drops its records counted (LostRecord) so far
	logRead int              // bytes of the description log read
	probes  map[uint32]ctlproto.Desc
	onDescs func([]ctlproto.Desc) // where set, told the descriptions describeMore takes
	// where set, told each ring's bytes readLive read (a raw trace's output)
	onBytes func(i int, a, b []byte)
}

// take maps the descriptors r (the start, then each events frame) passed, and
// learns how far its records go.
func (rs *rings) take(cl *client, r *ctlproto.Response) {
	fds := cl.takeFds(r.Shared)
	for i, fd := range fds {
		if !rs.started && i == 0 {
			rs.log = mapShared(fd)
			closeFd(fd)
			continue
		}
		if !rs.started && i == 1 && r.Live {
			rs.headMem, rs.live = mapHeads(fd), true
			closeFd(fd)
			continue
		}
		m := mapShared(fd)
		closeFd(fd)
		rs.bufs = append(rs.bufs, m)
		if rs.live {
			n := len(rs.bufs) - 1
			v, err := ctlproto.OpenRing(m)
			if err != nil {
				v = nil
			}
			rs.views = append(rs.views, v)
			rs.met = append(rs.met, 0)
			rs.heads = append(rs.heads, 0)
			if ctlproto.HeadsStart+8*n+8 <= len(rs.headMem) {
				rs.heads[n] = ctlproto.Word(rs.headMem, ctlproto.HeadsStart+8*n)
			}
		}
	}
	rs.started = true
	for i, h := range r.Heads {
		for len(rs.heads) <= i {
			rs.heads = append(rs.heads, 0)
		}
		rs.heads[i] = max(rs.heads[i], h)
	}
}

// shared reports whether the process shared its buffers.
func (rs *rings) shared() bool { return rs.log != nil }

// describe teaches er every description the process logged, and says each probe's
// own (site 0) in probes.
func (rs *rings) describe(er *ctlproto.EventReader, probes map[uint32]ctlproto.Desc) (full bool) {
	le := binary.LittleEndian
	m := rs.log
	if len(m) < ctlproto.DescLogStart || le.Uint64(m) != ctlproto.DescLogMagic {
		return false
	}
	n := le.Uint64(m[ctlproto.DescLogLen:])
	if n > uint64(len(m)-ctlproto.DescLogStart) {
		return true
	}
	b := bytes.NewReader(m[ctlproto.DescLogStart : ctlproto.DescLogStart+int(n)])
	for b.Len() > 0 {
		f, err := ctlproto.ReadFrame(b)
		if err != nil {
			return true
		}
		r, err := ctlproto.DecodeResponse(f)
		if err != nil {
			return true
		}
		// only descriptions this stream has not told: it told them with the kinds
		// its fires taught
		for _, ds := range r.Descs {
			if ds.Site == 0 {
				probes[ds.ID] = ds
			}
			if !er.Described(ctlproto.Record(descProbe(ds))) {
				er.Take(&ctlproto.Response{Descs: []ctlproto.Desc{ds}})
			}
		}
	}
	return le.Uint64(m[ctlproto.DescLogFull:]) != 0
}

// describeMore teaches er what the description log says since it last looked (a
// live trace's: the process sends no descriptions); later entries replace earlier
// ones (kinds a first fire told).
func (rs *rings) describeMore(er *ctlproto.EventReader) {
	le := binary.LittleEndian
	m := rs.log
	if len(m) < ctlproto.DescLogStart || le.Uint64(m) != ctlproto.DescLogMagic {
		return
	}
	n := ctlproto.Word(m, ctlproto.DescLogLen)
	if n > uint64(len(m)-ctlproto.DescLogStart) || int(n) <= rs.logRead {
		return
	}
	if rs.probes == nil {
		rs.probes = map[uint32]ctlproto.Desc{}
	}
	b := bytes.NewReader(m[ctlproto.DescLogStart+rs.logRead : ctlproto.DescLogStart+int(n)])
	for b.Len() > 0 {
		f, err := ctlproto.ReadFrame(b)
		if err != nil {
			break
		}
		r, err := ctlproto.DecodeResponse(f)
		if err != nil {
			break
		}
		for _, ds := range r.Descs {
			if ds.Site == 0 {
				rs.probes[ds.ID] = ds
			}
		}
		er.Take(&ctlproto.Response{Descs: r.Descs})
		if rs.onDescs != nil && len(r.Descs) > 0 {
			rs.onDescs(r.Descs)
		}
	}
	rs.logRead = int(n) - b.Len()
}

// lostWord is the fires the process counted on Ps without a buffer
// (ctlproto.DescLogLost).
func (rs *rings) lostWord() uint64 {
	if len(rs.log) < ctlproto.DescLogStart || binary.LittleEndian.Uint64(rs.log) != ctlproto.DescLogMagic {
		return 0
	}
	return ctlproto.Word(rs.log, ctlproto.DescLogLost)
}

// readLive calls f with the records written since the last read, ring by ring, at
// most max bytes of each, until f returns false (that record stays unread: it
// waits for its kinds, or the count is reached); then gives the room read back to
// the process (the heads). It returns how many records f took and whether f
// refused one; a ring that cannot be read is counted in bad and read no more.
func (rs *rings) readLive(max uint64, f func(i int, rec ctlproto.Record) bool) (n int, refused bool, bad uint64) {
	for i, v := range rs.views {
		if v == nil {
			continue
		}
		next, marked, err := v.Walk(rs.heads[i], v.Tail(), max, func(rec ctlproto.Record) bool {
			if !f(i, rec) {
				refused = true
				return false
			}
			n++
			return true
		})
		if !rs.advance(i, next, marked, err) {
			bad++
		}
		if refused {
			break
		}
	}
	return n, refused, bad
}

// advance moves ring i's head to next after a walk that met marked records and ended
// with err: its bytes up to next go to onBytes first (the process may overwrite what
// the head frees), then the head sdtctl shares with the process moves. False when
// the ring lied (err): it is read no more.
func (rs *rings) advance(i int, next, marked uint64, err error) bool {
	rs.met[i] += marked
	if rs.onBytes != nil && next > rs.heads[i] {
		a, b := rs.views[i].Bytes(rs.heads[i], next)
		rs.onBytes(i, a, b)
	}
	if err != nil {
		rs.views[i] = nil // a ring that lies is read no more
	}
	rs.heads[i] = next
	if ctlproto.HeadsStart+8*i+8 <= len(rs.headMem) {
		ctlproto.SetWord(rs.headMem, ctlproto.HeadsStart+8*i, next)
	}
	return err == nil
}

// readSpans is readLive for a raw trace: each ring's new bytes go to onBytes whole,
// and f is asked only where a record's probe or site changes (Ring.Scan), at most
// limit records in all. It returns the records counted; a ring that cannot be read
// is counted in bad and read no more.
func (rs *rings) readSpans(max, limit uint64, f func(rec ctlproto.Record) int) (n, bad uint64) {
	for i, v := range rs.views {
		if v == nil {
			continue
		}
		next, k, marked, err := v.Scan(rs.heads[i], v.Tail(), max, limit-n, f)
		n += k
		if !rs.advance(i, next, marked, err) {
			bad++
		}
		if n >= limit {
			break
		}
	}
	return n, bad
}

// fill is the largest share of a ring, 0 to 1, written and not yet read.
func (rs *rings) fill() float64 {
	most := 0.0
	for i, v := range rs.views {
		if v == nil {
			continue
		}
		if t := v.Tail(); t > rs.heads[i] {
			most = max(most, float64(t-rs.heads[i])/float64(v.Size()))
		}
	}
	return most
}

// drops is what the rings dropped (full), all told.
func (rs *rings) drops() (per []uint64, all uint64) {
	for _, v := range rs.views {
		d := uint64(0)
		if v != nil {
			d = v.Drops()
		}
		per = append(per, d)
		all += d
	}
	return per, all
}

// cut is the records the process's end cut short (1 per ring that was writing one).
func (rs *rings) cut() (n uint64) {
	for _, v := range rs.views {
		if v != nil && v.Writing() > v.Tail() {
			n++
		}
	}
	return n
}

// descProbe is the head of a record of ds's probe and site, for a lookup.
func descProbe(ds ctlproto.Desc) []byte {
	b := make([]byte, ctlproto.RecordHead)
	binary.LittleEndian.PutUint64(b, uint64(ctlproto.RecordHead)|uint64(ds.ID)<<32)
	binary.LittleEndian.PutUint64(b[8:], ds.Site)
	return b
}

// leftover calls f with each record the process wrote and did not send, buffer by
// buffer, until f returns false; lost is what the rings say was dropped in all (full
// rings, records cut short by the end) and the records that could not be decoded.
func (rs *rings) leftover(er *ctlproto.EventReader, f func(rec ctlproto.Record, ds *ctlproto.Desc, l *ctlproto.Layout) bool) (lost uint64) {
	probes := map[uint32]ctlproto.Desc{}
	rs.describe(er, probes)
	more := true
	for i, m := range rs.bufs {
		if m == nil {
			continue
		}
		lost += binary.LittleEndian.Uint64(m[ctlproto.RingDrops:])
		from := uint64(0)
		if i < len(rs.heads) {
			from = rs.heads[i]
		}
		recs, _, cut, err := ctlproto.Leftover(m, from)
		lost += cut
		if err != nil {
			lost++ // what follows a record that cannot be read cannot be either
		}
		for b := recs; len(b) > 0 && more; {
			rec, rest, err := ctlproto.Split(b)
			if err != nil {
				break
			}
			b = rest
			if !er.Described(rec) {
				// a site bound after its probe was logged: named as the probe
				// (as the stream names a site it does not know)
				ds, ok := probes[rec.Probe()]
				if !ok {
					lost++
					continue
				}
				ds.Site = rec.Site()
				er.Take(&ctlproto.Response{Descs: []ctlproto.Desc{ds}})
			}
			err = er.Each(rec, func(rec ctlproto.Record, ds *ctlproto.Desc, l *ctlproto.Layout) bool {
				more = f(rec, ds, l)
				return more
			})
			if err != nil {
				lost++
				continue
			}
			if !more {
				break
			}
		}
	}
	return lost
}
