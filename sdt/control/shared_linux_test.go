package control

import (
	"bytes"
	"encoding/binary"
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
	ro := readOnlyFd(b.fd)
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
