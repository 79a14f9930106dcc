package consume

import (
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// testSink is a trace sink of one probe (id 0) with two arguments, an int and a
// string, with buffers of size bytes.
func testSink(t testing.TB, size int) *traceSink {
	s, err := newTraceSink(TraceOptions{BufSize: size})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.free)
	states := make([]probeState, 1)
	states[0].p = &registry.Probe{Args: []string{"n", "s"}, Types: []string{"int", "string"}, Kinds: []registry.Kind{registry.Int, registry.String}}
	s.probes.Store(&states)
	return s
}

func firing(p int, n int, str string) *registry.Firing {
	f := &registry.Firing{P: p, Site: 0x1234}
	f.N = 2
	f.Kinds[0], f.Slots[0] = registry.Int, uint64(n)
	f.Kinds[1], f.Strs[1] = registry.String, str
	return f
}

// TestPbufWrapsAndDrops: records wrap around the end of a ring with a filler, are
// read back in order with their values, and a full ring drops and counts exactly.
func TestPbufWrapsAndDrops(t *testing.T) {
	s := testSink(t, MinBufSize)
	b := s.buffers()[0]
	kinds := []byte{ctlproto.ValInt, ctlproto.ValString}
	next, read, fired, strLen := 0, 0, 0, 0
	check := func(rec ctlproto.Record) bool {
		l, err := rec.Layout(kinds)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := string(l.Str(rec, 1)), strings.Repeat("x", strLen); int(rec.Slot(0)) != next ||
			got != want[:min(len(want), StringMax)] || rec.Cut(1) != (len(want) > StringMax) || rec.Site() != 0x1234 {
			t.Fatalf("record %d: n=%d s=%q cut=%v", next, rec.Slot(0), got, rec.Cut(1))
		}
		next++
		read++
		return true
	}
	for round := range 50 {
		// fill past full, then read all; records of one size in a round, so that
		// the ring drops the round's last ones
		strLen = round * 7 % 70
		for range 100 + round {
			s.Fire(firing(0, fired, strings.Repeat("x", strLen)))
			fired++
		}
		b.read(check)
		// the ring filled in this round and dropped the rest of it, exactly
		if read+int(b.dropped()) != fired {
			t.Fatalf("round %d: fired %d, read %d, dropped %d", round, fired, read, b.dropped())
		}
		next = fired
	}
	if read+int(b.dropped()) != fired || b.dropped() == 0 || !b.empty() {
		t.Fatalf("fired %d, read %d, dropped %d", fired, read, b.dropped())
	}
	// The reader has met the drops that came before a record it read: all but the
	// last round's, which the next record written marks.
	if b.met >= b.dropped() {
		t.Fatalf("met %d drops of %d before the last round's were marked", b.met, b.dropped())
	}
	next = fired
	s.Fire(firing(0, fired, strings.Repeat("x", strLen)))
	fired++
	b.read(check)
	if b.met != b.dropped() {
		t.Fatalf("met %d drops of %d", b.met, b.dropped())
	}
}

// TestPbufConcurrent: one writer per P and a reader, at once: every record is read
// whole, in order, or counted dropped.
func TestPbufConcurrent(t *testing.T) {
	const procs, each = 4, 20000
	s, err := newTraceSink(TraceOptions{BufSize: MinBufSize})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range s.buffers() {
		b.free()
	}
	bufs := make([]*pbuf, procs)
	for i := range bufs {
		if bufs[i], err = newPbuf(MinBufSize, false, nil); err != nil {
			t.Fatal(err)
		}
	}
	s.bufs.Store(&bufs)
	defer s.free()
	states := make([]probeState, 1)
	states[0].p = &registry.Probe{Kinds: []registry.Kind{registry.Int, registry.String}}
	s.probes.Store(&states)
	var done atomic.Int32
	var wg sync.WaitGroup
	for p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer done.Add(1)
			for i := range each {
				s.Fire(firing(p, i, "abc"))
			}
		}()
	}
	kinds := []byte{ctlproto.ValInt, ctlproto.ValString}
	last := make([]int, procs)
	for i := range last {
		last[i] = -1
	}
	read := 0
	for {
		finished := done.Load() == procs
		for p, b := range bufs {
			b.read(func(rec ctlproto.Record) bool {
				l, err := rec.Layout(kinds)
				if err != nil || string(l.Str(rec, 1)) != "abc" || int(rec.Slot(0)) <= last[p] {
					t.Fatalf("P %d: record %d after %d: %v", p, rec.Slot(0), last[p], err)
				}
				last[p] = int(rec.Slot(0))
				read++
				return true
			})
		}
		if finished {
			break
		}
		runtime.Gosched()
	}
	wg.Wait()
	_, drops := s.drops()
	if read+int(drops) != procs*each {
		t.Fatalf("read %d + dropped %d != %d", read, drops, procs*each)
	}
	t.Logf("read %d, dropped %d", read, drops)
}

// BenchmarkSinkFire is one record written by a sink (no probe, no pin) while a
// reader drains the buffer raw, as a stream does.
func BenchmarkSinkFire(b *testing.B) {
	s := testSink(b, DefaultBufSize)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s.buffers()[0].read(func(ctlproto.Record) bool { return true })
		}
	}()
	f := firing(0, 1, "hello")
	for i := 0; b.Loop(); i++ {
		f.Slots[0] = uint64(i)
		s.Fire(f)
	}
	close(stop)
	wg.Wait()
	_, d := s.drops()
	b.ReportMetric(float64(d)/float64(b.N), "drops/op")
}

// BenchmarkSinkFireSolo is BenchmarkSinkFire with the reader on the same goroutine,
// every 1024 records: the write alone, no cache line shared with another core.
func BenchmarkSinkFireSolo(b *testing.B) {
	s := testSink(b, benchBufSize)
	f := firing(0, 1, "hello")
	for i := 0; b.Loop(); i++ {
		f.Slots[0] = uint64(i)
		s.Fire(f)
		if i&1023 == 0 {
			s.buffers()[0].read(func(ctlproto.Record) bool { return true })
		}
	}
	_, d := s.drops()
	b.ReportMetric(float64(d)/float64(b.N), "drops/op")
}

var benchBufSize = 4194304

// BenchmarkBatch is what a stream spends in the process on one event: copy it from
// its buffer into a batch, and the batch into a frame.
func BenchmarkBatch(b *testing.B) {
	s := testSink(b, DefaultBufSize)
	tr := &Trace{s: s, c: &consumer{probes: map[uint32]*registry.Probe{0: (*s.probes.Load())[0].p}}}
	w := newBatcher(tr)
	f := firing(0, 1, "/api/users")
	var frame []byte
	n := 0
	for b.Loop() {
		for range 1000 {
			s.Fire(f)
		}
		for {
			r, k := w.next(1 << 30)
			if r == nil {
				break
			}
			frame, _ = ctlproto.AppendFrame(frame[:0], r)
			n += k
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
}

var stampSink uint64

// BenchmarkStamp is the clock read every traced fire pays (stamp: RDTSC and the g
// pointer), the floor under BenchmarkEnabled's trace rows besides the fire itself.
func BenchmarkStamp(b *testing.B) {
	for b.Loop() {
		t, g := stamp()
		stampSink += t + uint64(g)
	}
}
