package consume

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/registry"
	"golang.org/x/sys/unix"
)

// TestSharedBuffers: a shared trace's buffer, as another process maps it read-only,
// holds every record written with the header's tail, and the header's head moves
// only when the reader commits (once its frame is sent); the description log
// describes the probe before it fires; the descriptor given away cannot write.
func TestSharedBuffers(t *testing.T) {
	s, err := newTraceSink(TraceOptions{BufSize: MinBufSize, shared: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.free)
	p := &registry.Probe{ID: 0, Provider: "t", Name: "n", Args: []string{"n", "s"}, Types: []string{"int", "string"}, Kinds: []registry.Kind{registry.Int, registry.String}}
	if err := s.arm("", []*registry.Probe{p}); err != nil {
		t.Fatal(err)
	}
	if s.log == nil {
		t.Fatal("no description log")
	}
	b := s.buffers()[0]
	ro := ReadOnlyFd(b.fd)
	if ro < 0 {
		t.Fatal("no read-only descriptor")
	}
	defer unix.Close(ro)
	if m, err := unix.Mmap(ro, 0, len(b.mem), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED); err == nil {
		unix.Munmap(m)
		t.Fatal("the read-only descriptor maps writable")
	}
	m, err := unix.Mmap(ro, 0, len(b.mem), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	for i := range 10 {
		s.Fire(firing(0, i, "abc"))
	}
	recs, marked, cut, err := ctlproto.Leftover(m, 0)
	if err != nil || marked != 0 || cut != 0 {
		t.Fatalf("%d marked, %d cut, %v", marked, cut, err)
	}
	all, n := len(recs), 0
	for r := recs; len(r) > 0; n++ {
		rec, rest, err := ctlproto.Split(r)
		if err != nil || rec.Slot(0) != uint64(n) {
			t.Fatalf("record %d: %v, n=%d", n, err, rec.Slot(0))
		}
		r = rest
	}
	if n != 10 {
		t.Fatalf("%d records shared, want 10", n)
	}
	// read, not yet sent: still there for a reader after the process's end
	b.scan(func(ctlproto.Record) bool { return true })
	if recs, _, _, _ := ctlproto.Leftover(m, 0); len(recs) != all || binary.LittleEndian.Uint64(m[ctlproto.RingHead:]) != 0 {
		t.Fatal("head moved before the commit")
	}
	b.commit()
	if recs, _, _, _ := ctlproto.Leftover(m, 0); len(recs) != 0 {
		t.Fatalf("%d bytes left after the commit", len(recs))
	}
	// the log: one frame of descriptions, the probe's at site 0 among them
	lm := s.log.mem
	ln := binary.LittleEndian.Uint64(lm[ctlproto.DescLogLen:])
	f, err := ctlproto.ReadFrame(bytes.NewReader(lm[ctlproto.DescLogStart : ctlproto.DescLogStart+ln]))
	if err != nil {
		t.Fatal(err)
	}
	r, err := ctlproto.DecodeResponse(f)
	if err != nil || len(r.Descs) == 0 || r.Descs[0].Probe != "t:::n" || len(r.Descs[0].Kinds) != 2 {
		t.Fatalf("log: %+v, %v", r, err)
	}
}

// TestLiveHeads: a live trace's rings are read by the other process, which alone
// moves the heads: the process never writes them, a full ring drops and counts
// while they stand, and the room a reader gives back is written again. The heads'
// descriptor maps writable for the reader; the rings' do not.
func TestLiveHeads(t *testing.T) {
	s, err := newTraceSink(TraceOptions{BufSize: MinBufSize, shared: true, live: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.free)
	if s.heads == nil {
		t.Fatal("no heads")
	}
	p := &registry.Probe{ID: 0, Provider: "t", Name: "n", Args: []string{"n", "s"}, Types: []string{"int", "string"}, Kinds: []registry.Kind{registry.Int, registry.String}}
	if err := s.arm("", []*registry.Probe{p}); err != nil {
		t.Fatal(err)
	}
	s.heads.seal()
	b := s.buffers()[0]
	ro := ReadOnlyFd(b.fd)
	defer unix.Close(ro)
	rm, err := unix.Mmap(ro, 0, len(b.mem), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(rm)
	hm, err := unix.Mmap(s.heads.fd, 0, len(s.heads.mem), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatalf("heads not writable for the reader: %v", err)
	}
	defer unix.Munmap(hm)
	ring, err := ctlproto.OpenRing(rm)
	if err != nil {
		t.Fatal(err)
	}
	const fires = 200 // 56 bytes each: 73 fit in 4 KiB
	for i := range fires {
		s.Fire(firing(0, i, "abc"))
	}
	if h := ctlproto.Word(hm, ctlproto.HeadsStart); h != 0 {
		t.Fatalf("the process moved the head to %d", h)
	}
	read := 0
	next, marked, err := ring.Walk(0, ring.Tail(), ^uint64(0), func(rec ctlproto.Record) bool {
		if rec.Slot(0) != uint64(read) {
			t.Fatalf("record %d holds %d", read, rec.Slot(0))
		}
		read++
		return true
	})
	if err != nil || marked != 0 {
		t.Fatal(marked, err)
	}
	if d := ring.Drops(); uint64(read)+d != fires || read == 0 || d == 0 {
		t.Fatalf("read %d + dropped %d, want %d in all, some of each", read, d, fires)
	}
	ctlproto.SetWord(hm, ctlproto.HeadsStart, next) // the reader gives the room back
	s.Fire(firing(0, 1000, "abc"))
	var got []uint64
	_, marked, err = ring.Walk(next, ring.Tail(), ^uint64(0), func(rec ctlproto.Record) bool {
		got = append(got, rec.Slot(0))
		return true
	})
	if err != nil || len(got) != 1 || got[0] != 1000 || uint64(read)+marked != fires {
		t.Fatalf("after the head moved: %v, %d marked, %v", got, marked, err)
	}
}

// TestFireWithoutBuffer: a fire on a P that has no buffer (GOMAXPROCS raised past
// the trace's) is counted where a reader sees it after the process's end (the
// description log's DescLogLost), and the count outlives the log.
func TestFireWithoutBuffer(t *testing.T) {
	s, err := newTraceSink(TraceOptions{BufSize: MinBufSize, shared: true})
	if err != nil {
		t.Fatal(err)
	}
	p := &registry.Probe{ID: 0, Provider: "t", Name: "n", Args: []string{"n", "s"}, Types: []string{"int", "string"}, Kinds: []registry.Kind{registry.Int, registry.String}}
	if err := s.arm("", []*registry.Probe{p}); err != nil {
		t.Fatal(err)
	}
	nb := len(s.buffers())
	for range 3 {
		s.Fire(firing(nb, 1, "x"))
	}
	if n := binary.LittleEndian.Uint64(s.log.mem[ctlproto.DescLogLost:]); n != 3 {
		t.Fatalf("log counts %d fires without a buffer, want 3", n)
	}
	if _, all := s.drops(); all != 3 {
		t.Fatalf("drops %d, want 3", all)
	}
	s.free()
	if _, all := s.drops(); all != 3 {
		t.Fatalf("after free: drops %d, want 3", all)
	}
}

// TestDescLogFull: descriptions past the 1 MiB the log once had are written (its
// size is address space); past what it has, the trace is refused with a clear
// error, not armed to lose what it cannot describe.
func TestDescLogFull(t *testing.T) {
	many := &registry.Probe{ID: 0, Provider: "fn", Module: "big", Name: "entry"}
	for i := range 20000 {
		many.Sites = append(many.Sites, registry.Site{Addr: uintptr(0x400000 + 16*i), Module: "example.com/big/pkg", Func: fmt.Sprintf("example.com/big/pkg.Function%05d", i)})
	}
	s, err := newTraceSink(TraceOptions{BufSize: MinBufSize, shared: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.arm("", []*registry.Probe{many}); err != nil {
		t.Fatalf("20,000 sites: %v", err)
	}
	if n := binary.LittleEndian.Uint64(s.log.mem[ctlproto.DescLogLen:]); n <= 1<<20 {
		t.Fatalf("log of %d bytes: want more than 1 MiB for this test", n)
	}
	s.free()

	old := descLogSize
	descLogSize = 64 << 10
	defer func() { descLogSize = old }()
	s, err = newTraceSink(TraceOptions{BufSize: MinBufSize, shared: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.free()
	err = s.arm("", []*registry.Probe{many})
	if err == nil || !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "20001 probe sites") || !strings.Contains(err.Error(), "narrower spec") {
		t.Fatalf("arm past the log: %v", err)
	}
	if s.probes.Load() != nil {
		t.Fatal("armed though refused")
	}
}

// TestDescPendingKinds: a probe whose kinds only its fires tell (an fbt argument
// of a named type) is logged pending; once a fire has told them, the stream's update
// logs it again with them, and a reader of the log takes the later one.
func TestDescPendingKinds(t *testing.T) {
	s, err := newTraceSink(TraceOptions{BufSize: MinBufSize, shared: true, live: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.free()
	p := &registry.Probe{ID: 0, Provider: "fbt", Name: "entry", Args: []string{"n", "s"}, Types: []string{"int", "pkg.Name"}, Kinds: []registry.Kind{registry.Int, registry.Unknown}}
	if err := s.arm("", []*registry.Probe{p}); err != nil {
		t.Fatal(err)
	}
	last := func() ctlproto.Desc {
		t.Helper()
		lm := s.log.mem
		n := binary.LittleEndian.Uint64(lm[ctlproto.DescLogLen:])
		r := bytes.NewReader(lm[ctlproto.DescLogStart : ctlproto.DescLogStart+n])
		var ds ctlproto.Desc
		for r.Len() > 0 {
			f, err := ctlproto.ReadFrame(r)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := ctlproto.DecodeResponse(f)
			if err != nil {
				t.Fatal(err)
			}
			ds = resp.Descs[len(resp.Descs)-1]
		}
		return ds
	}
	if ds := last(); !ds.Pending {
		t.Fatalf("logged %+v: want pending", ds)
	}
	s.log.update(*s.probes.Load())
	if ds := last(); !ds.Pending {
		t.Fatal("no fire yet, yet logged again as known")
	}
	s.Fire(firing(0, 7, "named"))
	s.log.update(*s.probes.Load())
	if ds := last(); ds.Pending || len(ds.Kinds) != 2 || ds.Kinds[1] != ctlproto.ValString {
		t.Fatalf("after a fire: %+v, want kinds int, string, not pending", ds)
	}
	n := binary.LittleEndian.Uint64(s.log.mem[ctlproto.DescLogLen:])
	s.log.update(*s.probes.Load())
	if binary.LittleEndian.Uint64(s.log.mem[ctlproto.DescLogLen:]) != n {
		t.Fatal("logged again with nothing new")
	}
}
