package arm64

import (
	"fmt"
	"testing"

	"github.com/gosdt/gosdt/arch"
)

// TestSpillPairs: a morestack block stores and reloads two argument registers at once
// with STP/LDP, of X or of D registers (two float64 arguments).
func TestSpillPairs(t *testing.T) {
	x, f := uint8(0), uint8(arch.FloatReg)
	for _, c := range []struct {
		word  uint32
		store bool
		want  []arch.Spill
	}{
		{0xa90087e0, true, []arch.Spill{{Reg: x, Size: 8, Off: 0}, {Reg: x + 1, Size: 8, Off: 8}}},  // STP R0, R1, 8(RSP)
		{0xa94087e0, false, []arch.Spill{{Reg: x, Size: 8, Off: 0}, {Reg: x + 1, Size: 8, Off: 8}}}, // LDP 8(RSP), (R0, R1)
		{0x6d0087e0, true, []arch.Spill{{Reg: f, Size: 8, Off: 0}, {Reg: f + 1, Size: 8, Off: 8}}},  // FSTPD (F0, F1), 8(RSP)
		{0x6d4087e0, false, []arch.Spill{{Reg: f, Size: 8, Off: 0}, {Reg: f + 1, Size: 8, Off: 8}}}, // FLDPD 8(RSP), (F0, F1)
	} {
		got, ok := spillsOf(c.word, c.store)
		if !ok || fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("spillsOf(%#08x, store %v) = %v %v, want %v", c.word, c.store, got, ok, c.want)
		}
	}
	if _, ok := spillsOf(0x6d0087e0, false); ok {
		t.Error("a store read as a reload")
	}
}
