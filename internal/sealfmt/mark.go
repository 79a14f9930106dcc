package sealfmt

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
)

// A sealed binary (sdtctl seal) differs from the linker's output in four places: its
// sites hold their disabled sled in the file, SectionName holds the site table, USDT
// notes name the fire calls, and the variable below was written in the file. It is
// initialised to a non-zero value so that the linker puts it in file-backed data,
// where a tool can write it and the kernel can count a tracer's attachment.

// sealed is found in a binary by its symbol, Symbol, or, in a binary without a
// symbol table (go test links with -s), by Magic followed by zeros at an 8-byte
// boundary of its data: the value it is linked with.
//
// mark is {Magic, 0, 0, 0} as linked; sealing sets [1] to the site table's length
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
}{mark: [4]uint64{Magic}}

// Symbol is the symbol of sealed; SemaphoresOffset is where in it the semaphores
// start, Size its size. OldSymbol is its symbol in a binary linked with a gosdt from
// before this package, when sealed was package sled's: the same variable, laid out the
// same, which sdtctl still reads and seals.
const (
	Symbol           = "github.com/gosdt/gosdt/internal/sealfmt.sealed"
	OldSymbol        = "github.com/gosdt/gosdt/sled.sealed"
	SemaphoresOffset = 32
	Size             = SemaphoresOffset + 4*SemaphoreSlots
)

// Magic is sealed.mark[0] in every binary.
const Magic = 0x6b72616d6c616573 // "sealmark"

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
	return [4]uint64{Magic, uint64(len(table)), uint64(crc32c(table)), 0}
}

// crc32c is the CRC-32 (Castagnoli) of b, as hash/crc32 computes it. Not hash/crc32:
// its init builds the IEEE table (tens of thousands of instructions at every start of
// every traced program) and it links its own code and tables; a site table is a few
// kilobytes, checked once.
func crc32c(b []byte) uint32 {
	t := castagnoli()
	crc := ^uint32(0)
	for _, c := range b {
		crc = t[byte(crc)^c] ^ crc>>8
	}
	return ^crc
}

// castagnoli is the byte-at-a-time table of the reflected Castagnoli polynomial, made
// when a site table is first checked.
var castagnoli = sync.OnceValue(func() *[256]uint32 {
	const poly = 0x82f63b78 // crc32.Castagnoli
	var t [256]uint32
	for i := range t {
		crc := uint32(i)
		for range 8 {
			if crc&1 != 0 {
				crc = crc>>1 ^ poly
			} else {
				crc >>= 1
			}
		}
		t[i] = crc
	}
	return &t
})

// Sealed reports whether this executable was sealed (sdtctl seal): its sites are then
// in a site table (Self), and sealed in its text already.
func Sealed() bool { return sealed.mark[1] != 0 }

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

// Self reads and checks this executable's site table. The error is a *TableError,
// naming the file, when the table is missing, damaged or foreign.
func Self() (*SiteTable, error) {
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
