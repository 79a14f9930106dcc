package amd64

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
	"golang.org/x/arch/x86/x86asm"
)

// Fixes of xcalls: the places where the x86asm implementation kept a register known
// that the code had overwritten (calls forgets them).
const (
	// fixLEA: a LEA of an address that is not RIP-relative forgets its destination.
	fixLEA = 1 << iota
	// fixWidth: a write of 32 bits zero-extends (MOVL $-1, CX puts 0xffffffff in RCX,
	// not all ones); one of 8 or 16 bits forgets the whole register (MOVB into AL,
	// SETcc AL, MOVW $1, AX).
	fixWidth
	// fixImplicit: the registers an instruction writes besides its first operand are
	// forgotten (MUL and DIV: DX:AX; CQO: DX; XCHG and XADD: both; CMPXCHG: AX; CPUID,
	// RDTSC; the string instructions: SI, DI, CX; LOOP: CX; POP, PUSH, RET, LEAVE: SP,
	// BP; MULX: both; PCMPxSTRx: CX), and SYSCALL and INT n forget every register.
	fixImplicit
	fixAll = fixLEA | fixWidth | fixImplicit
)

var fixNames = map[int]string{fixLEA: "LEA not RIP-relative", fixWidth: "8-, 16- or 32-bit write", fixImplicit: "implicit write"}

// xcalls is Offline.Calls as it was with x86asm, with the fixes in fixes: the oracle of
// calls.
func xcalls(m arch.Memory, entry, end uint64, want func(target uint64) bool, name func(pc uint64) string, fixes int) []arch.Call {
	insts, err := xdecodeFunc(m, entry, end)
	if err != nil {
		return nil // assembly or undecodable: no call there to read
	}
	var out []arch.Call
	regs := map[x86asm.Reg]uint64{}
	// put is regs[wide(r, false)] = v, with fixWidth by r's width.
	put := func(r x86asm.Reg, v uint64) {
		switch {
		case fixes&fixWidth == 0:
			regs[wide(r, false)] = v
		case r >= x86asm.EAX && r <= x86asm.R15L:
			regs[wide(r, false)] = uint64(uint32(v))
		case r >= x86asm.RAX && r <= x86asm.R15:
			regs[r] = v
		default:
			delete(regs, wide(r, true))
		}
	}
	for i, in := range insts {
		a := in.Inst.Args
		switch in.Op {
		case x86asm.LEA:
			if r, ok := a[0].(x86asm.Reg); ok && in.Mem != 0 {
				put(r, in.Mem)
			} else if ok && fixes&fixLEA != 0 {
				delete(regs, wide(r, true))
			}
			continue
		case x86asm.MOV:
			if r, ok := a[0].(x86asm.Reg); ok {
				switch v := a[1].(type) {
				case x86asm.Imm:
					put(r, uint64(v))
				case x86asm.Reg:
					if x, ok := regs[wide(v, false)]; ok {
						put(r, x)
					} else {
						delete(regs, wide(r, false))
						if fixes&fixWidth != 0 {
							delete(regs, wide(r, true))
						}
					}
				default:
					delete(regs, wide(r, false))
					if fixes&fixWidth != 0 {
						delete(regs, wide(r, true))
					}
				}
				continue
			}
		case x86asm.CALL:
			if in.Target != 0 && want(in.Target) {
				c := arch.Call{PC: in.PC, Target: in.Target, Args: make([]uint64, len(abiRegs))}
				for j, r := range xabiRegs {
					if v, ok := regs[r]; ok {
						c.Args[j], c.Known = v, c.Known|1<<j
					}
				}
				c.Stored = xstoredByte(insts[i+1:], name)
				out = append(out, c)
			}
			clear(regs) // calls clobber every register
			continue
		}
		// Anything else may write its first operand.
		if len(a) > 0 && a[0] != nil {
			if r, ok := a[0].(x86asm.Reg); ok {
				delete(regs, wide(r, false))
				if fixes&fixWidth != 0 && !xreadsFirst(in) {
					delete(regs, wide(r, true))
				}
			}
		}
		if fixes&fixImplicit != 0 {
			for _, r := range ximplicit(in) {
				if r == 0 {
					clear(regs)
				}
				delete(regs, wide(r, true))
			}
		}
	}
	return out
}

// xabiRegs is abiRegs as x86asm names them.
var xabiRegs = [...]x86asm.Reg{x86asm.RAX, x86asm.RBX, x86asm.RCX, x86asm.RDI, x86asm.RSI, x86asm.R8, x86asm.R9, x86asm.R10, x86asm.R11}

// xstoredByte is storedByte with x86asm.
func xstoredByte(after []xinst, name func(pc uint64) string) uint64 {
	if len(after) == 0 {
		return 0
	}
	if st := after[0]; st.Op == x86asm.MOV && st.Mem != 0 {
		if r, ok := st.Inst.Args[1].(x86asm.Reg); ok && r == x86asm.AL {
			return st.Mem
		}
	}
	var v uint64
	for _, in := range after[:min(len(after), 12)] {
		switch {
		case in.Op == x86asm.LEA && in.Inst.Args[0] == x86asm.RAX:
			v = in.Mem
		case in.Op == x86asm.CALL:
			if in.Target != 0 && name(in.Target) == "runtime.racewriterange" {
				return v
			}
			return 0
		}
	}
	return 0
}

// wide names a register by its 64-bit form, so that MOVL $3, CX sets RCX; with bytes,
// the 8-bit registers too (AL and AH are parts of RAX, SPB of RSP), which the x86asm
// implementation left as they are.
func wide(r x86asm.Reg, bytes bool) x86asm.Reg {
	switch {
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return r - x86asm.EAX + x86asm.RAX
	case r >= x86asm.AX && r <= x86asm.R15W:
		return r - x86asm.AX + x86asm.RAX
	case bytes && r >= x86asm.AL && r <= x86asm.BL:
		return r - x86asm.AL + x86asm.RAX
	case bytes && r >= x86asm.AH && r <= x86asm.R15B:
		return r - x86asm.AH + x86asm.RAX
	}
	return r
}

// xreadsFirst reports the instructions whose first operand is read, not written.
func xreadsFirst(in xinst) bool {
	switch in.Op {
	case x86asm.CMP, x86asm.TEST, x86asm.BT, x86asm.PUSH, x86asm.JMP, x86asm.MUL, x86asm.DIV, x86asm.IDIV:
		return true
	case x86asm.IMUL:
		return in.Inst.Args[1] == nil
	}
	return false
}

// ximplicit returns the registers in writes beyond its first operand; 0 stands for
// all of them.
func ximplicit(in xinst) []x86asm.Reg {
	a := in.Inst.Args
	rep := false
	for _, p := range in.Inst.Prefix {
		rep = rep || p&0xFF == x86asm.PrefixREP || p&0xFF == x86asm.PrefixREPN
	}
	second := func() []x86asm.Reg {
		if r, ok := a[1].(x86asm.Reg); ok {
			return []x86asm.Reg{r}
		}
		return nil
	}
	switch in.Op {
	case x86asm.MUL, x86asm.DIV, x86asm.IDIV, x86asm.IMUL:
		if in.Op == x86asm.IMUL && a[1] != nil {
			return nil
		}
		if in.Inst.MemBytes == 1 || a[0] != nil && xbyteReg(a[0]) {
			return []x86asm.Reg{x86asm.RAX}
		}
		return []x86asm.Reg{x86asm.RAX, x86asm.RDX}
	case x86asm.CBW, x86asm.CWDE, x86asm.CDQE, x86asm.LAHF, x86asm.XLATB:
		return []x86asm.Reg{x86asm.RAX}
	case x86asm.CWD, x86asm.CDQ, x86asm.CQO:
		return []x86asm.Reg{x86asm.RDX}
	case x86asm.XCHG, x86asm.XADD, x86asm.MULX:
		return second()
	case x86asm.CMPXCHG:
		return []x86asm.Reg{x86asm.RAX}
	case x86asm.CMPXCHG8B, x86asm.CMPXCHG16B, x86asm.RDTSC, x86asm.XGETBV:
		return []x86asm.Reg{x86asm.RAX, x86asm.RDX}
	case x86asm.RDTSCP:
		return []x86asm.Reg{x86asm.RAX, x86asm.RDX, x86asm.RCX}
	case x86asm.CPUID:
		return []x86asm.Reg{x86asm.RAX, x86asm.RBX, x86asm.RCX, x86asm.RDX}
	case x86asm.SYSCALL:
		return []x86asm.Reg{0}
	case x86asm.INT:
		if in.Len > 1 {
			return []x86asm.Reg{0}
		}
	case x86asm.PUSH, x86asm.POP, x86asm.PUSHF, x86asm.PUSHFQ, x86asm.POPF, x86asm.POPFQ, x86asm.RET, x86asm.LRET:
		return []x86asm.Reg{x86asm.RSP}
	case x86asm.LEAVE:
		return []x86asm.Reg{x86asm.RSP, x86asm.RBP}
	case x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE, x86asm.PCMPESTRI, x86asm.PCMPISTRI, x86asm.PCMPESTRM, x86asm.PCMPISTRM,
		x86asm.VPCMPESTRI, x86asm.VPCMPISTRI, x86asm.VPCMPESTRM, x86asm.VPCMPISTRM:
		return []x86asm.Reg{x86asm.RCX}
	}
	var regs []x86asm.Reg
	switch name := in.Op.String(); {
	case strings.HasPrefix(name, "MOVS") && in.Op != x86asm.MOVSX && in.Op != x86asm.MOVSXD && in.Op != x86asm.MOVSD_XMM && in.Op != x86asm.MOVSS,
		strings.HasPrefix(name, "CMPS") && in.Op != x86asm.CMPSD_XMM && in.Op != x86asm.CMPSS:
		regs = []x86asm.Reg{x86asm.RSI, x86asm.RDI}
	case strings.HasPrefix(name, "STOS"), strings.HasPrefix(name, "SCAS"):
		regs = []x86asm.Reg{x86asm.RDI}
	case strings.HasPrefix(name, "LODS"):
		regs = []x86asm.Reg{x86asm.RSI, x86asm.RAX}
	default:
		return nil
	}
	if rep {
		regs = append(regs, x86asm.RCX)
	}
	return regs
}

// xbyteReg reports an 8-bit register operand.
func xbyteReg(a x86asm.Arg) bool {
	r, ok := a.(x86asm.Reg)
	return ok && r >= x86asm.AL && r <= x86asm.R15B
}

// callBinaries are the binaries the Calls differential reads: the go command, this
// test binary and the compiler; sdt's test binary, with a hundred probe definitions;
// and sdtdemo built with -race (where a definition's flag is stored through
// runtime.racewriterange).
func callBinaries(t *testing.T) []*testbin.Binary {
	bins := testbin.Binaries(t, &Arch)
	if testing.Short() || testutil.Emulated() {
		return bins // under an emulator the native run reads the builds below, in a fraction of the time
	}
	bins = append(bins, testbin.Read(t, testbin.BuildTest(t, "amd64", "../../sdt"), Arch.Machine))
	if runtime.GOARCH == "amd64" && runtime.GOOS == "linux" { // -race needs cgo, so this host
		bins = append(bins, testbin.Read(t, testbin.Build(t, "", "amd64", "../../cmd/sdtdemo", "-race"), Arch.Machine))
	}
	return bins
}

// TestCallsAgainstOracle compares calls with xcalls on every function of real
// binaries, with every direct call wanted and the binary's function names: exactly
// what the oracle returns once its unsound cases are fixed (fixAll). Against the
// oracle as it was, every difference must be an argument the oracle knew and calls
// does not, which one of the fixes alone explains, and the calls to sdt's Define
// (what Definitions reads) must not differ at all.
func TestCallsAgainstOracle(t *testing.T) {
	for _, b := range callBinaries(t) {
		names := map[uint64]string{}
		for _, fn := range b.Funcs {
			names[fn.Entry] = fn.Name
		}
		name := func(pc uint64) string { return names[pc] }
		all := func(uint64) bool { return true }
		var funcs, ncalls, known, fails, defines int
		diffs := map[string]int{} // against the oracle as it was
		var erratic int
		for _, fn := range b.Funcs {
			if hasErratum(b.Text, fn.Entry, fn.End) {
				erratic++ // x86asm reads it wrong: the oracle has nothing to say
				continue
			}
			got := calls(b.Text, fn.Entry, fn.End, all, name)
			want := xcalls(b.Text, fn.Entry, fn.End, all, name, fixAll)
			if !reflect.DeepEqual(got, want) {
				if fails++; fails <= 10 {
					t.Errorf("%s: calls %s; the fixed oracle %s", fn.Name, callsDiff(got, want), callsDiff(want, got))
				}
				continue
			}
			if got != nil {
				funcs++
			}
			ncalls += len(got)
			old := xcalls(b.Text, fn.Entry, fn.End, all, name, 0)
			var byFix map[int][]arch.Call
			for i, c := range got {
				known += popcount(c.Known)
				o := old[i]
				if o.PC != c.PC || o.Target != c.Target || o.Stored != c.Stored {
					t.Errorf("%s: call %#x to %#x stored %#x; the oracle %#x to %#x stored %#x", fn.Name, c.PC, c.Target, c.Stored, o.PC, o.Target, o.Stored)
					continue
				}
				isDefine := strings.HasPrefix(name(c.Target), "github.com/gosdt/gosdt/sdt.Define")
				if isDefine {
					defines++
				}
				for j := range abiRegs {
					v, ok := c.Arg(j)
					ov, ook := o.Arg(j)
					if ok == ook && v == ov {
						continue
					}
					if isDefine {
						t.Errorf("%s: call %#x to %s: %s %#x (%v); the oracle %#x (%v)", fn.Name, c.PC, name(c.Target), Offline.ArgRegs[j], v, ok, ov, ook)
					}
					if ok && !ook {
						t.Errorf("%s: call %#x: %s is %#x; the oracle does not know it", fn.Name, c.PC, Offline.ArgRegs[j], v)
						continue
					}
					// Which fix alone makes the oracle agree?
					if byFix == nil {
						byFix = map[int][]arch.Call{}
						for f := range fixNames {
							byFix[f] = xcalls(b.Text, fn.Entry, fn.End, all, name, f)
						}
					}
					why := "no single fix"
					for _, f := range []int{fixLEA, fixWidth, fixImplicit} {
						if fv, fok := byFix[f][i].Arg(j); fok == ok && fv == v {
							why = fixNames[f]
							break
						}
					}
					if why == "no single fix" {
						t.Logf("%s: call %#x: %s %#x (%v); the oracle %#x: no single fix explains it", fn.Name, c.PC, Offline.ArgRegs[j], v, ok, ov)
					}
					diffs[why]++
				}
			}
		}
		n := 0
		for _, c := range diffs {
			n += c
		}
		t.Logf("%s: %d functions with calls, %d calls, %d arguments known (%d calls to Define), %d functions left out for x86asm's errata; %d arguments the oracle as it was knew and calls does not",
			b.Path, funcs, ncalls, known, defines, erratic, n)
		if n > 0 {
			t.Logf("  %s", top(diffs, 8))
		}
	}
}

func popcount(x uint64) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// callsDiff prints the calls of a that b does not have.
func callsDiff(a, b []arch.Call) string {
	var s []string
	for i, c := range a {
		if i < len(b) && reflect.DeepEqual(c, b[i]) {
			continue
		}
		s = append(s, fmt.Sprintf("%#x->%#x known %b %#x stored %#x", c.PC, c.Target, c.Known, c.Args, c.Stored))
	}
	return fmt.Sprintf("%d calls [%s]", len(a), strings.Join(s, "; "))
}

// TestArgRegs: the USDT names of the argument registers, in Go's order.
func TestArgRegs(t *testing.T) {
	want := []x86asm.Reg{x86asm.RAX, x86asm.RBX, x86asm.RCX, x86asm.RDI, x86asm.RSI, x86asm.R8, x86asm.R9, x86asm.R10, x86asm.R11}
	if len(Offline.ArgRegs) != len(want) || len(abiRegs) != len(want) {
		t.Fatalf("%d register names, %d registers, want %d", len(Offline.ArgRegs), len(abiRegs), len(want))
	}
	for i, r := range want {
		if name := "%" + strings.ToLower(r.String()); Offline.ArgRegs[i] != name {
			t.Errorf("argument register %d named %q, want %q", i, Offline.ArgRegs[i], name)
		}
	}
}
