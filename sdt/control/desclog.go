package control

import (
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// descLog is a shared trace's log of descriptions (ctlproto's DescLog): every site of
// every probe the trace arms is described there before the probe can fire, so that
// sdtctl decodes the records of a process that ended before it sent them. Its pages
// are committed as they are written: the log is not counted in the memory budget.
type descLog struct {
	mu   sync.Mutex
	mem  []byte
	fd   int
	n    int // bytes written after DescLogStart
	done map[ctlproto.DescKey]bool
}

// newDescLog maps a log; nil where no shared memory can be made.
func newDescLog() *descLog {
	mem, fd, err := allocBuf(ctlproto.DescLogSize, true)
	if err != nil {
		return nil
	}
	if fd < 0 {
		freeBuf(mem, fd)
		return nil
	}
	binary.LittleEndian.PutUint64(mem, ctlproto.DescLogMagic)
	return &descLog{mem: mem, fd: fd, done: map[ctlproto.DescKey]bool{}}
}

// describe writes the descriptions of probes' sites not written before; states
// (by probe id) are the trace's, to be published after.
func (l *descLog) describe(probes []*registry.Probe, states []probeState) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mem == nil {
		return
	}
	var ds []ctlproto.Desc
	flush := func() {
		if len(ds) == 0 {
			return
		}
		b, err := ctlproto.AppendFrame(nil, &ctlproto.Response{Kind: ctlproto.KindEvents, Descs: ds})
		ds = ds[:0]
		at := ctlproto.DescLogStart + l.n
		if err != nil || at+len(b) > len(l.mem) {
			atomic.StoreUint64(wordAt(l.mem, ctlproto.DescLogFull), 1)
			return
		}
		copy(l.mem[at:], b)
		l.n += len(b)
		atomic.StoreUint64(wordAt(l.mem, ctlproto.DescLogLen), uint64(l.n))
	}
	for _, p := range probes {
		st := &states[p.ID]
		if st.p == nil {
			continue
		}
		var args []ctlproto.Arg
		for i := range p.Args {
			args = append(args, ctlproto.Arg{Name: p.Args[i], Type: p.Types[i]})
		}
		kinds := st.kindsOf()
		site := func(addr uintptr) {
			k := ctlproto.DescKey{Probe: p.ID, Site: uint64(addr)}
			if l.done[k] {
				return
			}
			l.done[k] = true
			ds = append(ds, ctlproto.Desc{ID: p.ID, Probe: p.FullName(addr), Site: uint64(addr), Args: args, Kinds: kinds})
			if len(ds) == 256 {
				flush()
			}
		}
		site(0)
		for i := range p.Sites {
			site(p.Sites[i].Addr)
		}
	}
	flush()
}

// free unmaps the log. The reader's, as the trace's buffers are freed.
func (l *descLog) free() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mem != nil {
		freeBuf(l.mem, l.fd)
		l.mem, l.fd = nil, -1
	}
}
