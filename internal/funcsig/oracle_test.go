package funcsig

import (
	"fmt"
	"testing"

	"golang.org/x/arch/x86/x86asm"
)

// abiInts are amd64's integer argument registers in ABI order, each in its widths.
var abiInts = [][]x86asm.Reg{
	{x86asm.RAX, x86asm.EAX, x86asm.AX, x86asm.AL},
	{x86asm.RBX, x86asm.EBX, x86asm.BX, x86asm.BL},
	{x86asm.RCX, x86asm.ECX, x86asm.CX, x86asm.CL},
	{x86asm.RDI, x86asm.EDI, x86asm.DI, x86asm.DIB},
	{x86asm.RSI, x86asm.ESI, x86asm.SI, x86asm.SIB},
	{x86asm.R8, x86asm.R8L, x86asm.R8W, x86asm.R8B},
	{x86asm.R9, x86asm.R9L, x86asm.R9W, x86asm.R9B},
	{x86asm.R10, x86asm.R10L, x86asm.R10W, x86asm.R10B},
	{x86asm.R11, x86asm.R11L, x86asm.R11W, x86asm.R11B},
}

// TestOracleX86 decodes each test function's morestack block with x86asm, a decoder
// independent of gosdt's: the stores of argument registers before the call to
// runtime.morestack must be the signature's words, register, width and slot.
func TestOracleX86(t *testing.T) {
	path := app(t, "amd64")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := readCode(t, path)
	for fn := range want {
		sig, err := f.Func(store + fn)
		if err != nil {
			t.Fatal(err)
		}
		got, err := x86Spills(c, c.syms[store+fn].Value)
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		var words []string
		for _, p := range sig.Params {
			for _, w := range p.Words {
				words = append(words, fmt.Sprintf("%s:%d@%d", abis["amd64"].regName(w), w.Size, p.spill+w.Off))
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(words) {
			t.Errorf("%s: the morestack block stores %v, the signature says %v", fn, got, words)
		}
	}
}

// x86Spills follows the stack check at entry to the morestack block and returns its
// stores of argument registers, "REG:bytes@slot", in order.
func x86Spills(c *code, entry uint64) ([]string, error) {
	decode := func(pc uint64) (x86asm.Inst, error) {
		return x86asm.Decode(c.mem.Read(pc, 16), 64)
	}
	pc, block := entry, uint64(0)
	for i := 0; i < 4 && block == 0; i++ {
		in, err := decode(pc)
		if err != nil {
			return nil, err
		}
		if in.Op == x86asm.JBE {
			block = uint64(int64(pc) + int64(in.Len) + int64(in.Args[0].(x86asm.Rel)))
		}
		pc += uint64(in.Len)
	}
	if block == 0 {
		return nil, fmt.Errorf("no JBE to a morestack block at entry %#x", entry)
	}
	var out []string
	for pc = block; ; {
		in, err := decode(pc)
		if err != nil {
			return nil, err
		}
		if in.Op == x86asm.CALL {
			return out, nil
		}
		m, ok := in.Args[0].(x86asm.Mem)
		r, isReg := in.Args[1].(x86asm.Reg)
		if !ok || m.Base != x86asm.RSP || !isReg {
			if in.Op == x86asm.NOP {
				pc += uint64(in.Len)
				continue
			}
			return nil, fmt.Errorf("not a store of a register at %#x: %v", pc, in)
		}
		name := ""
		for i, regs := range abiInts {
			for _, x := range regs {
				if x == r {
					name = abis["amd64"].ints[i]
				}
			}
		}
		if r >= x86asm.X0 && r <= x86asm.X14 {
			name = fmt.Sprintf("X%d", r-x86asm.X0)
		}
		if name == "" {
			return nil, fmt.Errorf("a store of %v, not an argument register, at %#x", r, pc)
		}
		// The slot is at d(SP) above the return address.
		out = append(out, fmt.Sprintf("%s:%d@%d", name, in.MemBytes, m.Disp-8))
		pc += uint64(in.Len)
	}
}
