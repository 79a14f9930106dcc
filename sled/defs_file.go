package sled

import (
	"debug/elf"
	"debug/gosym"
	"fmt"
	"strings"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/arch/amd64"
	"golang.org/x/arch/x86/x86asm"
)

// Definition is a probe definition read from a binary's package initialisation: the
// arguments of its Define call, which name the probe, and the variable it lives in.
type Definition struct {
	Flag     uint64   // the variable's address: the flag byte sites compare
	Provider string   // Define's first argument
	Name     string   // its second
	Args     []string // argument names, as far as they were passed in registers
}

// DefinitionsFile reads the probe definitions of an amd64 or arm64 Go ELF binary without
// running it, on any host: `var p = sdt.Define1[int]("proc", "exit", "reason")`
// compiles, in the package's init, to the string arguments loaded into registers (Go's
// register ABI: RAX, RBX, RCX, RDI, RSI, R8..R11 on amd64, R0..R15 on arm64, a generic
// instantiation's dictionary first), the call, and a store of the result's flag byte
// (AL, W0) into the variable. Definitions made otherwise (not in an init function,
// arguments that are not constants) are not found; package sdt keeps every Define from
// being inlined so that the call is there to read. Argument names passed on the stack
// are left out: a generic Define passes four strings in registers on amd64, seven on
// arm64.
func DefinitionsFile(path, probePkg string) ([]Definition, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	scan := defineScans[f.Machine]
	if scan == nil {
		return nil, fmt.Errorf("%s: %v binary: definitions are read from x86-64 and AArch64 files only", path, f.Machine)
	}
	text, _, tab, err := GoText(path, f)
	if err != nil {
		return nil, err
	}
	code, err := text.Data()
	if err != nil {
		return nil, err
	}
	s := initScan{f: f, mem: arch.Bytes{Base: text.Addr, Code: code}, syms: fileSyms{tab: tab}, define: probePkg + ".Define"}
	var defs []Definition
	for i := range tab.Funcs {
		fn := &tab.Funcs[i]
		if isInit(fn.Name) {
			defs = append(defs, scan(s, fn)...)
		}
	}
	return defs, nil
}

// initScan is what reading the Define calls of one init function needs.
type initScan struct {
	f      *elf.File
	mem    arch.Bytes
	syms   fileSyms
	define string // the prefix of Define's symbols
}

// defineScans read the Define calls of one init function, per machine.
var defineScans = map[elf.Machine]func(initScan, *gosym.Func) []Definition{
	elf.EM_X86_64:  initScan.amd64Defines,
	elf.EM_AARCH64: initScan.arm64Defines,
}

// amd64Defines reads the Define calls of one amd64 function.
func (s initScan) amd64Defines(fn *gosym.Func) []Definition {
	insts, err := amd64.DecodeFunc(s.mem, fn.Entry, fn.End, nil)
	if err != nil {
		return nil // assembly or undecodable: no Define there
	}
	return defineCalls(s.f, insts, s.syms, s.define)
}

// isInit reports the functions that initialise package variables.
func isInit(name string) bool {
	_, fn := SplitFunc(name)
	i := strings.IndexByte(fn, '.')
	return i >= 0 && (fn[i+1:] == "init" || strings.HasPrefix(fn[i+1:], "init."))
}

// abiRegs is Go's integer argument register order on amd64.
var abiRegs = []x86asm.Reg{x86asm.RAX, x86asm.RBX, x86asm.RCX, x86asm.RDI, x86asm.RSI, x86asm.R8, x86asm.R9, x86asm.R10, x86asm.R11}

// defineCalls follows the constant values of registers through insts and reads the
// string arguments of every call whose target starts with define.
func defineCalls(f *elf.File, insts []amd64.Inst, syms fileSyms, define string) []Definition {
	var defs []Definition
	regs := map[x86asm.Reg]uint64{}
	for i, in := range insts {
		a := in.Inst.Args
		switch in.Op {
		case x86asm.LEA:
			if r, ok := a[0].(x86asm.Reg); ok && in.Mem != 0 {
				regs[wide(r)] = in.Mem
			}
			continue
		case x86asm.MOV:
			if r, ok := a[0].(x86asm.Reg); ok {
				switch v := a[1].(type) {
				case x86asm.Imm:
					regs[wide(r)] = uint64(v)
				case x86asm.Reg:
					if x, ok := regs[wide(v)]; ok {
						regs[wide(r)] = x
					} else {
						delete(regs, wide(r))
					}
				default:
					delete(regs, wide(r))
				}
				continue
			}
		case x86asm.CALL:
			name := syms.name(uintptr(in.Target))
			if in.Target != 0 && strings.HasPrefix(name, define) {
				if d, ok := readDefine(f, insts[i+1:], regs, strings.Contains(name, "["), syms); ok {
					defs = append(defs, d)
				}
			}
			regs = map[x86asm.Reg]uint64{} // calls clobber every register
			continue
		}
		// Anything else may write its first operand.
		if len(a) > 0 && a[0] != nil {
			if r, ok := a[0].(x86asm.Reg); ok {
				delete(regs, wide(r))
			}
		}
	}
	return defs
}

// readDefine reads the strings of a Define call from regs and finds the variable in the
// store of the result's flag byte that follows the call.
func readDefine(f *elf.File, after []amd64.Inst, regs map[x86asm.Reg]uint64, generic bool, syms fileSyms) (Definition, bool) {
	rs := abiRegs
	if generic {
		rs = rs[1:] // the dictionary
	}
	strs := stringArgs(f, regs, rs)
	if len(strs) < 2 || len(after) == 0 {
		return Definition{}, false
	}
	flag := uint64(0)
	st := after[0]
	if r, ok := st.Inst.Args[1].(x86asm.Reg); st.Op == x86asm.MOV && st.Mem != 0 && ok && r == x86asm.AL {
		flag = st.Mem
	} else if flag = raceWritten(after, syms); flag == 0 {
		return Definition{}, false
	}
	return Definition{Flag: flag, Provider: strs[0], Name: strs[1], Args: strs[2:]}, true
}

// raceWritten reads the variable of a Define in a -race build, where the result is
// spilled to the stack and copied into the variable after the race detector is told:
// LEAQ v(SB), AX; ...; CALL runtime.racewriterange. It returns 0 unless that call
// comes before any other, within a few instructions.
func raceWritten(after []amd64.Inst, syms fileSyms) uint64 {
	var v uint64
	for _, in := range after[:min(len(after), 12)] {
		switch {
		case in.Op == x86asm.LEA && in.Inst.Args[0] == x86asm.RAX:
			v = in.Mem
		case in.Op == x86asm.CALL:
			if in.Target != 0 && syms.name(uintptr(in.Target)) == "runtime.racewriterange" {
				return v
			}
			return 0
		}
	}
	return 0
}

// stringArgs reads the strings passed in consecutive (pointer, length) pairs of the
// registers order, up to the first pair whose value is not known or not in the file.
func stringArgs[R comparable](f *elf.File, regs map[R]uint64, order []R) []string {
	var strs []string
	for ; len(order) >= 2; order = order[2:] {
		p, ok1 := regs[order[0]]
		n, ok2 := regs[order[1]]
		if !ok1 || !ok2 {
			break
		}
		s, ok := readString(f, p, n)
		if !ok {
			break
		}
		strs = append(strs, s)
	}
	return strs
}

// readString reads n bytes at addr from the file's loaded sections.
func readString(f *elf.File, addr, n uint64) (string, bool) {
	if n > 1<<16 {
		return "", false
	}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && s.Type == elf.SHT_PROGBITS && addr >= s.Addr && addr+n <= s.Addr+s.Size {
			b := make([]byte, n)
			if _, err := s.ReadAt(b, int64(addr-s.Addr)); err != nil {
				return "", false
			}
			return string(b), true
		}
	}
	return "", false
}

// wide names a register by its 64-bit form, so that MOVL $3, CX sets RCX.
func wide(r x86asm.Reg) x86asm.Reg {
	switch {
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return r - x86asm.EAX + x86asm.RAX
	case r >= x86asm.AX && r <= x86asm.R15W:
		return r - x86asm.AX + x86asm.RAX
	}
	return r
}
