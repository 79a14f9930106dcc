package amd64

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testbin"
	"golang.org/x/arch/x86/x86asm"
)

// agree checks length against x86asm on the instruction at the start of b (at pc), and
// returns what x86asm made of it. Wherever Length answers, it must agree exactly: the
// length, the kind of control transfer and a direct branch's target.
func agree(b []byte, pc uint64) (in inst, known bool, err error) {
	n, flow, rel, ok := length(b)
	in, xerr := decodeBytes(b[:min(len(b), maxInstLen)], pc)
	if !ok {
		return in, false, xerr
	}
	if xerr != nil {
		return in, true, fmt.Errorf("% x: length says %d bytes (%v), x86asm cannot decode it: %v", b[:min(len(b), n)], n, flow, xerr)
	}
	var target uint64
	if flow == flowJcc || flow == flowJmp || flow == flowCall {
		target = pc + uint64(n) + uint64(int64(rel))
	}
	if n != in.Len || flow != flowOf(in) || target != in.Target {
		return in, true, fmt.Errorf("% x: length says %d bytes, flow %v, target %#x; x86asm %v: %d bytes, flow %v, target %#x",
			b[:max(n, in.Len)], n, flow, target, in.Inst, in.Len, flowOf(in), in.Target)
	}
	return in, true, agreePeek(b, pc, in)
}

// agreePeek checks peek's reading of the instruction at the start of b against
// x86asm's: the same extent, flow and target; a NOP, a JE, a JNE where x86asm says
// so; a move where x86asm says MOV or LEA, which leave the flags alone (flagEffect);
// and a LEA's RIP-relative address.
func agreePeek(b []byte, pc uint64, in inst) error {
	p, ok := peek(arch.Bytes{Base: pc, Code: b}, pc)
	if !ok || p.n != in.Len || p.flow != flowOf(in) || p.target != in.Target {
		return fmt.Errorf("% x: peek %+v, %v; x86asm %v", b[:in.Len], p, ok, in.Inst)
	}
	reads, writes, known := flagEffect(in)
	neutral := known && reads == 0 && writes == 0
	var bad bool
	switch p.kind {
	case peekNOP:
		bad = in.Op != x86asm.NOP || !neutral
	case peekJE:
		bad = in.Op != x86asm.JE
	case peekJNE:
		bad = in.Op != x86asm.JNE
	case peekMove:
		bad = in.Op != x86asm.MOV && in.Op != x86asm.LEA || !neutral
	case peekLeaRIP:
		bad = in.Op != x86asm.LEA || in.Mem != p.lea || p.lea == 0 || !neutral
	case peekOther:
		bad = in.Op == x86asm.JE || in.Op == x86asm.JNE || in.Op == x86asm.LEA && in.Mem != 0
	}
	if bad {
		return fmt.Errorf("% x: peek says %d (lea %#x); x86asm %v (mem %#x), flags %d/%d/%v", b[:in.Len], p.kind, p.lea, in.Inst, in.Mem, reads, writes, known)
	}
	return nil
}

// TestLengthAgreesWithX86asm walks every function of real amd64 binaries (this test
// binary, the go command and the compiler; gofmt built for amd64 on another host)
// linearly from its entry to its end with x86asm, and checks length on every
// instruction. It logs how many instructions length knew and which opcodes it left to
// x86asm; it fails on any disagreement, and on any function whose sweep stops early
// (x86asm cannot decode a byte), so that no code goes unchecked without saying so.
func TestLengthAgreesWithX86asm(t *testing.T) {
	for _, b := range testbin.Binaries(t, &Arch) {
		var total, known, stopped, fails int
		unknown := map[string]int{}
		for _, fn := range b.Funcs {
			for pc := fn.Entry; pc < fn.End; {
				code := b.Text.Read(pc, int(fn.End-pc))
				in, ok, err := agree(code, pc)
				if err != nil && ok {
					if fails++; fails <= 20 {
						t.Errorf("%s+%#x: %v", fn.Name, pc-fn.Entry, err)
					}
				}
				if err != nil && !ok {
					// x86asm cannot decode it either: the rest of the function is
					// not checked. Count it; a Go function should never do this.
					stopped++
					t.Logf("%s+%#x: x86asm: %v (sweep of the function stops)", fn.Name, pc-fn.Entry, err)
					break
				}
				total++
				if ok {
					known++
				} else {
					unknown[fmt.Sprintf("%v % x", in.Op, code[:min(in.Len, 3)])]++
				}
				pc += uint64(in.Len)
			}
		}
		if total == 0 {
			t.Fatalf("%s: no instructions checked", b.Path)
		}
		t.Logf("%s: %d functions, %d instructions checked, %.2f%% known to length (%d left to x86asm), %d sweeps stopped at undecodable bytes; most frequent left to x86asm: %s",
			b.Path, len(b.Funcs), total, 100*float64(known)/float64(total), total-known, stopped, top(unknown, 12))
		if stopped > len(b.Funcs)/100 {
			t.Errorf("%s: %d of %d functions could not be swept to their end", b.Path, stopped, len(b.Funcs))
		}
	}
}

// top lists the n most frequent keys of counts, with their counts.
func top(counts map[string]int, n int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return counts[keys[i]] > counts[keys[j]] })
	var s []string
	for _, k := range keys[:min(len(keys), n)] {
		s = append(s, fmt.Sprintf("%s (%d)", k, counts[k]))
	}
	return strings.Join(s, ", ")
}

// FuzzLength checks length against x86asm on arbitrary bytes: wherever Length
// answers, x86asm decodes the same length, control transfer and target.
func FuzzLength(f *testing.F) {
	for _, s := range [][]byte{
		{0x80, 0x3D, 1, 2, 3, 4, 0}, {0x74, 0x10}, {0x0F, 0x84, 1, 0, 0, 0}, {0xE8, 0, 0, 0, 0},
		{0x48, 0x8D, 0x05, 1, 2, 3, 4}, {0x66, 0x0F, 0x1F, 0x44, 0, 0}, {0xF3, 0x0F, 0x10, 0x44, 0x24, 8},
		{0x48, 0xB8, 1, 2, 3, 4, 5, 6, 7, 8}, {0x41, 0xFF, 0xD4}, {0xC3}, {0xCC}, {0x66, 0x81, 0xF9, 1, 2},
		{0x48, 0x69, 0xC0, 1, 2, 3, 4}, {0xF3, 0x48, 0xAB}, {0x0F, 0xBA, 0xE0, 3}, {0x48, 0xC7, 0x44, 0x24, 8, 1, 2, 3, 4},
		{0x42, 0x8B, 0x04, 0x25, 1, 2, 3, 4}, {0xF2, 0x0F, 0x2C, 0xC0}, {0x66, 0x0F, 0xD6, 0x04, 0x24},
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, known, err := agree(b, 0x400000); known && err != nil {
			t.Fatal(err)
		}
	})
}

// TestLengthExhaustive checks length against x86asm on every opcode of the one- and
// two-byte maps, under every prefix combination it accepts, with a spread of ModRM
// bytes and operand bytes: the cases a fuzzer would take long to reach.
func TestLengthExhaustive(t *testing.T) {
	prefixes := [][]byte{nil, {0x66}, {0xF3}, {0xF2}, {0x66, 0x66}, {0x48}, {0x41}, {0x4C}, {0x66, 0x48}, {0xF3, 0x48}, {0xF2, 0x41}, {0x66, 0x41}}
	modrms := []byte{0x00, 0x04, 0x05, 0x0C, 0x15, 0x24, 0x3D, 0x44, 0x4C, 0x80, 0x84, 0xBC, 0xC0, 0xC8, 0xD0, 0xD8, 0xE0, 0xE8, 0xF0, 0xF8, 0xFF}
	sibs := []byte{0x00, 0x24, 0x25, 0x65, 0xE5}
	var checked, known, fails int
	for _, p := range prefixes {
		for _, esc := range [][]byte{nil, {0x0F}} {
			for op := 0; op < 256; op++ {
				for _, m := range modrms {
					for _, s := range sibs {
						b := append(append(append([]byte{}, p...), esc...), byte(op), m, s, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88, 0x99, 0xAA, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF)
						_, ok, err := agree(b, 0x400000)
						checked++
						if ok {
							known++
						}
						if err != nil && ok {
							if fails++; fails <= 100000 {
								t.Error(err)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d encodings checked, %d known to length", checked, known)
}

// TestWalkMatchesDecodeFunc walks every function of real binaries with walk and with
// decodeFunc (x86asm throughout), from its entry to its end in the function table, and
// requires the same instruction starts, end and branch targets: the walk that
// discovery uses proves exactly what the full decode proves.
func TestWalkMatchesDecodeFunc(t *testing.T) {
	for _, b := range testbin.Binaries(t, &Arch)[:1] {
		var funcs, insts, slow, errs int
		for _, fn := range b.Funcs {
			want, werr := decodeFunc(b.Text, fn.Entry, fn.End)
			got, gerr := walk(b.Text, fn.Entry, fn.End)
			if (werr != nil) != (gerr != nil) {
				t.Errorf("%s: decodeFunc error %v, walk error %v", fn.Name, werr, gerr)
				continue
			}
			if werr != nil {
				errs++
				continue
			}
			funcs++
			insts += len(want)
			slow += got.Slow
			if got.Insts != len(want) || got.End != want[len(want)-1].End() {
				t.Errorf("%s: walk %d instructions to %#x, decodeFunc %d to %#x", fn.Name, got.Insts, got.End, len(want), want[len(want)-1].End())
				continue
			}
			starts := 0
			for pc := got.Entry; pc < got.End; pc++ {
				if got.IsStart(pc) {
					starts++
				}
			}
			if starts != len(want) {
				t.Errorf("%s: %d instruction starts, decodeFunc %d", fn.Name, starts, len(want))
			}
			for j, in := range want {
				if !got.IsStart(in.PC) {
					t.Errorf("%s: instruction %d at %#x is not a start of the walk", fn.Name, j, in.PC)
					break
				}
			}
			if targets := targetsOf(want); !slices.Equal(got.Targets, targets) {
				t.Errorf("%s: branch targets %#x, decodeFunc's %#x", fn.Name, got.Targets, targets)
			}
		}
		t.Logf("%s: %d functions agree (%d instructions, %d left to x86asm), %d undecodable by both", b.Path, funcs, insts, slow, errs)
	}
}

// TestCandidatesIn compares the candidate search with a byte-by-byte one on random
// code with planted checks, whole and split in two at every offset, and on the text of
// a real binary, whole and in parts.
func TestCandidatesIn(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	planted := make([]byte, 300)
	for i := range planted {
		planted[i] = []byte{0x80, 0x3D, 0x00, 0x11}[rnd.IntN(4)]
	}
	copy(planted[len(planted)-7:], []byte{0x80, 0x3D, 1, 2, 3, 4, 0})
	binText := testbin.Binaries(t, &Arch)[0].Text.Code
	for _, text := range [][]byte{planted, binText} {
		var want []int
		for i := 0; i+7 <= len(text); i++ {
			if text[i] == 0x80 && text[i+1] == 0x3D && text[i+6] == 0 {
				want = append(want, i)
			}
		}
		if len(want) < 5 {
			t.Fatalf("only %d candidates in %d bytes", len(want), len(text))
		}
		if got := candidatesIn(text, 0, len(text)); !slices.Equal(got, want) {
			t.Fatalf("%d candidates, byte by byte %d", len(got), len(want))
		}
		cuts := []int{2, 3, 7, 64}
		if len(text) == len(planted) {
			cuts = nil
			for cut := 0; cut <= len(text); cut++ {
				got := append(candidatesIn(text, 0, cut), candidatesIn(text, cut, len(text))...)
				if !slices.Equal(got, want) {
					t.Fatalf("split at %d: %v, want %v", cut, got, want)
				}
			}
		}
		for _, parts := range cuts {
			var got []int
			for p := range parts {
				got = append(got, candidatesIn(text, p*len(text)/parts, (p+1)*len(text)/parts)...)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("in %d parts: %d, byte by byte %d", parts, len(got), len(want))
			}
		}
		t.Logf("%d candidates in %d bytes", len(want), len(text))
	}
}
