package amd64

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
)

// agreeFlags checks flagEffect against the table flagsDead used with x86asm (the
// oracle): wherever flagEffect knows an instruction, the oracle knows it too, and
// flagEffect's reads are a superset of the oracle's, its writes a subset.
func agreeFlags(in *inst, x xinst) error {
	e, name, known := flagEffect(in)
	if !known {
		return nil
	}
	xr, xw, xknown := xflagEffect(x)
	if !xknown || e.reads&xr != xr || e.writes&^xw != 0 {
		return fmt.Errorf("flagEffect %s reads %s, writes %s; the oracle %v (known %v) reads %s, writes %s",
			name, flagNames(e.reads), flagNames(e.writes), x.Inst, xknown, flagNames(xr), flagNames(xw))
	}
	return nil
}

// TestFlagEffectAgainstOracle compares flagEffect with the oracle on every instruction
// of real binaries (agree checks that it is never less conservative) and counts where
// it is more: an instruction the oracle knows and flagEffect does not, or reads more or
// writes less. It fails if any of those is in a function the Go compiler emitted (a
// site sealed today could then stop being sealed).
func TestFlagEffectAgainstOracle(t *testing.T) {
	for _, b := range testbin.Binaries(t, &Arch) {
		var total, same, fails int
		more := map[string]int{}
		inGo := 0
		compiled := goCompiled(t, b)
		for _, fn := range b.Funcs {
			goCode := compiled[fn.Entry]
			for pc := fn.Entry; pc < fn.End; {
				code := b.Text.Read(pc, int(fn.End-pc))
				a, err := agree(code, pc)
				if err != nil {
					if fails++; fails <= 10 {
						t.Errorf("%s+%#x: %v", fn.Name, pc-fn.Entry, err)
					}
				}
				if a.xerr != nil && a.wrong == "" {
					break
				}
				pc += uint64(a.next())
				if a.wrong != "" {
					continue
				}
				total++
				xr, xw, xknown := xflagEffect(a.x)
				if !xknown {
					same++
					continue
				}
				e, name, known := flagEffect(&a.in)
				if known && e.reads == xr && e.writes == xw {
					same++
					continue
				}
				key := fmt.Sprintf("%v (%s)", a.x.Op, name)
				if !known {
					key += " unknown"
				}
				more[key]++
				if goCode {
					inGo++
					if inGo <= 10 {
						t.Errorf("%s+%#x: %v: flagEffect %s %v reads %s writes %s; oracle reads %s writes %s",
							fn.Name, pc-fn.Entry, a.x.Inst, name, known, flagNames(e.reads), flagNames(e.writes), flagNames(xr), flagNames(xw))
					}
				}
			}
		}
		n := 0
		for _, c := range more {
			n += c
		}
		t.Logf("%s: %d instructions, flagEffect as the oracle on %d, more conservative on %d (%d in Go-compiled functions): %s",
			b.Path, total, same, n, inGo, top(more, 20))
	}
}

// goCompiled returns the entries of the functions of b that the Go compiler emitted:
// their source is a .go file, not assembly (.s) or C.
func goCompiled(t *testing.T, b *testbin.Binary) map[uint64]bool {
	t.Helper()
	f, err := elf.Open(b.Path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pcln, err := f.Section(".gopclntab").Data()
	if err != nil {
		t.Fatal(err)
	}
	tab, err := gosym.NewTable(nil, gosym.NewLineTable(pcln, f.Section(".text").Addr))
	if err != nil {
		t.Fatal(err)
	}
	compiled := map[uint64]bool{}
	for _, fn := range tab.Funcs {
		if file, _, _ := tab.PCToLine(fn.Entry); strings.HasSuffix(file, ".go") {
			compiled[fn.Entry] = true
		}
	}
	return compiled
}
