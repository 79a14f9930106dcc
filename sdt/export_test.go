package sdt

// ToggleLayout is where a patchable site's run-time switch writes.
type ToggleLayout struct {
	Func   string  // the function holding it
	Addr   uintptr // the site
	At     int     // offset of the toggle in the sled
	Toggle int     // its length
}

// ToggleLayouts returns the layout of every patchable site of the probes provider
// defines, for tests that check what one switch writes.
func ToggleLayouts(provider string) []ToggleLayout {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.resolve()
	var out []ToggleLayout
	for _, p := range reg.probes {
		if p.provider != provider {
			continue
		}
		for _, s := range p.sites {
			if s.Patchable() {
				out = append(out, ToggleLayout{s.Func, s.Addr, s.ToggleAt, s.Toggle})
			}
		}
	}
	return out
}
