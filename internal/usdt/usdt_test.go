package usdt

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testutil"
)

func TestNotesRoundTrip(t *testing.T) {
	in := []Note{
		{Provider: "proc", Name: "exit", PC: 0x401000, Base: 0x400000, Semaphore: 0x5a0000,
			Args: []Arg{{-8, "%rcx"}, {8, "%rdi"}}},
		{Provider: "p", Name: "noargs", PC: 0x401234, Base: 0x400000},
	}
	b, err := EncodeNotes(in, binary.LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	if len(b)%4 != 0 {
		t.Errorf("section length %d not a multiple of 4", len(b))
	}
	out, err := DecodeNotes(b, binary.LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip:\n got %+v\nwant %+v", out, in)
	}
	if _, err := EncodeNotes([]Note{{Provider: "p", Name: "n", Args: []Arg{{3, "%rax"}}}}, binary.LittleEndian); err == nil {
		t.Error("a 3-byte argument was accepted")
	}
	for i := range len(b) {
		if _, err := DecodeNotes(b[:i], binary.LittleEndian); err == nil && i%4 != 0 {
			t.Errorf("truncated notes (%d of %d bytes) decoded without error", i, len(b))
		}
	}
}

// buildHello builds testdata/hello and returns its path and the address of main.hit.
func buildHello(t *testing.T) (string, uint64) {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	bin := filepath.Join(t.TempDir(), "hello")
	if out, err := exec.Command(gobin, "build", "-o", bin, "./testdata/hello").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Skip("not an ELF platform:", err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 {
		t.Skipf("%v: gosdt seals 64-bit binaries only", f.Class)
	}
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if s.Name == "main.hit" {
			return bin, s.Value
		}
	}
	t.Fatal("main.hit not in the symbol table")
	return "", 0
}

func TestAddSectionsTools(t *testing.T) {
	bin, hit := buildHello(t)
	image, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := elf.NewFile(bytes.NewReader(image))
	base := f.Section(".rodata").Addr
	notes, err := EncodeNotes([]Note{{Provider: "hello", Name: "hit", PC: hit, Base: base, Args: []Arg{{-8, "%rax"}}}}, binary.LittleEndian)
	if err != nil {
		t.Fatal(err)
	}
	out, err := AddSections(image, []Section{
		{Name: ".note.stapsdt", Type: elf.SHT_NOTE, Data: notes, Align: 4},
		{Name: ".stapsdt.base", Type: elf.SHT_PROGBITS, Flags: elf.SHF_ALLOC, Addr: base, Size: 1, Align: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	sealed := bin + ".sdt"
	if err := os.WriteFile(sealed, out, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := testutil.Output(sealed, nil); err != nil || string(got) != "hello 42\n" {
		t.Fatalf("the rewritten program: %v %q", err, got)
	}
	if _, err := AddSections(out, []Section{{Name: ".note.stapsdt", Type: elf.SHT_NOTE, Data: notes}}); err == nil {
		t.Error("adding .note.stapsdt twice was accepted")
	}
	g, err := elf.NewFile(bytes.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	data, err := g.Section(".note.stapsdt").Data()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecodeNotes(data, binary.LittleEndian); err != nil || len(back) != 1 || back[0].PC != hit {
		t.Errorf("notes read back: %+v, %v", back, err)
	}

	t.Run("readelf", func(t *testing.T) {
		got, err := exec.Command(testutil.NeedCommand(t, "readelf"), "-n", sealed).CombinedOutput()
		if err != nil || !strings.Contains(string(got), "Provider: hello") || !strings.Contains(string(got), "Name: hit") {
			t.Errorf("readelf -n: %v\n%s", err, got)
		}
	})
	t.Run("gdb", func(t *testing.T) {
		got, err := exec.Command(testutil.NeedCommand(t, "gdb"), "-batch", "-ex", "info probes", sealed).CombinedOutput()
		if err != nil || !strings.Contains(string(got), "stap hello    hit") {
			t.Errorf("gdb info probes: %v\n%s", err, got)
		}
	})
}
