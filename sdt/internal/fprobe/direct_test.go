package fprobe

import (
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/fprobe/internal/target"
)

// testBufs is a trace's buffers as package consume lays them out, in Go memory: a
// ring of size bytes and the header's words, per P.
type testBufs struct {
	d     *DirectBufs
	lost  uint64
	rings [][]uint64
	words []struct{ tail, writing, hdrDrops, head, seen, drops, marked, filtered uint64 }
}

func newTestBufs(procs, size int) *testBufs {
	b := &testBufs{rings: make([][]uint64, procs)}
	b.words = make([]struct{ tail, writing, hdrDrops, head, seen, drops, marked, filtered uint64 }, procs)
	b.d = NewDirectBufs(&b.lost, false)
	bufs := make([]DirectBuf, procs)
	for i := range bufs {
		b.rings[i] = make([]uint64, size/8)
		w := &b.words[i]
		bufs[i] = DirectBuf{Ring: unsafe.Pointer(&b.rings[i][0]), Mask: uint64(size - 1),
			Tail: &w.tail, Writing: &w.writing, HdrDrops: &w.hdrDrops, Head: &w.head,
			Seen: &w.seen, Drops: &w.drops, Marked: &w.marked, Filtered: &w.filtered}
	}
	b.d.SetBufs(bufs)
	return b
}

// records walks every buffer's records (none wraps: the rings are read from 0),
// and the drops its words and lost records count.
func (b *testBufs) records(t *testing.T) (recs []ctlproto.Record, drops uint64) {
	t.Helper()
	for i, ring := range b.rings {
		mem := unsafe.Slice((*byte)(unsafe.Pointer(&ring[0])), 8*len(ring))
		w := &b.words[i]
		if w.writing != w.tail {
			t.Fatalf("P %d: writing %d, tail %d: a record left half written", i, w.writing, w.tail)
		}
		for at := uint64(0); at < w.tail; {
			r := ctlproto.Record(mem[at:])
			n := uint64(r.Size())
			switch uint64(r[2]) {
			case ctlproto.PadRecord:
				t.Fatalf("P %d: a filler record in a ring read from 0", i)
			case ctlproto.LostRecord:
				at += n
				continue
			}
			if n < ctlproto.RecordHead || at+n > w.tail {
				t.Fatalf("P %d: a record of %d bytes at %d (tail %d)", i, n, at, w.tail)
			}
			recs = append(recs, r[:n])
			at += n
		}
		if w.hdrDrops != w.drops {
			t.Fatalf("P %d: %d drops in the header, %d counted", i, w.hdrDrops, w.drops)
		}
		drops += w.drops
	}
	return recs, drops
}

// TestDirectRecords: with a direct set, every return of Check becomes one record in
// its P's buffer, written by the return path (none into the ring when nothing else
// consumes them): the latency, the result pointer as a word and its error as nil or
// not; a ring with no room counts what it drops, a P with no buffer is counted lost,
// and a probe the trace has not described writes nothing.
func TestDirectRecords(t *testing.T) {
	f := lookup(t, "Check")
	const id = 3
	set := func(b *testBufs, ringless bool) *DirectSet {
		return &DirectSet{Ringless: ringless, Probe: id, Site: uint64(f.Entry), Bufs: []*DirectBufs{b.d},
			Results: []DirectArg{{Word: 0, Kind: DirectUint, Size: 8}, {Word: 1, Kind: DirectString, Iface: true}}}
	}
	on := func(s *DirectSet) {
		f.SetDirect(s)
		if err := f.SetReturn(true); err != nil {
			t.Fatal(err)
		}
	}
	off := func() {
		if err := f.SetReturn(false); err != nil {
			t.Fatal(err)
		}
		f.SetDirect(nil)
		for n := 1; n > 0; n = f.ReadReturns(make([]Return, ringSize)) {
		}
	}
	calls := func(g, n int) {
		var wg sync.WaitGroup
		for range g {
			wg.Go(func() {
				for i := range n {
					node := &target.Node{A: 3, B: []int{i}, C: "node"}
					if i%2 == 1 {
						node = nil // (nil, ErrBad)
					}
					target.Check(node)
				}
			})
		}
		wg.Wait()
	}

	t.Run("ringless", func(t *testing.T) {
		b := newTestBufs(procs(), 1<<20)
		b.d.SetKnown([]uint32{id})
		before := f.Stats()
		on(set(b, true))
		const G, N = 4, 1000
		calls(G, N)
		off()
		recs, drops := b.records(t)
		if len(recs) != G*N || drops != 0 || b.lost != 0 {
			t.Fatalf("%d records, %d dropped, %d lost: want %d, 0, 0", len(recs), drops, b.lost, G*N)
		}
		if d := f.Stats().Direct - before.Direct; d != G*N {
			t.Errorf("Stats.Direct counted %d, want %d", d, G*N)
		}
		nils := 0
		for _, r := range recs {
			if r.Probe() != id || r.Site() != uint64(f.Entry) || r.N() != 3 || r.Goroutine() == 0 || r.Ticks() == 0 {
				t.Fatalf("record: probe %d site %#x, %d arguments, goroutine %d, ticks %d", r.Probe(), r.Site(), r.N(), r.Goroutine(), r.Ticks())
			}
			l, err := r.Layout([]byte{ctlproto.ValInt, ctlproto.ValUint, ctlproto.ValString})
			if err != nil {
				t.Fatal(err)
			}
			if lat := int64(r.Slot(0)); lat < 0 {
				t.Fatalf("latency %d", lat)
			}
			switch s := string(l.Str(r, 2)); s {
			case "<nil>":
				nils++
				if r.Slot(1) == 0 {
					t.Fatal("a nil error with a nil node")
				}
			case "non-nil":
				if r.Slot(1) != 0 {
					t.Fatal("an error with a node")
				}
			default:
				t.Fatalf("error %q", s)
			}
		}
		if nils != G*N/2 {
			t.Errorf("%d nil errors, want %d", nils, G*N/2)
		}
	})

	t.Run("ring too", func(t *testing.T) {
		b := newTestBufs(procs(), 1<<20)
		b.d.SetKnown([]uint32{id})
		on(set(b, false))
		const N = 100 // within a ring: nothing drains it here
		calls(1, N)
		evs := f.ReadReturns(make([]Return, ringSize))
		off()
		if recs, _ := b.records(t); len(recs) != N || evs != N {
			t.Fatalf("%d records and %d ring events, want %d of each", len(recs), evs, N)
		}
	})

	t.Run("full", func(t *testing.T) {
		b := newTestBufs(procs(), 4096)
		b.d.SetKnown([]uint32{id})
		on(set(b, true))
		const N = 1000
		calls(1, N)
		off()
		recs, drops := b.records(t)
		if drops == 0 || uint64(len(recs))+drops != N {
			t.Fatalf("%d records and %d dropped of %d returns", len(recs), drops, N)
		}
	})

	t.Run("no buffer", func(t *testing.T) {
		b := newTestBufs(0, 4096)
		b.d.SetKnown([]uint32{id})
		on(set(b, true))
		calls(2, 100)
		off()
		if b.lost != 200 {
			t.Fatalf("%d counted lost, want 200", b.lost)
		}
	})

	t.Run("where", func(t *testing.T) {
		// Three traces at once: one whose predicate passes the nil errors, one
		// without a predicate, one whose predicate passes none.
		nilErr, all, none := newTestBufs(procs(), 1<<20), newTestBufs(procs(), 1<<20), newTestBufs(procs(), 1<<20)
		nilErr.d.filters, none.d.filters = true, true
		nilErr.d.SetWhere([]*Pred{id: NewPred([]PredIns{{Op: PredStrEq, Mask: PredEq, X: 2, T: 1, F: 2, S: "<nil>"}}, 3)})
		none.d.SetWhere([]*Pred{id: NewPred([]PredIns{{Op: PredInt, Mask: PredLt, X: 0, T: 1, F: 2, K: 0}}, 1)}) // latency < 0: no entry unseen
		for _, b := range []*testBufs{nilErr, all, none} {
			b.d.SetKnown([]uint32{id})
		}
		s := set(all, true)
		s.Bufs, s.Filters = []*DirectBufs{nilErr.d, all.d, none.d}, true
		on(s)
		const G, N = 4, 1000
		calls(G, N)
		off()
		for _, c := range []struct {
			name         string
			b            *testBufs
			recs, filter int
		}{{"nil errors", nilErr, G * N / 2, G * N / 2}, {"no predicate", all, G * N, 0}, {"none", none, 0, G * N}} {
			recs, drops := c.b.records(t)
			filtered := 0
			for _, w := range c.b.words {
				filtered += int(w.filtered)
			}
			if len(recs) != c.recs || filtered != c.filter || drops != 0 || c.b.lost != 0 {
				t.Errorf("%s: %d records, %d filtered, %d dropped, %d lost: want %d, %d, 0, 0", c.name, len(recs), filtered, drops, c.b.lost, c.recs, c.filter)
			}
			for _, r := range recs {
				l, err := r.Layout([]byte{ctlproto.ValInt, ctlproto.ValUint, ctlproto.ValString})
				if err != nil {
					t.Fatal(err)
				}
				if c.b == nilErr && string(l.Str(r, 2)) != "<nil>" {
					t.Fatalf("%s: a record with error %q", c.name, l.Str(r, 2))
				}
			}
		}
		// Once no set has a predicate, retBody no longer calls retWhere: what
		// it left of its last event (the bits it filtered) filters nothing.
		for load64(&whereOn) != 0 {
			runtime.Gosched()
		}
		again := newTestBufs(procs(), 1<<20)
		again.d.SetKnown([]uint32{id})
		on(set(again, true))
		calls(G, N)
		off()
		if recs, drops := again.records(t); len(recs) != G*N || drops != 0 {
			t.Errorf("after the predicates: %d records, %d dropped, want %d, 0", len(recs), drops, G*N)
		}
	})

	t.Run("not described", func(t *testing.T) {
		b := newTestBufs(procs(), 4096)
		b.d.SetKnown([]uint32{id + 1})
		on(set(b, true))
		calls(1, 100)
		b.d.SetKnown(nil)
		calls(1, 100)
		off()
		if recs, drops := b.records(t); len(recs) != 0 || drops != 0 || b.lost != 0 {
			t.Fatalf("%d records, %d dropped, %d lost for a probe not described", len(recs), drops, b.lost)
		}
	})
}
