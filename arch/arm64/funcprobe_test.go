package arm64

import (
	"encoding/binary"
	"errors"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testbin"

	"golang.org/x/arch/arm64/arm64asm"
)

// TestFuncProbeShapes reads the prologues, morestack blocks and epilogues of the
// functions of a program built for amd64, and checks what each one's shape says.
func TestFuncProbeShapes(t *testing.T) {
	b := testbin.Read(t, testbin.Build(t, "", "arm64", "github.com/gosdt/gosdt/arch/internal/funcprobetest"), Arch.Machine)
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
		context          bool
		spills           []arch.Spill
		rets             int
	}
	i := func(reg uint8, size uint8, off int32) arch.Spill { return arch.Spill{Reg: reg, Size: size, Off: off} }
	cases := map[string]want{
		"main.leaf":       {entryErr: "no stack check at entry", retErr: "frameless"},
		"main.small":      {spills: []arch.Spill{i(0, 8, 0), i(1, 8, 8), i(2, 8, 16), i(3, 8, 24)}, rets: 1},
		"main.large":      {spills: []arch.Spill{i(0, 8, 0), i(1, 1, 8), i(arch.FloatReg, 8, 16)}, rets: 2},
		"main.narrow":     {spills: []arch.Spill{i(0, 1, 0), i(1, 2, 2), i(2, 4, 4), i(3, 1, 8), i(arch.FloatReg, 4, 12)}, rets: 1},
		"main.floats":     {spills: []arch.Spill{i(arch.FloatReg, 8, 0), i(arch.FloatReg+1, 8, 8), i(0, 8, 16)}, rets: 2},
		"main.pairs":      {spills: []arch.Spill{i(0, 8, 0), i(1, 4, 8), i(2, 4, 12), i(arch.FloatReg, 4, 16), i(arch.FloatReg+1, 4, 20)}, rets: 1},
		"main.bigleaf":    {entryErr: "a leaf function with a frame", retErr: "frame's release"},
		"main.main.func1": {context: true, rets: 1},
		"main.huge":       {spills: []arch.Spill{i(0, 8, 0)}, rets: 1}, // MOVD $N, R27 in prologue and epilogue
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
			if e.Frame <= 0 || e.Context != c.context || e.Resume != e.Addr+4 || len(e.Orig) != 4 {
				t.Errorf("%s: entry %+v", f.Name, e)
			}
			if c.spills != nil && !arch.SameSpills(e.Spills, c.spills) {
				t.Errorf("%s: spills %v, want %v", f.Name, e.Spills, c.spills)
			}
			if call := CallTo(e.Addr, e.Addr+0x1000); len(call) != len(e.Orig) {
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
			span := uint64(8) // the replaced instruction and the one before RET
			if f.Name == "main.huge" {
				span = 12 // MOVD $N, R27; ADD R27, RSP, RSP
			}
			if r.Frame <= 0 || r.Ret != r.Addr+span || r.Pad || len(r.Orig) != 4 || r.Restores == "" || c.entryErr == "" && r.Frame != e.Frame {
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

// TestEpilogueOracle holds epilogue's verdict on every RET of a real binary against
// arm64asm's reading (GNU syntax) of the instructions before it: a return takes a
// probe exactly when it is LDUR x29, [sp,#-8]; LDR x30, [sp],#N or LDP x29, x30,
// [sp,#-8]; ADD sp, sp, #N or LDP x29, x30, [sp,#-8]; MOV x27, #N; ADD sp, sp, x27,
// then RET, with no branch into it but on its first instruction; the frame and the
// call's address must agree.
func TestEpilogueOracle(t *testing.T) {
	var (
		ldur    = regexp.MustCompile(`^ldur x29, \[sp,#-8\]$`)
		ldrPost = regexp.MustCompile(`^ldr x30, \[sp\],#(\d+)$`)
		ldp     = regexp.MustCompile(`^ldp x29, x30, \[sp,#-8\]$`)
		addImm  = regexp.MustCompile(`^add sp, sp, #0x([0-9a-f]+)(, lsl #12)?$`)
		movz    = regexp.MustCompile(`^mov x27, #0x([0-9a-f]+)$`)
		addReg  = regexp.MustCompile(`^add sp, sp, x27(, uxtx)?$`)
	)
	for _, b := range testbin.Binaries(t, &Arch) {
		rets, taken, huge := 0, 0, 0
		for _, f := range b.Funcs {
			w, err := Arch.Walk(b.Text, f.Entry, f.End)
			if err != nil {
				continue
			}
			var insts []xinst
			for pc := f.Entry; pc+instLen <= w.End; pc += instLen {
				insts = append(insts, xdecode(binary.LittleEndian.Uint32(b.Text.Read(pc, instLen)), pc))
			}
			gnu := func(k int) string {
				if k < 0 || insts[k].Bad {
					return ""
				}
				return arm64asm.GNUSyntax(insts[k].Inst)
			}
			for k, in := range insts {
				if in.Bad || in.Op != arm64asm.RET || gnu(k) != "ret" {
					continue
				}
				rets++
				ok, addr, frame := false, uint64(0), int64(0)
				num := func(s string, base int) int64 { v, _ := strconv.ParseInt(s, base, 64); return v }
				switch {
				case ldur.MatchString(gnu(k-2)) && ldrPost.MatchString(gnu(k-1)):
					ok, addr, frame = true, insts[k-2].PC, num(ldrPost.FindStringSubmatch(gnu(k - 1))[1], 10)
				case ldp.MatchString(gnu(k-2)) && addImm.MatchString(gnu(k-1)):
					m := addImm.FindStringSubmatch(gnu(k - 1))
					ok, addr, frame = true, insts[k-2].PC, num(m[1], 16)
					if m[2] != "" {
						frame <<= 12
					}
				case ldp.MatchString(gnu(k-3)) && movz.MatchString(gnu(k-2)) && addReg.MatchString(gnu(k-1)):
					ok, addr, frame = true, insts[k-3].PC, num(movz.FindStringSubmatch(gnu(k - 2))[1], 16)
				}
				if ok {
					if _, in := w.Target(addr+instLen, in.PC+instLen); in {
						ok = false
					}
				}
				r, err := epilogue(b.Text, w, in.PC)
				if (err == nil) != ok {
					t.Errorf("%s: RET at %#x: epilogue says %v, the oracle %v (%q %q %q)", f.Name, in.PC, err, ok, gnu(k-3), gnu(k-2), gnu(k-1))
					continue
				}
				if !ok {
					continue
				}
				taken++
				if in.PC-addr == 3*instLen {
					huge++
				}
				if r.Addr != addr || r.Frame != frame || r.Ret != in.PC {
					t.Errorf("%s: RET at %#x: epilogue %+v, the oracle: call at %#x, frame %d", f.Name, in.PC, r, addr, frame)
				}
			}
		}
		t.Logf("%s: %d returns, %d take a probe, %d of them of a frame of 4 KiB or more", b.Path, rets, taken, huge)
		if taken == 0 {
			t.Errorf("%s: no return takes a probe", b.Path)
		}
	}
}
