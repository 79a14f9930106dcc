package amd64

import (
	"fmt"

	"github.com/gosdt/gosdt/arch"
)

// argsAt finds where the values that the straight-line code from pc puts in argument
// registers before the call at call were at pc (Offline.ArgsAt): a sealed site's USDT
// note sits on the probe NOP before its fire block (probeTail), where the compiler has
// not yet moved the arguments into Go's argument registers.
//
// It follows what a fire block does, in the forms the compiler emits there: register
// copies, loads from the frame (off(SP)) or through a register unchanged since pc,
// spills and reloads of frame slots, immediates, XOR r, r, and LEA of a RIP-relative
// address (a string's data). Every location is relative to pc, where the note is:
// a load from a frame slot the block itself stored to takes what was stored, and
// after a store through any other pointer (which may alias the frame) no load is
// followed. An instruction it does not know makes the registers it may write unknown;
// one that changes SP, a branch or a call before the fire call is an error, as is a
// requested register whose value it cannot name.
func argsAt(m arch.Memory, pc, call uint64, want []int) ([]arch.ArgLoc, error) {
	var st [16]loc
	for r := range st {
		st[r] = loc{kind: locReg, reg: r, bytes: 8}
	}
	var slots []slot // frame stores of the block, in order
	clobbered := false
	for n := 0; pc != call; n++ {
		if n > 64 || pc > call {
			return nil, shapeErr(pc, "does not reach the call at %#x in a straight line", call)
		}
		raw := m.Read(pc, maxInstLen)
		var in inst
		if !decodeInst(raw, &in) {
			return nil, shapeErr(pc, "cannot decode % x", raw[:min(len(raw), 8)])
		}
		if in.flow != flowNext {
			return nil, shapeErr(pc, "%s before the call", in.text(m, pc))
		}
		if err := stepArgs(m, &st, &slots, &clobbered, &in, raw[:in.n], pc); err != nil {
			return nil, err
		}
		pc += uint64(in.n)
	}
	out := make([]arch.ArgLoc, len(want))
	for i, w := range want {
		if w < 0 || w >= len(abiRegs) {
			return nil, fmt.Errorf("amd64: argument register %d", w)
		}
		l := st[abiRegs[w]]
		if l.kind == locUnknown {
			return nil, shapeErr(call, "argument register %s: %s", regNames[abiRegs[w]], l.why)
		}
		out[i] = l.argLoc()
	}
	return out, nil
}

type locKind uint8

const (
	locUnknown locKind = iota
	locReg             // the register reg at pc
	locMem             // the memory at disp(reg), reg as at pc
	locConst           // the constant val
	locAddr            // the link-time address val (LEA of a RIP-relative operand)
)

// loc is where a register's value was at the note's pc.
type loc struct {
	kind  locKind
	reg   int
	disp  int64
	val   uint64
	bytes int    // low bytes of the value the location holds
	why   string // locUnknown: what made it so
}

func unknown(format string, args ...any) loc {
	return loc{why: fmt.Sprintf(format, args...)}
}

// narrow is l as a value of its low n bytes: a 32-bit write zero-extends, so a constant
// keeps its low 32 bits and a location its low n bytes.
func (l loc) narrow(n int) loc {
	switch l.kind {
	case locConst, locAddr:
		if n < 8 {
			l.val &= 1<<(8*n) - 1
		}
	case locReg, locMem:
		l.bytes = min(l.bytes, n)
	}
	return l
}

// regNames are the 64-bit registers by number, as USDT argument specs name them.
var regNames = [16]string{"%rax", "%rcx", "%rdx", "%rbx", "%rsp", "%rbp", "%rsi", "%rdi",
	"%r8", "%r9", "%r10", "%r11", "%r12", "%r13", "%r14", "%r15"}

func (l loc) argLoc() arch.ArgLoc {
	switch l.kind {
	case locReg:
		return arch.ArgLoc{Operand: regNames[l.reg], Bytes: l.bytes}
	case locMem:
		return arch.ArgLoc{Operand: fmt.Sprintf("%d(%s)", l.disp, regNames[l.reg]), Bytes: l.bytes}
	case locAddr:
		return arch.ArgLoc{Const: true, Value: l.val, Bytes: 8, Static: true}
	}
	return arch.ArgLoc{Const: true, Value: l.val, Bytes: 8}
}

// slot is a store of the block to the frame: size bytes at disp(SP) now hold v.
type slot struct {
	disp int64
	size int
	v    loc
}

// memOp is a ModRM memory operand: disp(base)(index*scale), or RIP-relative.
type memOp struct {
	base, index int // -1: none
	disp        int64
	rip         bool
}

// memOperand reads the memory operand of a legacy instruction from its bytes; ok is
// false for a register operand or an encoding it does not read (an address-size prefix).
func memOperand(in *inst, raw []byte) (op memOp, ok bool) {
	if !in.hasRM || in.mod() == 3 || in.enc != encLegacy {
		return op, false
	}
	i := 0
	for i < len(raw) {
		switch raw[i] {
		case 0x66, 0xF2, 0xF3, 0xF0, 0x2E, 0x36, 0x3E, 0x26, 0x64, 0x65:
			i++
			continue
		case 0x67:
			return op, false
		}
		break
	}
	if i < len(raw) && raw[i]&0xF0 == 0x40 {
		i++
	}
	i += [...]int{1, 2, 3, 3}[in.m]
	if i >= len(raw) || raw[i] != in.modrm {
		return op, false
	}
	i++
	op = memOp{base: in.rm(), index: -1}
	mod := in.mod()
	if in.rip {
		return memOp{base: -1, index: -1, disp: int64(in.disp), rip: true}, true
	}
	if in.modrm&7 == 4 {
		if i >= len(raw) {
			return op, false
		}
		sib := raw[i]
		i++
		op.base = int(sib&7) | int(in.rex&1)<<3
		if idx := int(sib>>3&7) | int(in.rex>>1&1)<<3; idx != rSP {
			op.index = idx
		}
		if sib&7 == 5 && mod == 0 {
			op.base = -1
			mod = 2 // disp32 without a base
		}
	}
	switch mod {
	case 1:
		if i >= len(raw) {
			return op, false
		}
		op.disp = int64(int8(raw[i]))
	case 2:
		if i+4 > len(raw) {
			return op, false
		}
		op.disp = int64(int32(uint32(raw[i]) | uint32(raw[i+1])<<8 | uint32(raw[i+2])<<16 | uint32(raw[i+3])<<24))
	}
	return op, true
}

// load is what a register loaded with size bytes from op holds, as a location at pc.
func load(st *[16]loc, slots []slot, clobbered bool, op memOp, size int) loc {
	switch {
	case op.rip || op.index >= 0 || op.base < 0:
		return unknown("loaded from memory a note cannot name")
	case op.base == rSP:
		for i := len(slots) - 1; i >= 0; i-- {
			s := slots[i]
			if op.disp+int64(size) <= s.disp || s.disp+int64(s.size) <= op.disp {
				continue
			}
			if s.disp == op.disp && s.size >= size {
				return s.v.narrow(size)
			}
			return unknown("reloaded in part from a frame slot stored before the call")
		}
	}
	if clobbered {
		return unknown("loaded after a store that may alias it")
	}
	b := st[op.base]
	if b.kind != locReg {
		return unknown("loaded through a register the code computed")
	}
	return loc{kind: locMem, reg: b.reg, disp: op.disp, bytes: size}
}

// stepArgs applies in, at pc, to the locations of the registers and the frame stores.
func stepArgs(m arch.Memory, st *[16]loc, slots *[]slot, clobbered *bool, in *inst, raw []byte, pc uint64) error {
	if in.isNOP() {
		return nil
	}
	mem, isMem := memOperand(in, raw)
	store := func(size int, v loc) {
		if mem.base == rSP && mem.index < 0 && !mem.rip {
			*slots = append(*slots, slot{disp: mem.disp, size: size, v: v.narrow(size)})
			return
		}
		*clobbered = true
	}
	// write sets register n, size bytes wide, to v: a 32-bit write zero-extends; an 8-
	// or 16-bit write leaves the rest, which no note can name.
	write := func(n, size int, v loc) {
		switch {
		case size < 4:
			st[n] = unknown("written in part")
		case size == 4:
			st[n] = v.narrow(4)
		default:
			st[n] = v
		}
	}
	if in.enc == encLegacy && in.pfx&^p66 == 0 {
		sz := in.size(false)
		switch {
		case in.legacy(mapOne, 0x89) || in.legacy(mapOne, 0x88): // MOV r/m, r
			byteForm := in.op == 0x88
			sz = in.size(byteForm)
			src := in.gpr(in.reg(), sz)
			if byteForm && src != in.reg() {
				return shapeErr(pc, "byte register of an upper half")
			}
			if isMem {
				store(sz, st[src])
				return nil
			}
			if in.mod() == 3 {
				write(in.gpr(in.rm(), sz), sz, st[src])
				return nil
			}
		case in.legacy(mapOne, 0x8B) && in.pfx == 0: // MOV r, r/m
			dst := in.reg()
			if isMem {
				write(dst, sz, load(st, *slots, *clobbered, mem, sz))
				return nil
			}
			if in.mod() == 3 {
				write(dst, sz, st[in.rm()])
				return nil
			}
		case in.m == mapOne && in.op >= 0xB8 && in.op <= 0xBF && in.pfx == 0: // MOV r, imm
			dst := int(in.op&7) | int(in.rex&1)<<3
			write(dst, sz, loc{kind: locConst, val: uint64(in.imm), bytes: 8})
			return nil
		case in.legacy(mapOne, 0xC7) && in.regDigit() == 0 && in.pfx == 0: // MOV r/m, imm32
			v := loc{kind: locConst, val: uint64(in.imm), bytes: 8}
			if isMem {
				store(sz, v)
				return nil
			}
			if in.mod() == 3 {
				write(in.rm(), sz, v)
				return nil
			}
		case (in.legacy(mapOne, 0x31) || in.legacy(mapOne, 0x33)) && in.mod() == 3 && in.reg() == in.rm() && in.pfx == 0:
			write(in.reg(), sz, loc{kind: locConst, bytes: 8}) // XOR r, r
			return nil
		case in.legacy(mapOne, 0x8D) && in.pfx == 0: // LEA
			v := unknown("an address the code computed")
			if in.rip {
				v = loc{kind: locAddr, val: in.mem(pc), bytes: 8}
			}
			write(in.reg(), sz, v)
			return nil
		case in.m == map0F && (in.op == 0xB6 || in.op == 0xB7 || in.op == 0xBE || in.op == 0xBF) && in.pfx == 0,
			in.legacy(mapOne, 0x63) && in.w() && in.pfx == 0: // MOVZX, MOVSX, MOVSXD
			from := 4
			switch in.op {
			case 0xB6, 0xBE:
				from = 1
			case 0xB7, 0xBF:
				from = 2
			}
			var v loc
			switch {
			case isMem:
				v = load(st, *slots, *clobbered, mem, from)
			case in.mod() == 3 && from == 1 && in.rex == 0 && in.rm() >= 4:
				v = unknown("extended from an upper-half byte register")
			case in.mod() == 3:
				v = st[in.rm()].narrow(from)
			}
			if v.kind == locConst && in.op != 0xB6 && in.op != 0xB7 {
				v = unknown("a sign-extended constant") // rare; not worth its own case
			}
			write(in.reg(), sz, v)
			return nil
		}
	}
	// Any other instruction: whatever it may write is unknown from here on, and a
	// memory operand may be a store.
	if isMem || in.hasRM && in.mod() != 3 {
		*clobbered = true
	}
	var r regs
	r.known = 0xFFFF
	r.step(in, pc)
	if !r.has(rSP) {
		return shapeErr(pc, "%s may change SP before the call", in.text(m, pc))
	}
	for n := range st {
		if !r.has(n) {
			st[n] = unknown("written by %s", in.text(m, pc))
		}
	}
	return nil
}

func (r *regs) has(n int) bool { return r.known&(1<<n) != 0 }
