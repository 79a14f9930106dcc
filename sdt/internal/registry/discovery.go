package registry

import "time"

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
