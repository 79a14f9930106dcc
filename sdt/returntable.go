package sdt

// returnTable maps the return address of a fire call to its site: an open-addressing
// hash table, built once and then only read, so fire looks a site up without a lock
// in a few nanoseconds.
type returnTable struct {
	keys  []uintptr
	vals  []*site
	shift uint
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
	t := returnTable{keys: make([]uintptr, size), vals: make([]*site, size), shift: shift}
	for _, s := range sites {
		if s.Return == 0 {
			continue
		}
		i := t.slot(s.Return)
		for t.keys[i] != 0 {
			i = (i + 1) & (len(t.keys) - 1)
		}
		t.keys[i], t.vals[i] = s.Return, s
	}
	return t
}

func (t *returnTable) slot(pc uintptr) int {
	return int((uint64(pc) * 0x9E3779B97F4A7C15) >> t.shift)
}

func (t *returnTable) lookup(pc uintptr) *site {
	if len(t.keys) == 0 || pc == 0 {
		return nil
	}
	for i := t.slot(pc); ; i = (i + 1) & (len(t.keys) - 1) {
		switch t.keys[i] {
		case pc:
			return t.vals[i]
		case 0:
			return nil
		}
	}
}
