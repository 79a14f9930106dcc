package amd64

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"golang.org/x/arch/x86/x86asm"
)

// TestArgsAt reads fire blocks as the compiler emits them (the first is exits'
// proc:exit block, byte for byte) and names where each argument register's value was
// at the block's start; each block is checked to decode to what its comment says.
func TestArgsAt(t *testing.T) {
	const base = 0x52e07c
	// want: the locations of CX, DI, SI (ArgRegs 2, 3, 4) as "operand/bytes", "$v" for
	// constants, "@v" for link-time addresses; an error's text instead.
	for _, tt := range []struct {
		name string
		code [][]byte
		want string
	}{
		{"exits proc:exit", [][]byte{
			{0x48, 0x89, 0x4c, 0x24, 0x28},             // MOVQ CX, 0x28(SP)
			{0x4c, 0x89, 0x44, 0x24, 0x30},             // MOVQ R8, 0x30(SP)
			{0x48, 0x8d, 0x1d, 0x93, 0x17, 0x06, 0x00}, // LEAQ dict(SB), BX
			{0x48, 0x8d, 0x05, 0xec, 0x5c, 0x18, 0x00}, // LEAQ probe(SB), AX
			{0x4c, 0x89, 0xc1},                         // MOVQ R8, CX
			{0x48, 0x8d, 0x3d, 0xe8, 0xbf, 0x04, 0x00}, // LEAQ str(SB), DI
			{0xbe, 0x04, 0x00, 0x00, 0x00},             // MOVL $4, SI
		}, "%r8/8 @0x57a086 $4"},
		{"frame loads and a spill reloaded", [][]byte{
			{0x48, 0x8b, 0x4c, 0x24, 0x40},          // MOVQ 0x40(SP), CX
			{0x48, 0x89, 0x5c, 0x24, 0x18},          // MOVQ BX, 0x18(SP)
			{0x48, 0x8b, 0x7c, 0x24, 0x18},          // MOVQ 0x18(SP), DI
			{0x0f, 0xb6, 0xb4, 0x24, 0x90, 0, 0, 0}, // MOVBLZX 0x90(SP), SI
		}, "64(%rsp)/8 %rbx/8 144(%rsp)/1"},
		{"through a register, xor, 32-bit copy", [][]byte{
			{0x48, 0x8b, 0x4a, 0x10}, // MOVQ 0x10(DX), CX
			{0x31, 0xff},             // XORL DI, DI
			{0x89, 0xc6},             // MOVL AX, SI
		}, "16(%rdx)/8 $0 %rax/4"},
		{"swap through a scratch register", [][]byte{
			{0x49, 0x89, 0xcb},                         // MOVQ CX, R11
			{0x48, 0x89, 0xf9},                         // MOVQ DI, CX
			{0x4c, 0x89, 0xdf},                         // MOVQ R11, DI
			{0x48, 0xc7, 0xc6, 0xff, 0xff, 0xff, 0xff}, // MOVQ $-1, SI
		}, "%rdi/8 %rcx/8 $18446744073709551615"},
		{"computed", [][]byte{
			{0x48, 0x8d, 0x0c, 0x52}, // LEAQ (DX)(DX*2), CX
		}, "argument register %rcx: an address the code computed"},
		{"arithmetic", [][]byte{
			{0x48, 0x89, 0xc1}, // MOVQ AX, CX
			{0x48, 0xff, 0xc1}, // INCQ CX
		}, "argument register %rcx: written by"},
		{"a store through a pointer, then a frame load", [][]byte{
			{0x48, 0x89, 0x02},             // MOVQ AX, (DX)
			{0x48, 0x8b, 0x4c, 0x24, 0x40}, // MOVQ 0x40(SP), CX
		}, "argument register %rcx: loaded after a store that may alias it"},
		{"a partial reload", [][]byte{
			{0x89, 0x5c, 0x24, 0x18},       // MOVL BX, 0x18(SP)
			{0x48, 0x8b, 0x4c, 0x24, 0x18}, // MOVQ 0x18(SP), CX
		}, "argument register %rcx: reloaded in part"},
		{"SP changes", [][]byte{
			{0x48, 0x83, 0xec, 0x10}, // SUBQ $0x10, SP
		}, "may change SP"},
		{"a call on the way", [][]byte{
			{0xe8, 0, 0, 0, 0}, // CALL
		}, "before the call"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var code []byte
			for _, in := range tt.code {
				if x, err := x86asm.Decode(in, 64); err != nil || x.Len != len(in) {
					t.Fatalf("% x does not decode to one instruction: %v", in, err)
				}
				code = append(code, in...)
			}
			call := base + uint64(len(code))
			code = append(code, 0xe8, 0, 0, 0, 0)
			locs, err := argsAt(arch.Bytes{Base: base, Code: code}, base, call, []int{2, 3, 4})
			var got []string
			for _, l := range locs {
				switch {
				case l.Static:
					got = append(got, "@0x"+strconv.FormatUint(l.Value, 16))
				case l.Const:
					got = append(got, "$"+dec(l.Value))
				default:
					got = append(got, l.Operand+"/"+dec(uint64(l.Bytes)))
				}
			}
			if err != nil {
				got = []string{err.Error()}
			}
			if s := strings.Join(got, " "); !strings.Contains(s, tt.want) {
				t.Errorf("argsAt = %q, want %q", s, tt.want)
			}
		})
	}
}

func dec(v uint64) string { return strconv.FormatUint(v, 10) }
