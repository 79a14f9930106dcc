package sled

import (
	"time"

	"github.com/gosdt/gosdt/internal/sealfmt"
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

// Site is one physical probe site as discovery found it, or as a sealed binary's site
// table recorded it: the bytes that get patched and how. It is a value that never
// changes once made; what becomes of a site in a process (sealed, switched, left with
// its branch check by choice) is its owner's to record (package sdt). Logical probes
// (what a user enables) are made of sites.
type Site struct {
	Addr   uintptr // first byte of the site
	Len    int     // bytes the sled covers
	Flag   uintptr // address of the probe definition (its flag byte is at offset 0)
	Kind   Kind
	Return uintptr // Fire sites: return address of the fire call, which names the site at run time

	Orig     []byte // the compiler's bytes
	Off      []byte // canonical disabled form; nil when refused
	On       []byte // canonical enabled form; differs from Off only in the toggle
	ToggleAt int    // offset of the toggle, the only bytes ever switched (amd64: the opcode or the displacement of the sled's first instruction)
	Toggle   int    // length of the toggle

	// Also lists rewrites outside [Addr, Addr+Len) made once at sealing time, in the
	// same batch, and put back by unsealing: on arm64, the flag load turned into NOPs
	// once its register is proven dead. They are never toggled.
	Also []Rewrite
	Note string // a sealable site's caveat, e.g. arm64's flag load that had to stay

	Refusal Refusal // why it has no verified sled and keeps its branch check; zero if it has one

	// Presealed: the text held Off when the process started, because the binary was
	// sealed (sdtctl seal) and the site table said so; the runtime has nothing to seal.
	Presealed bool

	syms Symbols // names the holder (Describe)
}

// Rewrite is one rewrite of text at Addr from Orig to New.
type Rewrite struct {
	Addr      uintptr
	Orig, New []byte
}

// Sealable reports whether the site has a verified sled (no Refusal).
func (s Site) Sealable() bool { return s.Refusal.Cause == Proven }

// Switch returns the bytes of the toggle in the disabled and the enabled form, to be
// written at Addr+ToggleAt: the only write a run-time enable or disable makes.
func (s Site) Switch() (off, on []byte) {
	end := s.ToggleAt + s.Toggle
	return s.Off[s.ToggleAt:end], s.On[s.ToggleAt:end]
}

// EntersAtStart reports whether a goroutine stopped inside the disabled sled of this
// process's site can only be at Addr: the sled's first instruction jumps past the
// rest (or is the whole sled). Only such a site can be given its compiler's
// bytes back while its code may be running: every other pc in the sled cuts those in
// two.
func (s Site) EntersAtStart() bool {
	return s.Sealable() && (s.Toggle == s.Len || host != nil && host.Jumps(s.Off))
}

// Describe names the function that holds the probe statement of the site (inlining
// resolved), with the statement's file and line. It walks inline tables, so discovery
// leaves it for when a site is first listed or enabled.
func (s Site) Describe() Holder {
	if s.syms == nil {
		return Holder{}
	}
	return s.syms.Holder(uint64(s.Addr))
}

// Holder is the function that holds a probe statement: its package path, its name as
// DTrace shows it ("main.worker"; see SplitFunc), and the statement's file and line.
type Holder struct {
	Module, Func string
	File         string
	Line         int
}

// Refusal says why a site keeps the compiler's branch check: no sled could be proven
// for it. The zero Refusal means the site has one.
type Refusal struct {
	Cause  Cause
	Detail string // what the proof found, in its words
}

func (r Refusal) String() string { return r.Detail }

// Cause classifies a Refusal.
type Cause uint8

const (
	Proven         Cause = iota // not refused: the site has a verified sled
	Unproven                    // the code is not a site's verified shape, or a proof about it failed
	InProbePackage              // the check is in the probe package itself (a Probe body that was not inlined)
	TextDiffers                 // the text holds neither the compiler's bytes nor the sled its site table records
	NotInData                   // a site table names a flag outside data and bss
)

func refused(c Cause, detail string) Refusal { return Refusal{Cause: c, Detail: detail} }

// Rejection is a candidate that is not a site, with the reason.
type Rejection struct {
	Addr   uintptr
	Flag   uintptr
	Reason string
}

// Table is the result of one discovery.
type Table struct {
	Sites      []Site // sorted by Addr
	Rejected   []Rejection
	Candidates int           // byte patterns examined
	TextBytes  int           // size of the text
	Searched   int           // of it, the bytes searched: the functions that can hold sites
	Search     string        // how those functions were chosen, or why all the text was searched
	Elapsed    time.Duration // wall time of the discovery
	Reason     string        // set when discovery could not run at all (platform, build)
	Warning    string        // something the operator must hear about, said on stderr at start: a sealed binary's unusable site table

	// Sealed: the sites come from the binary's site table (sdtctl seal), not a scan.
	Sealed bool
	Probes []sealfmt.Probe // sealed binaries: the probe names that have a USDT semaphore
}
