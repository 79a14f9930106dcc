package sled

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
)

// A sealed binary (sdtctl seal) differs from the linker's output in four places: its
// sites hold their disabled sled in the file, SectionName holds the site table, USDT
// notes name the fire calls, and the variable below was written in the file. It is
// initialised to a non-zero value so that the linker puts it in file-backed data,
// where a tool can write it and the kernel can count a tracer's attachment.

// sealed is found in a binary by its symbol, SealedSymbol, or, in a binary without a
// symbol table (go test links with -s), by SealMagic followed by zeros at an 8-byte
// boundary of its data: the value it is linked with.
//
// mark is {SealMagic, 0, 0, 0} as linked; sealing sets [1] to the site table's length
// and [2] to its CRC-32 (Castagnoli), so that the runtime knows to look for the table
// and can tell it is the one written with this file.
//
// semaphores are the USDT semaphores: the kernel adds 1 to a slot's low 16 bits for
// every tracer attached to the probe's notes (the note names the slot's address), and
// takes it back when the tracer detaches. Each slot is a uint32 so that it can be read
// atomically; slot 0 is never a probe's.
var sealed = struct {
	mark       [4]uint64
	semaphores [SemaphoreSlots]uint32
}{mark: [4]uint64{SealMagic}}

// SealedSymbol is the symbol of sealed; SemaphoresOffset is where in it the
// semaphores start, SealedSize its size.
const (
	SealedSymbol     = "github.com/gosdt/gosdt/sled.sealed"
	SemaphoresOffset = 32
	SealedSize       = SemaphoresOffset + 4*SemaphoreSlots
)

// SealMagic is sealed.mark[0] in every binary.
const SealMagic = 0x6b72616d6c616573 // "sealmark"

// SemaphoreSlots is how many USDT semaphores a binary has: each probe name with notes
// gets one of slots 1 and up.
const SemaphoreSlots = 1024

// Semaphore returns how many tracers are attached to the probe of slot; 0 for a slot
// out of range.
func Semaphore(slot int) uint16 {
	if slot <= 0 || slot >= SemaphoreSlots {
		return 0
	}
	return uint16(atomic.LoadUint32(&sealed.semaphores[slot]))
}

// MarkFor returns the words of the seal mark (sealed.mark) for an encoded table.
func MarkFor(table []byte) [4]uint64 {
	return [4]uint64{SealMagic, uint64(len(table)), uint64(crc32.Checksum(table, castagnoli())), 0}
}

// castagnoli is made when a site table is first checked: making it builds the
// runtime's tables for the CRC instruction, which every start would otherwise pay.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// sealedBinary reports whether this executable was sealed (sdtctl seal): its sites
// are then in a site table, and sealed in its text already.
func sealedBinary() bool { return sealed.mark[1] != 0 }

// exePath is this executable's file. /proc/self/exe names the mapped file itself,
// even if the path it was started from has been replaced or removed.
const exePath = "/proc/self/exe"

// exeName names this executable in messages: as it was started (reading the link
// /proc/self/exe would link os.Readlink into every program for one message).
func exeName() string {
	if len(os.Args) > 0 && os.Args[0] != "" {
		return os.Args[0]
	}
	return exePath
}

// readTable reads and checks this executable's site table. The error is a
// *TableError, naming the file, when the table is missing, damaged or foreign.
func readTable() (*SiteTable, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("sealed binaries are read on linux only")
	}
	fail := func(p TableProblem, detail string) error {
		return &TableError{File: exeName(), Problem: p, Detail: detail}
	}
	f, err := os.Open(exePath)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// The size by seeking, not Stat: a FileInfo in an interface keeps time's
	// formatting and zone loading (~45 KB) in every program that imports sdt.
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, err
	}
	b, err := readSection(f, size, SectionName)
	switch {
	case err != nil:
		// The sections sealing adds, and the section headers after them, are at the
		// end of the file: a file cut short loses them first.
		return nil, fail(TableTruncated, fmt.Sprintf("the file is truncated or its section headers damaged (%v)", err))
	case b == nil:
		return nil, fail(TableMissing, "the binary is sealed but has no "+SectionName+" section: stripped or rewritten after sealing")
	}
	st, err := CheckTable(b, sealed.mark)
	if err != nil {
		err.(*TableError).File = exeName()
		return nil, err
	}
	if st.Arch != runtime.GOARCH {
		return nil, fail(TableForeign, "the table is for "+st.Arch+", this program is "+runtime.GOARCH)
	}
	return st, nil
}

// loadSealed builds the table of a sealed executable from its site table. A table that
// cannot be used is said (Table.Warning), and the sites are found in the text instead
// (Rescan).
func loadSealed(src Source) *Table {
	st, err := readTable()
	if err == nil {
		// A PIE runs at an offset from its link-time addresses: runtime·text tells it.
		return FromTable(st, runtime.GOARCH, src, src.Base-st.Text)
	}
	if host == nil || len(src.Text) == 0 {
		return &Table{Reason: "sealed binary, but its site table cannot be used: " + err.Error() +
			"; sealed sites stay disabled, others keep their branch check"}
	}
	t := Rescan(host, src)
	t.Warning = RescanWarning(err, t)
	return t
}

// FromTable returns the sites of st, moved by bias, after checking that each site's
// text in src holds what the table says: its disabled sled (sealed in the file:
// Presealed) or the compiler's bytes (left for the runtime to seal). A site whose text
// is neither is refused with the reason, never patched. goarch is src's architecture.
func FromTable(st *SiteTable, goarch string, src Source, bias uint64) *Table {
	t := &Table{Sealed: true, Probes: st.Probes, TextBytes: len(src.Text)}
	if st.Arch != goarch {
		t.Reason = "site table is for " + st.Arch
		return t
	}
	b := uintptr(bias)
	for _, s := range st.Sites {
		s.Addr += b
		s.Flag += b
		if s.Return != 0 {
			s.Return += b
		}
		s.Also = slices.Clone(s.Also)
		for i := range s.Also {
			s.Also[i].Addr += b
		}
		s.syms = src.Syms
		switch {
		case !src.InData(uint64(s.Flag)):
			s.Refusal = refused(NotInData, fmt.Sprintf("site table names flag %#x, which is not in data or bss", s.Flag))
		case !s.Sealable():
		case (holds(src, s.Addr, s.Off) || uprobed(src, s.Addr, s.Off)) && alsoHold(src, s.Also, true):
			s.Presealed = true
		case holds(src, s.Addr, s.Orig) && alsoHold(src, s.Also, false):
		default:
			s.Refusal = refused(TextDiffers, "text holds neither the compiler's bytes nor the sled the site table records")
		}
		t.Sites = append(t.Sites, s)
	}
	return t
}

func holds(src Source, addr uintptr, want []byte) bool {
	return len(want) > 0 && bytes.Equal(src.Mem.Read(uint64(addr), len(want)), want)
}

// uprobed reports whether the text at addr is the sled sled with a tracer's uprobe in
// its probe NOP: a tracer attached to the binary's USDT notes before it started.
func uprobed(src Source, addr uintptr, sled []byte) bool {
	return host != nil && host.Uprobed != nil && host.Uprobed(sled, src.Mem.Read(uint64(addr), len(sled)))
}

func alsoHold(src Source, also []Rewrite, rewritten bool) bool {
	for _, a := range also {
		want := a.Orig
		if rewritten {
			want = a.New
		}
		if !holds(src, a.Addr, want) {
			return false
		}
	}
	return true
}
