package amd64

import (
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
		var total, same, inGo int
		more := map[string]int{}
		compiled := goCompiled(t, b)
		sweep(t, b, func(fn *gosym.Func, pc uint64, _ []byte, a *agreement) {
			if a.wrong != "" {
				return
			}
			total++
			xr, xw, xknown := xflagEffect(a.x)
			e, name, known := flagEffect(&a.in)
			if !xknown || known && e.reads == xr && e.writes == xw {
				same++
				return
			}
			key := fmt.Sprintf("%v (%s)", a.x.Op, name)
			if !known {
				key += " unknown"
			}
			more[key]++
			if compiled[fn.Entry] {
				if inGo++; inGo <= 10 {
					t.Errorf("%s+%#x: %v: flagEffect %s %v reads %s writes %s; oracle reads %s writes %s",
						fn.Name, pc-fn.Entry, a.x.Inst, name, known, flagNames(e.reads), flagNames(e.writes), flagNames(xr), flagNames(xw))
				}
			}
		})
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
	tab, err := gosym.NewTable(nil, b.Funcs[0].LineTable)
	if err != nil {
		t.Fatal(err)
	}
	compiled := map[uint64]bool{}
	for _, fn := range tab.Funcs {
		if file, _, _ := tab.PCToLine(fn.Entry); strings.HasSuffix(file, ".go") {
			compiled[fn.Entry] = true
		}
	}
	if len(compiled) < len(tab.Funcs)/2 {
		t.Fatalf("%s: only %d of %d functions from .go files", b.Path, len(compiled), len(tab.Funcs))
	}
	return compiled
}

// TestFlagRows parses flagRows: every encoding is well formed, names an opcode the
// decoder knows, and no two rows are for the same form.
func TestFlagRows(t *testing.T) {
	seen := map[flagRow]string{}
	for _, r := range flagTable().rows {
		if legacyMaps[r.m][r.op] == 0 {
			t.Errorf("%s: map %d opcode %#02x is not known to the decoder", r.name, r.m, r.op)
		}
		k := flagRow{m: r.m, op: r.op, pfx: r.pfx, reg: r.reg, form: r.form}
		if other, ok := seen[k]; ok {
			t.Errorf("map %d opcode %#02x (prefix %d, reg %d, form %q): %s and %s", r.m, r.op, r.pfx, r.reg, r.form, other, r.name)
		}
		seen[k] = r.name
	}
	if len(seen) < 200 {
		t.Errorf("only %d rows", len(seen))
	}
	for _, bad := range []string{"0F1=X", "0F1Fx=X", "F4:90=X", "90/8=X", "91-90=X", "0F90-91=X", "90"} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("parseFlagRow(%q) did not panic", bad)
				}
			}()
			parseFlagRow(nil, bad, neutral, true)
		}()
	}
}
