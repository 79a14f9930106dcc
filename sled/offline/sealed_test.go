package offline_test

import (
	"bytes"
	"debug/elf"
	"errors"
	"os"
	"testing"

	"github.com/gosdt/gosdt/internal/sealfmt"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/sled/offline"
)

// TestSealMarkSymbol: the seal mark is found by its symbol, sealfmt.Symbol, and in a
// binary linked with a gosdt from before package sealfmt by the symbol it had there,
// sealfmt.OldSymbol (the same variable, laid out the same); a binary with a symbol
// table that names neither is not a gosdt program. The older binary is made from a
// new one by renaming the symbol in its string table.
func TestSealMarkSymbol(t *testing.T) {
	image, err := os.ReadFile(testbin.Shared(t, "", "amd64", "github.com/gosdt/gosdt/sdt/testdata/hello/probe"))
	if err != nil {
		t.Fatal(err)
	}
	f, err := offline.NewELF(image)
	if err != nil {
		t.Fatal(err)
	}
	addr, mark, err := offline.SealMark(f)
	if err != nil || mark != [4]uint64{sealfmt.Magic} {
		t.Fatalf("the linked binary: mark %x at %#x, %v", mark, addr, err)
	}
	renamed := func(name string) *elf.File {
		t.Helper()
		b := bytes.Clone(image)
		strtab := f.Section(".strtab")
		if strtab == nil {
			t.Fatal("no .strtab")
		}
		tab := b[strtab.Offset : strtab.Offset+strtab.Size]
		i := bytes.Index(tab, []byte("\x00"+sealfmt.Symbol+"\x00"))
		if i < 0 {
			t.Fatalf("no %s in .strtab", sealfmt.Symbol)
		}
		// The new name is shorter; the NULs after it are the old name's tail.
		copy(tab[i+1:], make([]byte, len(sealfmt.Symbol)))
		copy(tab[i+1:], name)
		rf, err := offline.NewELF(b)
		if err != nil {
			t.Fatal(err)
		}
		return rf
	}
	if got, _, err := offline.SealMark(renamed(sealfmt.OldSymbol)); err != nil || got != addr {
		t.Errorf("named %s: at %#x, %v; want %#x", sealfmt.OldSymbol, got, err, addr)
	}
	if _, _, err := offline.SealMark(renamed("main.other")); !errors.Is(err, offline.ErrNoGosdt) {
		t.Errorf("named neither: %v, want ErrNoGosdt", err)
	}
}
