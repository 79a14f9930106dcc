package ctlproto

import (
	"encoding/binary"
	"testing"
)

// ring makes a ring of size bytes as a process leaves it.
func ring(size int) []byte {
	m := make([]byte, RingHeader+size)
	binary.LittleEndian.PutUint64(m, RingMagic)
	binary.LittleEndian.PutUint64(m[RingSize:], uint64(size))
	return m
}

func put(m []byte, pos uint64, words ...uint64) {
	size := binary.LittleEndian.Uint64(m[RingSize:])
	for i, w := range words {
		binary.LittleEndian.PutUint64(m[RingHeader+int((pos+8*uint64(i))&(size-1)):], w)
	}
}

func setWord(m []byte, off int, v uint64) { binary.LittleEndian.PutUint64(m[off:], v) }

// rec is a record of one argument v of probe 7.
func rec(v uint64) []uint64 { return []uint64{40 | 1<<16 | 7<<32, 0x1000, 5, 1, v} }

// TestLeftover: what lies between the larger of from and head and tail is read, the
// fillers skipped, the drop counts summed; a record being written is cut.
func TestLeftover(t *testing.T) {
	m, start, tail := wrappedRing()
	setWord(m, RingWriting, tail+40) // a third, cut short
	setWord(m, RingHead, start-40)
	recs, marked, cut, err := Leftover(m, start)
	if err != nil || marked != 3 || cut != 1 || len(recs) != 80 {
		t.Fatalf("%d bytes, %d marked, %d cut, %v: want 80, 3, 1, nil", len(recs), marked, cut, err)
	}
	r, rest, _ := Split(recs)
	r2, _, _ := Split(rest)
	if r.Slot(0) != 1 || r2.Slot(0) != 2 {
		t.Fatalf("slots %d, %d: want 1, 2", r.Slot(0), r2.Slot(0))
	}
	// what the frames carried is not read again: from is past the first record
	if recs, _, _, _ := Leftover(m, start+40); len(recs) != 40 {
		t.Fatalf("from past the first: %d bytes, want 40", len(recs))
	}
	// nor what the process said it sent (head)
	setWord(m, RingHead, start+40)
	if recs, _, _, _ := Leftover(m, start); len(recs) != 40 {
		t.Fatalf("head past the first: %d bytes, want 40", len(recs))
	}
	setWord(m, RingWriting, tail)
	if _, _, cut, _ := Leftover(m, start); cut != 0 {
		t.Fatalf("cut %d with nothing being written", cut)
	}
}

// TestLeftoverUntrusted: a ring that lies is an error, never a read out of bounds.
func TestLeftoverUntrusted(t *testing.T) {
	const size = MinRing
	for _, tc := range []struct {
		name string
		set  func(m []byte)
	}{
		{"magic", func(m []byte) { setWord(m, 0, 1) }},
		{"size", func(m []byte) { setWord(m, RingSize, 3*size) }},
		{"span", func(m []byte) { setWord(m, RingTail, 2*size) }},
		{"record size", func(m []byte) { put(m, 0, 0); setWord(m, RingTail, 40) }},
		{"past tail", func(m []byte) { put(m, 0, rec(1)...); setWord(m, RingTail, 32) }},
		{"past end", func(m []byte) { put(m, size-8, 40|1<<16); setWord(m, RingHead, size-8); setWord(m, RingTail, size+32) }},
		{"short lost", func(m []byte) { put(m, 0, 24|LostRecord<<16, 1, 0); setWord(m, RingTail, 24) }},
		{"short record", func(m []byte) { put(m, 0, 16|1<<16, 0); setWord(m, RingTail, 16) }},
	} {
		m := ring(size)
		tc.set(m)
		if _, _, _, err := Leftover(m, 0); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, _, _, err := Leftover(make([]byte, 100), 0); err == nil {
		t.Error("a short mapping: no error")
	}
}

// wrappedRing is a ring of MinRing bytes holding, from start to tail, a record at
// the ring's end, a filler, a drop count of 3 and a record wrapped to 0 (slot 0 of
// the records: 1 and 2).
func wrappedRing() (m []byte, start, tail uint64) {
	m = ring(MinRing)
	start = uint64(10*MinRing - 80)
	put(m, start, rec(1)...)
	put(m, start+40, 40|PadRecord<<16)
	put(m, start+80, 16|LostRecord<<16, 3)
	put(m, start+96, rec(2)...)
	tail = start + 136
	setWord(m, RingTail, tail)
	return m, start, tail
}
