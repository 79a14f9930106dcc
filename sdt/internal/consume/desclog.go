package consume

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// descLog is a shared trace's log of descriptions (ctlproto's DescLog): every site of
// every probe the trace arms is described there before the probe can fire, so that
// sdtctl decodes the records of a process that ended before it sent them. Its pages
// are committed as they are written: the log is not counted in the memory budget. A
// trace whose descriptions do not fit is refused (describe): a record no description
// names could not be read.
type descLog struct {
	mu     sync.Mutex
	mem    []byte
	fd     int
	n      int // bytes written after DescLogStart
	done   map[ctlproto.DescKey]bool
	logged map[uint32]uint64 // by probe: the kinds (packKinds) its descriptions said; 0: pending
}

// descLogSize is the bytes of a log (a variable for the tests).
var descLogSize = ctlproto.DescLogSize

// newDescLog maps a log; nil where no shared memory can be made.
func newDescLog() *descLog {
	mem, fd, err := allocBuf(descLogSize, true)
	if err != nil {
		return nil
	}
	if fd < 0 {
		freeBuf(mem, fd)
		return nil
	}
	binary.LittleEndian.PutUint64(mem, ctlproto.DescLogMagic)
	return &descLog{mem: mem, fd: fd, done: map[ctlproto.DescKey]bool{}, logged: map[uint32]uint64{}}
}

// describe writes the descriptions of probes' sites not written before; states
// (by probe id) are the trace's, to be published after. Descriptions that do not
// fit are an error, and nothing is written.
func (l *descLog) describe(probes []*registry.Probe, states []probeState) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mem == nil {
		return nil
	}
	return l.write(probes, states, false)
}

// update writes again the descriptions of the probes whose fires have told kinds
// their descriptions did not know (Desc.Pending): the stream's, now and then, and
// before its end.
func (l *descLog) update(states []probeState) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.mem == nil {
		return
	}
	var probes []*registry.Probe
	for i := range states {
		st := &states[i]
		if st.p == nil {
			continue
		}
		if k := st.kinds.Load(); k != 0 && l.logged[st.p.ID] == 0 {
			probes = append(probes, st.p)
		}
	}
	if len(probes) > 0 {
		l.write(probes, states, true) // what does not fit stays pending: counted dropped by the reader
	}
}

// write appends probes' descriptions; again: those written before too.
func (l *descLog) write(probes []*registry.Probe, states []probeState, again bool) error {
	var frames []byte
	var ds []ctlproto.Desc
	var keys []ctlproto.DescKey
	var err error
	flush := func() {
		if len(ds) == 0 || err != nil {
			return
		}
		frames, err = ctlproto.AppendFrame(frames, &ctlproto.Response{Kind: ctlproto.KindEvents, Descs: ds})
		ds = ds[:0]
	}
	logged := map[uint32]uint64{}
	for _, p := range probes {
		st := &states[p.ID]
		if st.p == nil {
			continue
		}
		var args []ctlproto.Arg
		for i := range p.Args {
			args = append(args, ctlproto.Arg{Name: p.Args[i], Type: p.Types[i]})
		}
		kinds, known := st.kindsOf(), st.kinds.Load()
		pending := known == 0 && slices.Contains(p.Kinds, registry.Unknown)
		if !pending {
			logged[p.ID] = max(known, 1)
		} else {
			logged[p.ID] = 0
		}
		// The probe as a whole (site 0), then each site: one loop, not a closure
		// called twice, which the compiler copied into both calls.
		for i := -1; i < len(p.Sites); i++ {
			var addr uintptr
			if i >= 0 {
				addr = p.Sites[i].Addr
			}
			k := ctlproto.DescKey{Probe: p.ID, Site: uint64(addr)}
			if l.done[k] && !again {
				continue
			}
			keys = append(keys, k)
			ds = append(ds, ctlproto.Desc{ID: p.ID, Probe: p.FullName(addr), Site: uint64(addr), Args: args, Kinds: kinds, Pending: pending})
			if len(ds) == 256 {
				flush()
			}
		}
	}
	flush()
	at := ctlproto.DescLogStart + l.n
	if err == nil && at+len(frames) > len(l.mem) {
		err = &budgetError{fmt.Sprintf("control: the descriptions of the trace's %d probe sites take %s, more than its description log's %s (bytes left: %d): trace fewer probes (a narrower spec)",
			len(keys), sizeString(uint64(len(frames))), sizeString(uint64(len(l.mem)-ctlproto.DescLogStart)), len(l.mem)-at)}
	}
	if err != nil {
		atomic.StoreUint64(wordAt(l.mem, ctlproto.DescLogFull), 1)
		return err
	}
	copy(l.mem[at:], frames)
	l.n += len(frames)
	atomic.StoreUint64(wordAt(l.mem, ctlproto.DescLogLen), uint64(l.n))
	for _, k := range keys {
		l.done[k] = true
	}
	for id, k := range logged {
		l.logged[id] = k
	}
	return nil
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
