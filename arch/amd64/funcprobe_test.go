package amd64

import (
	"errors"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testbin"

	"golang.org/x/arch/x86/x86asm"
)

// TestFuncProbeShapes reads the prologues, morestack blocks and epilogues of the
// functions of a program built for amd64, and checks what each one's shape says.
func TestFuncProbeShapes(t *testing.T) {
	b := testbin.Read(t, testbin.Build(t, "", "amd64", "github.com/gosdt/gosdt/arch/internal/funcprobetest"), Arch.Machine)
	name := func(pc uint64) string {
		for _, f := range b.Funcs {
			if f.Entry == pc {
				return f.Name
			}
		}
		return ""
	}
	type want struct {
		entryErr, retErr string
		check            bool // a large frame
		context          bool
		spills           []arch.Spill
		rets             int
	}
	i := func(reg uint8, size uint8, off int32) arch.Spill { return arch.Spill{Reg: reg, Size: size, Off: off} }
	cases := map[string]want{
		"main.leaf":       {entryErr: "no stack check at entry", retErr: "frameless"},
		"main.small":      {spills: []arch.Spill{i(0, 8, 0), i(1, 8, 8), i(2, 8, 16), i(3, 8, 24)}, rets: 1},
		"main.large":      {check: true, spills: []arch.Spill{i(0, 8, 0), i(1, 1, 8), i(arch.FloatReg, 8, 16)}, rets: 2},
		"main.narrow":     {check: true, spills: []arch.Spill{i(0, 1, 0), i(1, 2, 2), i(2, 4, 4), i(3, 1, 8), i(arch.FloatReg, 4, 12)}, rets: 1},
		"main.main.func1": {context: true, rets: 1},
		"main.huge":       {entryErr: "a huge frame's stack check", rets: 1},
	}
	seen := 0
	for _, f := range b.Funcs {
		c, ok := cases[f.Name]
		if !ok {
			continue
		}
		seen++
		w, err := Arch.Walk(b.Text, f.Entry, f.End)
		if err != nil {
			t.Fatalf("%s: %v", f.Name, err)
		}
		e, err := funcEntry(b.Text, w, name)
		switch {
		case c.entryErr != "":
			if err == nil || !strings.Contains(err.Error(), c.entryErr) {
				t.Errorf("%s: entry: %v, want %q", f.Name, err, c.entryErr)
			}
		case err != nil:
			t.Errorf("%s: entry: %v", f.Name, err)
		default:
			if (e.Check != 0) != c.check || e.Context != c.context || e.Resume-e.Addr < 5 || len(e.Orig) != int(e.Resume-e.Addr) {
				t.Errorf("%s: entry %+v", f.Name, e)
			}
			if c.spills != nil && !arch.SameSpills(e.Spills, c.spills) {
				t.Errorf("%s: spills %v, want %v", f.Name, e.Spills, c.spills)
			}
			if call := CallTo(e.Addr, e.Addr+0x1000, len(e.Orig)); len(call) != len(e.Orig) {
				t.Errorf("%s: CallTo: % x", f.Name, call)
			}
		}
		rets, err := funcReturns(b.Text, w)
		switch {
		case c.retErr != "":
			if err == nil || !strings.Contains(err.Error(), c.retErr) {
				t.Errorf("%s: returns: %v, want %q", f.Name, err, c.retErr)
			}
		case err != nil:
			t.Errorf("%s: returns: %v", f.Name, err)
		case len(rets) != c.rets:
			t.Errorf("%s: %d returns, want %d: %+v", f.Name, len(rets), c.rets, rets)
		}
		for _, r := range rets {
			if r.Frame <= 0 || r.Ret <= r.Addr || r.Pad != (len(r.Orig) == 5) {
				t.Errorf("%s: return %+v", f.Name, r)
			}
		}
	}
	if seen != len(cases) {
		t.Errorf("found %d of the %d functions", seen, len(cases))
	}
}

// TestFuncProbeCoverage reads every function of real binaries and counts what takes
// an entry and a return probe, and why the others do not: no function may fail for a
// reason the recognizer does not name, and most must take both.
func TestFuncProbeCoverage(t *testing.T) {
	for _, b := range testbin.Binaries(t, &Arch) {
		names := map[uint64]string{}
		for _, f := range b.Funcs {
			names[f.Entry] = f.Name
		}
		name := func(pc uint64) string { return names[pc] }
		total, entries, both := 0, 0, 0
		why := map[string]int{}
		for _, f := range b.Funcs {
			if strings.HasPrefix(f.Name, "runtime.") || strings.HasPrefix(f.Name, "internal/") || strings.HasPrefix(f.Name, "type:") || strings.HasPrefix(f.Name, "go:") {
				continue
			}
			total++
			w, err := Arch.Walk(b.Text, f.Entry, f.End)
			if err != nil {
				why["walk: "+reason(err)]++
				continue
			}
			if _, err := funcEntry(b.Text, w, name); err != nil {
				why["entry: "+reason(err)]++
				continue
			}
			entries++
			if _, err := funcReturns(b.Text, w); err != nil {
				why["return: "+reason(err)]++
				continue
			}
			both++
		}
		t.Logf("%s: %d functions outside the runtime: %d take an entry probe (%.1f%%), %d an entry and a return probe (%.1f%%)",
			b.Path, total, entries, 100*float64(entries)/float64(total), both, 100*float64(both)/float64(total))
		for r, n := range why {
			t.Logf("  %6d  %s", n, r)
		}
		if float64(entries) < 0.6*float64(total) {
			t.Errorf("%s: only %d of %d functions take an entry probe", b.Path, entries, total)
		}
	}
}

// reason is a shape error's reason without its addresses and bytes, to count reasons.
func reason(err error) string {
	s := err.Error()
	var se *arch.ShapeError
	if errors.As(err, &se) {
		s = se.Reason
	}
	if i := strings.IndexAny(s, "(%0123456789"); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// TestEpilogueOracle holds epilogue's verdict on every RET of real binaries against
// x86asm's reading of the instructions before it: a return takes a probe exactly when
// it is ADD RSP, imm (imm > 0; SUB RSP, -imm counts as ADD), POP RBP, at most three
// NOPs, RET, with no branch into any of it but the first instruction; the call's
// address, the frame and the RET must agree.
func TestEpilogueOracle(t *testing.T) {
	bins := testbin.Binaries(t, &Arch)
	if testing.Short() && len(bins) > 1 {
		bins = bins[1:2] // this test binary: x86asm decodes every instruction
	}
	for _, b := range bins {
		rets, taken, nops := 0, 0, 0
		for _, f := range b.Funcs {
			insts, err := xdecodeFunc(b.Text, f.Entry, f.End)
			if err != nil {
				continue // TestWalkOracle's business
			}
			w, err := Arch.Walk(b.Text, f.Entry, f.End)
			if err != nil {
				continue
			}
			targets := map[uint64]bool{}
			for _, t := range targetsOf(insts) {
				targets[t] = true
			}
			for k, in := range insts {
				if in.Op != x86asm.RET {
					continue
				}
				rets++
				// The oracle.
				ok, addr, frame, j := true, uint64(0), int64(0), k-1
				for ; j >= 0 && insts[j].Op == x86asm.NOP && k-j <= 3; j-- {
				}
				if j < 1 || insts[j].Op != x86asm.POP || insts[j].Inst.Args[0] != x86asm.RBP {
					ok = false
				} else {
					a := insts[j-1]
					imm, isImm := a.Inst.Args[1].(x86asm.Imm)
					switch {
					case a.Inst.Args[0] != x86asm.RSP || !isImm:
						ok = false
					case a.Op == x86asm.ADD:
						frame = int64(imm)
					case a.Op == x86asm.SUB:
						frame = -int64(imm)
					default:
						ok = false
					}
					addr = a.PC
					if frame <= 0 {
						ok = false
					}
					for pc := range targets {
						if pc > addr && pc <= in.PC {
							ok = false
						}
					}
				}
				r, err := epilogue(b.Text, w, in.PC)
				if (err == nil) != ok {
					t.Errorf("%s: RET at %#x: epilogue says %v, the oracle %v (%v)", f.Name, in.PC, err, ok, insts[max(0, k-4):k+1])
					continue
				}
				if !ok {
					continue
				}
				taken++
				if k-j > 1 {
					nops++
				}
				if r.Addr != addr || r.Frame != frame || r.Ret != in.PC || r.Pad != (r.Ret-r.Addr < 8 && len(r.Orig) == 5) {
					t.Errorf("%s: RET at %#x: epilogue %+v, the oracle: call at %#x, frame %d", f.Name, in.PC, r, addr, frame)
				}
			}
		}
		t.Logf("%s: %d returns, %d take a probe, %d of them with NOPs before the RET", b.Path, rets, taken, nops)
		if taken == 0 {
			t.Errorf("%s: no return takes a probe", b.Path)
		}
	}
}
