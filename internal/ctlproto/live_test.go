package ctlproto

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"
)

// TestRingWalk: a live reader walks a ring from its head to its tail: records in
// order across the wrap, fillers skipped, drop counts summed, a stop where f says,
// at most max bytes; Bytes gives the same span as the ring holds it, in two parts
// where it wraps, and a raw chunk of them reads back the same records.
func TestRingWalk(t *testing.T) {
	const size = MinRing
	m, start, tail := wrappedRing()
	r, err := OpenRing(m)
	if err != nil {
		t.Fatal(err)
	}
	var got []uint64
	next, marked, err := r.Walk(start, r.Tail(), ^uint64(0), func(rec Record) bool {
		got = append(got, rec.Slot(0))
		return true
	})
	if err != nil || next != tail || marked != 3 || len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Fatalf("walk: %v, next %d (want %d), %d marked, %v", got, next, tail, marked, err)
	}
	// f refuses the second: the walk stops before it, past the filler and the count
	next, _, _ = r.Walk(start, tail, ^uint64(0), func(rec Record) bool { return rec.Slot(0) != 2 })
	if next != start+96 {
		t.Fatalf("stopped at %d, want %d", next, start+96)
	}
	// max: one record's bytes
	if next, _, _ = r.Walk(start, tail, 40, func(Record) bool { return true }); next != start+40 {
		t.Fatalf("max 40: at %d", next)
	}
	a, b := r.Bytes(start, tail)
	if len(a)+len(b) != 136 || len(b) != 56 {
		t.Fatalf("bytes %d + %d, want 80 + 56", len(a), len(b))
	}
	var raw []byte
	for _, p := range [][]byte{a, b} {
		raw = append(AppendRawHead(raw, RawRecords, 7, len(p)), p...)
	}
	rd := bytes.NewReader(raw)
	got = got[:0]
	var all uint64
	for {
		kind, pid, p, err := ReadRawChunk(rd, nil)
		if err == io.EOF {
			break
		}
		if err != nil || kind != RawRecords || pid != 7 {
			t.Fatal(kind, pid, err)
		}
		n, err := RawRecordsEach(p, func(rec Record) bool { got = append(got, rec.Slot(0)); return true })
		if err != nil {
			t.Fatal(err)
		}
		all += n
	}
	if len(got) != 2 || got[1] != 2 || all != 3 {
		t.Fatalf("raw: %v, %d marked", got, all)
	}
	// a tail behind the head, or past a ring's worth: an error, nothing read
	if _, _, err := r.Walk(tail, start, ^uint64(0), func(Record) bool { t.Fatal("read"); return true }); err == nil {
		t.Fatal("tail behind head: no error")
	}
	if _, _, err := r.Walk(start, start+2*size, ^uint64(0), func(Record) bool { return true }); err == nil {
		t.Fatal("two rings' worth: no error")
	}
}

// TestRingWalkGarbage: a ring as a process that lies leaves it, and a raw chunk of
// garbage, are read without a panic.
func TestRingWalkGarbage(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	const size = MinRing
	for range 2000 {
		m := ring(size)
		for i := RingHeader; i < len(m); i += 8 {
			switch rnd.IntN(4) {
			case 0:
				setWord(m, i, uint64(8*rnd.IntN(20))|uint64(rnd.IntN(256))<<16|uint64(rnd.IntN(7))<<16)
			case 1:
				setWord(m, i, rnd.Uint64())
			}
		}
		r, err := OpenRing(m)
		if err != nil {
			t.Fatal(err)
		}
		from := uint64(rnd.IntN(4*size)) &^ 7
		r.Walk(from, from+uint64(rnd.IntN(size+1))&^7, ^uint64(0), func(rec Record) bool {
			rec.Layout(make([]byte, rec.N()))
			return true
		})
		to := from + uint64(rnd.IntN(size+1))&^7
		r.Scan(from, to, uint64(rnd.IntN(size)), uint64(rnd.IntN(100)), func(rec Record) int {
			rec.Layout(make([]byte, rec.N()))
			return rnd.IntN(3)
		})
		RawRecordsEach(m[RingHeader:RingHeader+rnd.IntN(size)], func(Record) bool { return true })
	}
}

// TestRingScan: a raw reader's walk counts what Walk passes, across the wrap and
// past fillers and drop counts, asks f only where the probe or site changes, stops
// at limit records, at f's stop, and where max bytes end; f's skip is not counted.
func TestRingScan(t *testing.T) {
	m, start, tail := wrappedRing()
	r, err := OpenRing(m)
	if err != nil {
		t.Fatal(err)
	}
	asked := 0
	take := func(Record) int { asked++; return ScanTake }
	next, n, marked, err := r.Scan(start, tail, ^uint64(0), ^uint64(0), take)
	if err != nil || next != tail || n != 2 || marked != 3 || asked != 1 {
		t.Fatalf("scan: next %d (want %d), %d records, %d marked, f asked %d times: %v", next, tail, n, marked, asked, err)
	}
	// limit 1: stops before the second, past the filler and the count
	if next, n, marked, _ = r.Scan(start, tail, ^uint64(0), 1, take); next != start+96 || n != 1 || marked != 3 {
		t.Fatalf("limit 1: next %d, %d records, %d marked", next, n, marked)
	}
	if next, n, _, _ = r.Scan(start, tail, 40, ^uint64(0), take); next != start+40 || n != 1 {
		t.Fatalf("max 40: next %d, %d records", next, n)
	}
	// the second record at another site: f is asked again, and may stop or skip it
	put(m, start+96+8, 0x2000)
	verdict := ScanStop
	f := func(rec Record) int {
		if rec.Site() == 0x2000 {
			return verdict
		}
		return ScanTake
	}
	if next, n, _, _ = r.Scan(start, tail, ^uint64(0), ^uint64(0), f); next != start+96 || n != 1 {
		t.Fatalf("stop: next %d, %d records", next, n)
	}
	verdict = ScanSkip
	if next, n, _, _ = r.Scan(start, tail, ^uint64(0), ^uint64(0), f); next != tail || n != 1 {
		t.Fatalf("skip: next %d, %d records", next, n)
	}
	// a run of one site's records: f asked once for a thousand
	const size = 1 << 16
	m = ring(size)
	for i := range uint64(1000) {
		put(m, 40*i, rec(i)...)
	}
	r, _ = OpenRing(m)
	asked = 0
	if next, n, _, err = r.Scan(0, 40000, ^uint64(0), ^uint64(0), take); next != 40000 || n != 1000 || asked != 1 || err != nil {
		t.Fatalf("run: next %d, %d records, asked %d: %v", next, n, asked, err)
	}
	// a tail behind the head, past a ring's worth, a misaligned start: errors
	for _, c := range [][2]uint64{{40, 0}, {0, 2 * size}, {4, 44}} {
		if _, _, _, err := r.Scan(c[0], c[1], ^uint64(0), ^uint64(0), take); err == nil {
			t.Errorf("scan %d to %d: no error", c[0], c[1])
		}
	}
}
