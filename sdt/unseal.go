package sdt

import (
	"fmt"
	"time"

	"github.com/gosdt/gosdt/patch"
)

// unseal puts the compiler's own check back at every sealed site that spec matches and
// that has never been enabled, so that those sites work through their branch check
// again, as with SDT_PATCH=off (benchmarks compare the two in one process). It returns
// how many sites it unsealed. It cannot be undone: a goroutine may be parked between
// the compiler's compare and its jump, where a sled has no instruction boundary.
//
// unseal refuses the whole request, and changes nothing, when a site it matches could
// hold a stopped goroutine anywhere but at its first byte, because the compiler's bytes
// would cut that goroutine's instruction in two:
//   - a site that has been enabled: a goroutine may be parked on its NOP padding;
//   - a site whose toggle is not its first instruction (amd64 puts a NOP before a
//     toggle that would otherwise straddle an aligned 8-byte word, so that every switch
//     is one atomic store): a goroutine may be parked on the toggle itself;
//   - a site whose disabled form falls through its NOPs (a JNE site, whose fire block
//     is out of line).
//
// Only a never-enabled site whose disabled form jumps at its first byte qualifies.
func unseal(specText string) (int, error) {
	sp, err := parseSpec(specText)
	if err != nil {
		return 0, err
	}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.resolve()
	var writes []patch.Write
	var sites []*site
	for _, p := range reg.probes {
		for _, s := range p.sites {
			if !sp.Match(p.provider, s.Module, s.Func, p.name) || !s.Patchable() {
				continue
			}
			switch {
			case s.everOn:
				return 0, fmt.Errorf("unseal %q: site %#x (%s) has been enabled: a goroutine may be parked inside its sled", specText, s.Addr, s.Func)
			case s.ToggleAt != 0:
				return 0, fmt.Errorf("unseal %q: site %#x (%s) toggles at +%d, after a NOP that aligns it: a goroutine may be parked on the toggle, inside the compiler's compare", specText, s.Addr, s.Func, s.ToggleAt)
			case !s.EntersAtStart():
				return 0, fmt.Errorf("unseal %q: site %#x (%s) falls through its NOPs while disabled: a goroutine may be parked inside its sled", specText, s.Addr, s.Func)
			}
			writes = append(writes, patch.Write{Addr: s.Addr, Old: s.Off, New: s.Orig})
			// arm64: the flag load comes back too. A goroutine parked between the
			// load's NOPs and the branch resumes with a stale register and may take the
			// restored branch either way, once: into the guarded block, which runs once
			// and whose fire finds the site off; or past it, as a never-enabled site does.
			for _, a := range s.Also {
				writes = append(writes, patch.Write{Addr: a.Addr, Old: a.New, New: a.Orig})
			}
			sites = append(sites, s)
		}
	}
	if len(writes) == 0 {
		return 0, fmt.Errorf("unseal %q: %w", specText, ErrNoMatch)
	}
	if _, err := patch.Apply(writes, patch.Options{Protocol: patch.Rendezvous}); err != nil {
		return 0, fmt.Errorf("unseal %q: %w", specText, err)
	}
	for _, s := range sites {
		s.state = stateUnsealed
	}
	return len(sites), nil
}

// DiscoveryStats says what discovery did at start-up.
type DiscoveryStats struct {
	TextBytes  int           // size of the text
	Searched   int           // of it, the bytes searched: the functions that can hold sites
	Search     string        // how those functions were chosen (their inline trees, or the program's modules), or why all the text was searched
	Candidates int           // flag compares (amd64) or flag loads (arm64) on pointer-bearing data examined
	Sites      int           // probe sites found
	Sealed     int           // of which sealed
	Rejected   int           // candidates that are not probe sites
	Elapsed    time.Duration // discovery, without sealing
	Reason     string        // set when discovery did not run (platform)
	// Table: the sites came from the binary's site table (sdtctl seal), not a scan;
	// Presealed of them held their sled in the file already.
	Table     bool
	Presealed int
}

// Discovery reports the start-up discovery of this process's sites.
func Discovery() DiscoveryStats {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	t := reg.table
	d := DiscoveryStats{TextBytes: t.TextBytes, Searched: t.Searched, Search: t.Search, Candidates: t.Candidates, Sites: len(t.Sites),
		Rejected: len(t.Rejected), Elapsed: t.Elapsed, Reason: t.Reason, Table: t.Sealed}
	for _, s := range reg.sites {
		if s.Patchable() {
			d.Sealed++
		}
		if s.Presealed {
			d.Presealed++
		}
	}
	return d
}
