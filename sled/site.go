package sled

import (
	"time"

	"github.com/gosdt/gosdt/arch/amd64"
)

// Kind tells what a site's guarded block does.
type Kind uint8

const (
	// Fire sites guard a call of the probe's fire method (Probe1, Fire).
	Fire Kind = iota
	// Guard sites guard arbitrary code (if p.Enabled() { ... }).
	Guard
)

func (k Kind) String() string {
	if k == Guard {
		return "guard"
	}
	return "fire"
}

// Site is one physical probe site: the bytes that get patched. Logical probes (what a
// user enables) are made of sites; see package sdt.
type Site struct {
	Addr   uintptr // first byte of the site
	Len    int     // bytes the sled covers
	Flag   uintptr // address of the probe definition (its flag byte is at offset 0)
	Kind   Kind
	Return uintptr // Fire sites: return address of the fire call, which names the site at run time

	Orig     []byte // the compiler's bytes
	Off      []byte // canonical disabled form; nil when not patchable
	On       []byte // canonical enabled form; differs from Off only in the toggle
	ToggleAt int    // offset of the toggle, the only instruction ever switched (amd64: after a lead NOP that aligns it)
	Toggle   int    // length of the toggle

	Func   string // function holding the probe statement (inlining resolved), e.g. "main.worker"; see Describe
	Module string // its package path, e.g. "main"
	File   string
	Line   int

	Reason string // non-empty: not patchable (keeps the branch check), and why

	// Presealed: the text held Off when the process started, because the binary was
	// sealed (sdtctl seal) and the site table said so; the runtime has nothing to seal.
	Presealed bool

	probePkg  string  // for Describe
	syms      symbols // for Describe
	described bool
	Note      string // a sealed site's caveat, e.g. arm64's flag load that had to stay

	// Also lists rewrites outside [Addr, Addr+Len) made once at sealing time, in the
	// same batch, and put back by unsealing: on arm64, the flag load turned into NOPs
	// once its register is proven dead. They are never toggled.
	Also []Rewrite
}

// Rewrite is one rewrite of text at Addr from Orig to New.
type Rewrite struct {
	Addr      uintptr
	Orig, New []byte
}

// Patchable reports whether the site has a verified sled.
func (s *Site) Patchable() bool { return s.Reason == "" }

// Switch returns the bytes of the toggle in the disabled and the enabled form, to be
// written at Addr+ToggleAt: the only write a run-time enable or disable makes.
func (s *Site) Switch() (off, on []byte) {
	end := s.ToggleAt + s.Toggle
	return s.Off[s.ToggleAt:end], s.On[s.ToggleAt:end]
}

// EntersAtStart reports whether a goroutine stopped inside the disabled sled can only
// be at Addr: the toggle is the first instruction and jumps past the rest (or is the
// whole sled). Only such a site can be given its compiler's bytes back while its code
// may be running (see sdt's Unseal): every other pc in the sled cuts those in two.
func (s *Site) EntersAtStart() bool {
	return s.ToggleAt == 0 && (s.Toggle == s.Len || amd64.OffJumps(s.Off, 0))
}

// Rejection is a candidate that is not a site, with the reason.
type Rejection struct {
	Addr   uintptr
	Flag   uintptr
	Reason string
}

// Table is the result of one discovery.
type Table struct {
	Sites      []*Site // sorted by Addr
	Rejected   []Rejection
	Candidates int           // byte patterns examined
	TextBytes  int           // size of the text scanned
	Elapsed    time.Duration // wall time of the discovery
	Reason     string        // set when discovery could not run at all (platform, build)

	// Sealed: the sites come from the binary's site table (sdtctl seal), not a scan.
	Sealed bool
	Probes []SealedProbe // sealed binaries: the probe names that have a USDT semaphore
}
