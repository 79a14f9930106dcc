package registry

// returnTable maps the return address of a fire call to its site: an open-addressing
// hash table, built once and then only read, so fire looks a site up without a lock
// in a few nanoseconds.
type returnTable struct {
	slots []retSlot // len a power of two; empty slots have pc 0
	shift uint
}

type retSlot struct {
	pc uintptr
	s  *site
}

func newReturnTable(sites []*site) returnTable {
	n := 0
	for _, s := range sites {
		if s.Return != 0 {
			n++
		}
	}
	size, shift := 8, uint(64-3)
	for size < 2*n {
		size, shift = size*2, shift-1
	}
	t := returnTable{slots: make([]retSlot, size), shift: shift}
	for _, s := range sites {
		if s.Return == 0 {
			continue
		}
		i := t.slot(s.Return)
		for t.slots[i].pc != 0 {
			i = (i + 1) & (len(t.slots) - 1)
		}
		t.slots[i] = retSlot{s.Return, s}
	}
	return t
}

func (t *returnTable) slot(pc uintptr) int {
	return int((uint64(pc) * 0x9E3779B97F4A7C15) >> t.shift)
}

func (t *returnTable) lookup(pc uintptr) *site {
	if len(t.slots) == 0 {
		return nil
	}
	for i := t.slot(pc); ; i = (i + 1) & (len(t.slots) - 1) {
		switch e := &t.slots[i]; e.pc {
		case pc:
			return e.s
		case 0:
			return nil
		}
	}
}
