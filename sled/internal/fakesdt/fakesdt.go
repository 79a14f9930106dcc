// Package fakesdt has the shape of a probe definition of package sdt (a flag byte, then
// a pointer) without sdt, which seals the sites it finds: sled's tests discover its.
package fakesdt

// P is a probe definition: Fire inlines into the caller as a site does.
type P struct {
	on   uint8
	core *int
}

// New returns a definition; assigned to a package-level variable at init, it lives in
// bss, as a definition does.
func New() P { return P{core: new(int)} }

// Fire fires the probe when it is on.
func (p *P) Fire(v int) {
	if p.on != 0 {
		p.fire(v)
	}
}

// Enabled reports whether the probe is on.
func (p *P) Enabled() bool { return p.on != 0 }

// Sink receives what fires, so that fire has an effect.
var Sink int

//go:noinline
func (p *P) fire(v int) { Sink += v }
