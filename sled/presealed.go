package sled

import (
	"fmt"
	"sort"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/spec"
)

// A sealed binary whose site table cannot be used (damaged, truncated, another
// binary's) still has its sites sealed in the file: their compiler's compare and
// branch are gone from the text, replaced by the sled, so a scan for flag checks
// (Scan) does not see them. Rescan finds them from the text alone where that proves
// them, and never guesses where it does not:
//
//   - A fire site of Go's usual layout (JE, CBZ, TBZ: the fire block follows the
//     check) holds, disabled, the canonical sled's jump over its fire block. It is
//     proven when that jump, with its NOPs, is exactly the sled seal writes
//     (Arch.Sealed), nothing else branches into it or onto the block after it, the
//     block calls a fire method whose receiver is one address in data (the probe: its
//     flag), and the code after that call comes back to where the jump goes (Arch.
//     Rejoins). The sled is then switched as the table's would be.
//   - A guard site (if p.Enabled() { ... }) guards code that need not name its probe;
//     a site whose fire block is out of line (JNE, CBNZ) holds, disabled, a jump to its
//     own end or a NOP (arm64), or a TEST and NOPs (amd64 rel32), with
//     nothing in the text that says where its enabled form would jump. Without the table
//     nothing ties either to its probe: they stay as sealed, disabled, and the warning
//     says so.
//
// Their compiler's bytes are unknown too (the sled replaced them; Orig is nil): a
// sealed site is only ever toggled, which does not need them.

// Rescan finds the sites of a sealed binary's text without its site table: the
// sites still in their compiler's form, as Scan finds them (those sealing refused),
// and the sites sealed in the file that the text proves (see above).
func Rescan(a *arch.Arch, src Source) *Table {
	t := Scan(a, src)
	if t.Reason != "" {
		return t
	}
	t.Sites = append(t.Sites, sealedSites(a, src)...)
	sort.Slice(t.Sites, func(i, j int) bool { return t.Sites[i].Addr < t.Sites[j].Addr })
	return t
}

// RescanWarning is the warning of a program whose site table err says cannot be used,
// and whose sites t found instead (Rescan).
func RescanWarning(err error, t *Table) string {
	n := 0
	for _, s := range t.Sites {
		if s.Presealed {
			n++
		}
	}
	return fmt.Sprintf("%v; found %d sites in the text instead, %d of them sealed in the file; "+
		"sealed guard sites (if p.Enabled()) and sealed sites whose fire block is out of line cannot be told "+
		"from the text and stay off, and USDT tracers cannot switch probes on; seal the unsealed build again", err, len(t.Sites), n)
}

// sealedSites returns the fire sites sealed in the file that the text of src proves.
func sealedSites(a *arch.Arch, src Source) []Site {
	ranges := src.Search
	if ranges == nil {
		ranges = [][2]int{{0, len(src.Text)}}
	}
	p := newProver(a, src)
	pass := func(target uint64) bool { return raceCall(p.name(target)) }
	var sites []Site
	for _, r := range ranges {
		for pc := src.Base + uint64(r[0]); pc < src.Base+uint64(r[1]); {
			entry, end := src.Syms.Func(pc)
			if entry == 0 || end <= pc {
				break
			}
			if mod, _ := spec.SplitFunc(src.Syms.Name(entry)); !IsProbePackage(mod) {
				sites = p.sealedIn(entry, end, pass, sites)
			}
			pc = end
		}
	}
	return sites
}

// sealedIn appends to sites the fire sites sealed in the file that the function
// [entry, end) holds and proves.
func (p *prover) sealedIn(entry, end uint64, pass func(uint64) bool, sites []Site) []Site {
	p.mem.Reset()
	w, err := p.a.Walk(p.mem, entry, end)
	if err != nil {
		return sites
	}
	step := uint64(max(w.Width, 1))
	for pc := entry; pc < w.End; pc += step {
		if !w.IsStart(pc) {
			continue
		}
		as, sl, ok := p.a.Sealed(p.mem, w, pc)
		if !ok {
			continue
		}
		g, err := p.a.GuardedCall(p.mem, as.Next(), pass)
		if err != nil || !IsFire(p.name(g.Call)) {
			continue // a guard site, or a jump that is no site at all: nothing proves which
		}
		flag, ok := p.flagOf(g.Receivers)
		if !ok || !p.a.Rejoins(p.mem, g.Return, as.Taken, pass) {
			continue
		}
		s := Site{Addr: uintptr(as.Addr), Len: as.Len, Flag: uintptr(flag), Kind: Fire, Return: uintptr(g.Return),
			Off: sl.Off, On: sl.On, ToggleAt: sl.At, Toggle: sl.Toggle, Presealed: true, syms: p.src.Syms,
			Note: "found in the text, the site table being unusable: its compiler's bytes are not known"}
		sites = append(sites, s)
		pc = as.Next() - step
	}
	return sites
}

// flagOf returns the one address in data among a fire call's receivers: the probe.
func (p *prover) flagOf(receivers []uint64) (uint64, bool) {
	var flag uint64
	for _, r := range receivers {
		if !p.src.InData(r) || r == flag {
			continue
		}
		if flag != 0 {
			return 0, false
		}
		flag = r
	}
	return flag, flag != 0
}
