// Package seal rewrites a linked Go binary that uses gosdt so that it starts without a
// scan and shows its probes to bpftrace, perf and gdb (sdtctl seal, sdtctl toolexec).
//
// What a sealed binary holds beyond the linker's output:
//   - its sites in their disabled sled, in the file (what the runtime writes at start);
//   - the site table (sealfmt.SectionName), checked byte for byte by the runtime at start;
//   - sled's seal mark set to the table's length and CRC, so the runtime looks for it;
//   - SystemTap notes (.note.stapsdt, .stapsdt.base), one per fire site, with where its
//     arguments are and a semaphore per probe name in sled's semaphore array, which
//     .probes describes (bcc computes semaphore offsets from that section). On amd64 a
//     note is on its sled's probe NOP (a 5-byte NOP the kernel turns into a call to
//     its uprobe trampoline), else on the fire call (arm64; arguments that cannot be
//     named at the NOP).
//
// Loaded bytes keep their addresses: sections are added at the end of the file.
package seal

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/functab"
	"github.com/gosdt/gosdt/internal/outfile"
	"github.com/gosdt/gosdt/internal/sealfmt"
	"github.com/gosdt/gosdt/internal/usdt"
	"github.com/gosdt/gosdt/sled"
	"github.com/gosdt/gosdt/sled/offline"
)

// ErrNoGosdt is returned (wrapped) for a Go binary that does not use gosdt.
var ErrNoGosdt = offline.ErrNoGosdt

// ErrNoSites is returned (wrapped) for a gosdt program in which discovery finds no
// site: sealing it would only stop the runtime from looking for itself.
var ErrNoSites = errors.New("no probe sites to seal")

// Report says what sealing did.
type Report struct {
	Path    string `json:"path"`
	Arch    string `json:"arch"`
	Already bool   `json:"already_sealed"` // nothing was changed
	Sites   int    `json:"sites"`          // sites discovery found
	Sealed  int    `json:"sealed"`         // of which written as sleds
	Probes  int    `json:"probes"`         // probe names with notes and a semaphore
	Notes   int    `json:"notes"`          // USDT notes written (one per fire site)
	// NOPNotes of the notes are on a probe NOP, where the kernel's fast uprobe path
	// applies; CallNotes says why each of the others names its fire call, where a
	// uprobe traps at every hit.
	NOPNotes  int      `json:"nop_notes"`
	CallNotes []string `json:"call_notes,omitempty"`
	Skipped   []string `json:"skipped,omitempty"`
	Streamed  bool     `json:"streamed,omitempty"` // written in order to a character device or an open descriptor, not renamed over a file
	// Warnings says what of the file could not be kept: mode bits, owner, other hard links.
	Warnings []string `json:"warnings,omitempty"`
}

// File seals the binary at in and writes the result to out, which may be in or a
// symbolic link to it. Only a regular file is ever replaced: through a temporary file
// in its own directory, renamed over it, so that nobody sees half a binary and an
// error leaves it as it was; symbolic links are followed to it and stay links. In
// place it keeps its owner, group and mode bits where it can, and the report's
// warnings say what it could not keep. A character device or an open descriptor
// (/dev/stdout) gets the bytes as a stream; a directory, a named pipe, a socket or a
// block device is refused. A binary that is already sealed is left as it is (and
// copied to out).
func File(in, out string) (*Report, error) {
	info, err := inputFile(in)
	if err != nil {
		return nil, err
	}
	dst, err := outfile.Resolve(out)
	if err != nil {
		return nil, err
	}
	if dst.Stdout {
		return nil, fmt.Errorf("-: use Write for standard output")
	}
	inPlace := !dst.Stream && dst.Info != nil && os.SameFile(info, dst.Info)
	r := &Report{Path: out, Streamed: dst.Stream}
	image, changed, err := sealImage(in, r, Options{})
	switch {
	case err != nil:
		return nil, err
	case !changed && inPlace:
		return r, nil
	}
	if r.Warnings, err = dst.WriteAs(image, nil, info, inPlace); err != nil {
		return nil, err
	}
	return r, nil
}

// Write seals the binary at in and writes the result to w (sdtctl seal -o -); a
// binary that is already sealed is copied as it is.
func Write(in string, w io.Writer) (*Report, error) { return WriteWith(in, w, Options{}) }

// Options changes how a binary is sealed.
type Options struct {
	// CallNotes puts every USDT note on its fire call, where a uprobe traps at every
	// hit, as sealing did before notes moved to the probe NOPs: the benchmark of a
	// tracer's hit compares the two.
	CallNotes bool
}

// WriteWith is Write with options.
func WriteWith(in string, w io.Writer, o Options) (*Report, error) {
	if _, err := inputFile(in); err != nil {
		return nil, err
	}
	r := &Report{Path: "-", Streamed: true}
	image, _, err := sealImage(in, r, o)
	if err != nil {
		return nil, err
	}
	_, err = w.Write(image)
	return r, err
}

// sealImage reads the binary at in and returns it sealed, or as it is if it is sealed
// already (changed false).
func sealImage(in string, r *Report, o Options) (image []byte, changed bool, err error) {
	image, err = os.ReadFile(in)
	if err != nil {
		return nil, false, err
	}
	sealed, err := seal(in, image, r, o)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", in, err)
	}
	if sealed == nil {
		return image, false, nil
	}
	return sealed, true, nil
}

// elfFile checks that image is a 64-bit little-endian Go executable for linux on
// amd64 or arm64, and returns it parsed with its architecture.
func elfFile(image []byte) (*elf.File, *arch.Offline, error) {
	f, err := offline.NewELF(image)
	if err != nil {
		return nil, nil, err
	}
	a := offline.Arch(f.Machine)
	switch {
	case len(f.Sections) <= 1:
		return nil, nil, errors.New("stripped of its section headers: nothing left to find the sites by")
	case f.Section(".gopclntab") == nil:
		return nil, nil, errors.New("not a Go binary (no .gopclntab)")
	case a == nil || f.Class != elf.ELFCLASS64 || f.Data != elf.ELFDATA2LSB:
		return nil, nil, fmt.Errorf("%v %v binary: gosdt seals x86-64 and AArch64 binaries", f.Machine, f.Class)
	case f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX:
		return nil, nil, fmt.Errorf("%v binary: gosdt seals linux binaries", f.OSABI)
	case f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN:
		return nil, nil, fmt.Errorf("%v: not an executable", f.Type)
	}
	return f, a, nil
}

// seal returns the sealed image, or nil if image is sealed already. A binary that
// was sealed but whose site table cannot be used is refused: its text holds sleds
// whose compiler's bytes only that table knew, so no correct table can be written
// for it again; its unsealed build can be sealed.
func seal(path string, image []byte, r *Report, o Options) ([]byte, error) {
	f, a, err := elfFile(image)
	if err != nil {
		return nil, err
	}
	r.Arch = a.Name
	switch _, sealed, err := offline.SealedTable(f); {
	case err != nil:
		return nil, fmt.Errorf("sealed, but %w: it cannot be sealed again (the compiler's bytes of its sites were in that table); seal its unsealed build", err)
	case sealed:
		r.Already = true
		return nil, nil
	}
	_, tab, err := offline.GoText(path, f)
	if err != nil {
		return nil, err
	}
	vars, _, err := offline.SealMark(f)
	if err != nil {
		return nil, err
	}

	t, err := offline.Discover(path)
	if err != nil {
		return nil, err
	}
	if len(t.Sites) == 0 {
		return nil, fmt.Errorf("%w (probe checks are not inlined with -gcflags=all=-N -l or -cover)", ErrNoSites)
	}
	out := append([]byte(nil), image...)
	w := writer{f: f, image: out}

	// The seal mark first: if it is not the linked value, this is not a binary we
	// know how to seal, and nothing else is touched.
	if !w.holds(vars, linkedMark()) || !w.holds(vars+sealfmt.SemaphoresOffset, make([]byte, sealfmt.Size-sealfmt.SemaphoresOffset)) {
		return nil, fmt.Errorf("%s does not hold its linked value: sealed by another tool, or a gosdt this sdtctl does not know", sealfmt.Symbol)
	}

	r.Sites = len(t.Sites)
	sites := slices.Clone(t.Sites) // the table's records: discovery's, or refused here
	for i, s := range sites {
		if !s.Sealable() {
			continue
		}
		ok := w.holds(uint64(s.Addr), s.Orig)
		for _, a := range s.Also {
			ok = ok && w.holds(uint64(a.Addr), a.Orig)
		}
		if !ok {
			// Cannot happen: discovery read the same file.
			sites[i].Refusal = sled.Refusal{Cause: sled.TextDiffers, Detail: "file bytes differ from what discovery read"}
			continue
		}
		w.put(uint64(s.Addr), s.Off)
		for _, a := range s.Also {
			w.put(uint64(a.Addr), a.New)
		}
		r.Sealed++
	}

	base := f.Section(".rodata")
	if base == nil {
		return nil, errors.New("no .rodata section to anchor .stapsdt.base in")
	}
	// The calls the notes name are read from the linker's bytes.
	linked := &writer{f: f, image: image}
	notes, probes := notesFor(path, a, linked, sites, tab, base.Addr, vars+sealfmt.SemaphoresOffset, f.Type == elf.ET_DYN, o, r)
	table := (&sealfmt.SiteTable{Arch: a.Name, Text: tab.Text, Sites: sled.Records(sites), Probes: probes}).Encode()
	var m [32]byte
	for i, v := range sealfmt.MarkFor(table) {
		binary.LittleEndian.PutUint64(m[8*i:], v)
	}
	w.put(vars, m[:])
	if w.err != nil {
		return nil, w.err
	}

	noteData, err := usdt.EncodeNotes(notes, binary.LittleEndian)
	if err != nil {
		return nil, err
	}
	return usdt.AddSections(out, []usdt.Section{
		// bcc (bpftrace's USDT reader) computes a semaphore's file offset from a
		// .probes section it must meet before the notes.
		{Name: ".probes", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC | elf.SHF_WRITE, Addr: vars + sealfmt.SemaphoresOffset, Size: sealfmt.Size - sealfmt.SemaphoresOffset, Align: 4},
		{Name: ".stapsdt.base", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Addr: base.Addr, Size: 1, Align: 1},
		{Name: ".note.stapsdt", Type: elf.SHT_NOTE, Data: noteData, Align: 4},
		{Name: sealfmt.SectionName, Type: elf.SHT_PROGBITS, Data: table, Align: 8},
	})
}

// notesFor names the fire calls of t's sites for USDT tracers and gives each probe name
// a semaphore slot. Sites whose probe name cannot be read from the binary get no note.
func notesFor(path string, a *arch.Offline, linked *writer, sites []sled.Site, tab *functab.Table, base, sems uint64, pie bool, o Options, r *Report) ([]usdt.Note, []sealfmt.Probe) {
	defs, err := offline.Definitions(path)
	if err != nil {
		r.Skipped = append(r.Skipped, "no USDT notes: "+err.Error())
		return nil, nil
	}
	byFlag := map[uint64]offline.Definition{}
	for _, d := range defs {
		byFlag[d.Flag] = d
	}
	slots := map[[2]string]int{}
	var notes []usdt.Note
	for _, s := range sites {
		if s.Kind != sled.Fire || !s.Sealable() {
			continue
		}
		d, ok := byFlag[uint64(s.Flag)]
		if !ok {
			r.Skipped = append(r.Skipped, fmt.Sprintf("site %#x: its probe's Define was not found in package initialisation; no note", s.Addr))
			continue
		}
		// The note's pc is the fire call, where the arguments are in registers.
		pc, target, err := a.CallBefore(linked, uint64(s.Return))
		if err != nil {
			r.Skipped = append(r.Skipped, fmt.Sprintf("site %#x (%s:%s): %v; no note", s.Addr, d.Provider, d.Name, err))
			continue
		}
		var fireSym string
		if i := tab.Find(target); i >= 0 && tab.Entry(i) == target {
			fireSym = string(tab.Name(i))
		}
		if !sled.IsFire(fireSym) {
			r.Skipped = append(r.Skipped, fmt.Sprintf("site %#x (%s:%s): the call before its return address is to %q, not a fire method; no note", s.Addr, d.Provider, d.Name, fireSym))
			continue
		}
		regs, why := argSlots(a, fireSym)
		if fireSym == fbtFire() {
			regs, why = fbtSlots(a, linked, tab, s, pc)
		}
		if why != "" {
			r.Skipped = append(r.Skipped, fmt.Sprintf("site %#x (%s:%s): the note names %d argument registers, not all: %s", s.Addr, d.Provider, d.Name, len(regs), why))
		}
		args := atCall(a, regs)
		if nop, nargs, why := atProbeNOP(a, linked, s, pc, regs, pie); why == "" && !o.CallNotes {
			pc, args = nop, nargs
			r.NOPNotes++
		} else if !o.CallNotes {
			r.CallNotes = append(r.CallNotes, fmt.Sprintf("site %#x (%s:%s): %s", s.Addr, d.Provider, d.Name, why))
		}
		key := [2]string{d.Provider, d.Name}
		slot, ok := slots[key]
		if !ok && len(slots) < sealfmt.SemaphoreSlots-1 {
			slot = len(slots) + 1
			slots[key] = slot
		} else if !ok {
			r.Skipped = append(r.Skipped, fmt.Sprintf("%s:%s: more than %d probe names: no semaphore, a tracer will not enable it", d.Provider, d.Name, sealfmt.SemaphoreSlots-1))
		}
		var sem uint64
		if slot > 0 {
			sem = sems + 4*uint64(slot)
		}
		notes = append(notes, usdt.Note{Provider: d.Provider, Name: d.Name, PC: pc, Base: base, Semaphore: sem, Args: args})
	}
	probes := make([]sealfmt.Probe, 0, len(slots))
	for k, slot := range slots {
		probes = append(probes, sealfmt.Probe{Provider: k[0], Name: k[1], Slot: slot})
	}
	sort.Slice(probes, func(i, j int) bool { return probes[i].Slot < probes[j].Slot })
	r.Notes, r.Probes = len(notes), len(probes)
	return notes, probes
}

// atProbeNOP returns the note of a fire site s whose fire call is at call, placed on the
// probe NOP of its enabled sled (arch.Offline.ProbeNOP), where the kernel's fast uprobe
// path applies, with its arguments where they are there; or why it stays at the call,
// where a uprobe traps at every hit. linked is the linker's bytes.
func atProbeNOP(a *arch.Offline, linked *writer, s sled.Site, call uint64, slots []argSlot, pie bool) (pc uint64, args []usdt.Arg, why string) {
	if a.ProbeNOP == nil {
		return 0, nil, "no probe NOP on " + a.Name
	}
	off := a.ProbeNOP(s.On, uint64(s.Addr))
	if off < 0 {
		return 0, nil, "its sled has no probe NOP (no room, or its fire block is not after it)"
	}
	want := make([]int, len(slots))
	for i, sl := range slots {
		want[i] = sl.Reg
	}
	locs, err := a.ArgsAt(linked, uint64(s.Addr)+uint64(s.Len), call, want)
	if err != nil {
		return 0, nil, err.Error()
	}
	if args, why = atNOP(slots, locs, pie); why != "" {
		return 0, nil, why
	}
	return uint64(s.Addr) + uint64(off), args, ""
}

// linkedMark is the bytes of the seal mark as linked.
func linkedMark() []byte {
	b := make([]byte, 32)
	binary.LittleEndian.PutUint64(b, sealfmt.Magic)
	return b
}
