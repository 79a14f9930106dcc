package arm64

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/arch"
)

// Hand encoders for synthetic code; each is checked against arm64asm in TestAsm.
func encADRP(pc, addr uint64, rd int) uint32 {
	d := int64(addr&^0xfff-pc&^0xfff) >> 12
	return 0x90000000 | uint32(d&3)<<29 | uint32(d>>2&0x7FFFF)<<5 | uint32(rd)
}
func encLDRB(rt, rn int, imm uint64) uint32 {
	return 0x39400000 | uint32(imm)<<10 | uint32(rn)<<5 | uint32(rt)
}
func encADD(rd, rn int, imm uint64) uint32 {
	return 0x91000000 | uint32(imm)<<10 | uint32(rn)<<5 | uint32(rd)
}
func encCB(op uint32, rt int, pc, to uint64) uint32 { // op 0x34 CBZ, 0x35 CBNZ (32-bit)
	return op<<24 | uint32(int64(to-pc)>>2&0x7FFFF)<<5 | uint32(rt)
}
func encTB(op uint32, rt, bit int, pc, to uint64) uint32 { // op 0x36 TBZ, 0x37 TBNZ
	return op<<24 | uint32(bit&31)<<19 | uint32(int64(to-pc)>>2&0x3FFF)<<5 | uint32(rt)
}
func encBL(pc, to uint64) uint32 { return 0x94000000 | uint32(int64(to-pc)>>2&0x03FFFFFF) }

const (
	wRET      = 0xd65f03c0
	wMOVX1X2  = 0xaa0203e1 // MOVD R2, R1
	wMOVX3X1  = 0xaa0103e3 // MOVD R1, R3 (writes X3)
	wMOVX1X3  = 0xaa0303e1 // MOVD R3, R1 (reads X3)
	wSTRX0SP  = 0xf9001fe0 // MOVD R0, 56(RSP)
	base      = 0x100000
	flagAddr  = 0x2345678
	fireFunc  = 0x400000
	otherFunc = 0x500000
)

// prog assembles words at base; a negative entry is a placeholder filled by fix.
type prog struct{ words []uint32 }

func (p *prog) pc() uint64       { return base + uint64(len(p.words))*4 }
func (p *prog) add(ws ...uint32) { p.words = append(p.words, ws...) }
func (p *prog) mem() arch.Bytes {
	b := make([]byte, 0, 4*len(p.words))
	for _, w := range p.words {
		b = binary.LittleEndian.AppendUint32(b, w)
	}
	return arch.Bytes{Base: base, Code: b}
}

// siteProg builds: load; between...; branch(op) over a fire block; skip: after...; RET.
// The fire block materialises recv in X0 and calls fireFunc.
type shape struct {
	op      string // CBZ, CBNZ, TBZ, TBNZ, TBZ1
	between []uint32
	after   []uint32 // at the skip target (CBZ) or the fall-through (CBNZ)
	recv    uint64
	tmp     int
	add     bool // the load is ADRP, ADD, LDRB (12 bytes)
}

func (sh shape) build() (prog, arch.Check) {
	var p prog
	tmp := sh.tmp
	if tmp == 0 {
		tmp = 27
	}
	ld := arch.Check{Addr: p.pc(), Len: 8, Flag: flagAddr, Reg: 3, Tmp: tmp}
	if sh.add {
		ld.Len = 12
		p.add(encADRP(p.pc(), flagAddr, tmp), encADD(tmp, tmp, flagAddr&0xfff), encLDRB(3, tmp, 0))
	} else {
		p.add(encADRP(p.pc(), flagAddr, tmp), encLDRB(3, tmp, flagAddr&0xfff))
	}
	p.add(sh.between...)
	br := len(p.words)
	p.add(0) // branch, fixed below
	fireBlock := func() {
		p.add(wSTRX0SP, encADRP(p.pc(), sh.recv, 0), encADD(0, 0, sh.recv&0xfff), encBL(p.pc()+12, fireFunc))
		p.add(wRET)
	}
	brPC := base + uint64(br)*4
	switch sh.op {
	case "CBZ", "TBZ", "TBZ1":
		fireBlock()
		skip := p.pc()
		p.add(sh.after...)
		p.add(wRET)
		switch sh.op {
		case "CBZ":
			p.words[br] = encCB(0x34, 3, brPC, skip)
		case "TBZ":
			p.words[br] = encTB(0x36, 3, 0, brPC, skip)
		default:
			p.words[br] = encTB(0x36, 3, 1, brPC, skip)
		}
	case "CBNZ", "TBNZ":
		p.add(sh.after...)
		p.add(wRET)
		fire := p.pc()
		fireBlock()
		if sh.op == "CBNZ" {
			p.words[br] = encCB(0x35, 3, brPC, fire)
		} else {
			p.words[br] = encTB(0x37, 3, 0, brPC, fire)
		}
	}
	return p, ld
}

func callFx(target uint64) arch.CallEffect {
	if target == fireFunc {
		return arch.CallKills
	}
	return arch.CallKeeps
}

func TestAsm(t *testing.T) {
	for _, c := range []struct {
		w    uint32
		want string
	}{
		{encADRP(base, flagAddr, 27), "ADRP X27, .+0x2245000"},
		{encLDRB(3, 27, 0x678), "LDRB W3, [X27,#1656]"},
		{encADD(0, 0, 0x678), "ADD X0, X0, #0x678"},
		{encCB(0x34, 3, base, base+0x20), "CBZ W3, .+0x20"},
		{encCB(0x35, 3, base, base-0x20), "CBNZ W3, .+0xffffffffffffffe0"},
		{encTB(0x36, 3, 0, base, base+8), "TBZ W3, #0, .+0x8"},
		{encBL(base, base+0x40), "BL .+0x40"},
	} {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], c.w)
		if got := decode1(t, b[:]).String(); got != c.want {
			t.Errorf("%08x decodes as %q, want %q", c.w, got, c.want)
		}
	}
}

// check runs the discovery pipeline on a synthetic shape as package sled does, with
// Arch's functions: the site, what its fire target calls, and whether the flag load
// was proven removable (the sled's Note says why not).
func check(sh shape) (arch.Site, arch.Guarded, error, string) {
	p, _ := sh.build()
	m := p.mem()
	cands := Arch.Candidates(m.Code, base, 0, len(m.Code))
	if len(cands) == 0 {
		return arch.Site{}, arch.Guarded{}, shapeErr(base, "no candidate"), ""
	}
	s, err := Arch.Follow(m, cands[0])
	if err != nil {
		return s, arch.Guarded{}, err, ""
	}
	w, err := Arch.Walk(m, base, p.pc())
	if err != nil {
		return s, arch.Guarded{}, err, ""
	}
	if err := Arch.Match(m, w, s); err != nil {
		return s, arch.Guarded{}, err, ""
	}
	g, err := Arch.GuardedCall(m, s.Fire(), nil)
	if err != nil {
		return s, g, err, ""
	}
	sl, err := Arch.Seal(m, s, callFx)
	if err != nil {
		return s, g, err, ""
	}
	if sl.Note == "" && (len(sl.Also) != 1 || sl.Also[0].Addr != s.Check.Addr || len(sl.Also[0].New) != s.Check.Len) {
		return s, g, shapeErr(s.Addr, "load removable, but the sled's extra rewrite is %+v", sl.Also), ""
	}
	return s, g, nil, sl.Note
}

func TestSyntheticSites(t *testing.T) {
	for _, c := range []struct {
		name     string
		sh       shape
		matchErr string // substring; "" = matches
		deadErr  string // substring; "" = load removable
	}{
		{"cbz", shape{op: "CBZ", recv: flagAddr}, "", ""},
		{"cbz scheduled", shape{op: "CBZ", recv: flagAddr, between: []uint32{wMOVX1X2, wSTRX0SP, nopWord}}, "", ""},
		{"cbnz", shape{op: "CBNZ", recv: flagAddr}, "", ""},
		{"tbz", shape{op: "TBZ", recv: flagAddr}, "", ""},
		{"tbnz", shape{op: "TBNZ", recv: flagAddr}, "", ""},
		{"tbz bit 1", shape{op: "TBZ1", recv: flagAddr}, "bit other than 0", ""},
		{"used between", shape{op: "CBZ", recv: flagAddr, between: []uint32{wMOVX1X3}}, "is used by", ""},
		{"overwritten between", shape{op: "CBZ", recv: flagAddr, between: []uint32{wMOVX3X1}}, "is used by", ""},
		{"read after skip", shape{op: "CBZ", recv: flagAddr, after: []uint32{wMOVX1X3}}, "", "is live"},
		{"written after skip", shape{op: "CBZ", recv: flagAddr, after: []uint32{wMOVX3X1, wMOVX1X3}}, "", ""},
		{"other tmp", shape{op: "CBZ", recv: flagAddr, tmp: 5}, "", "not REGTMP"},
		{"tmp is Wn", shape{op: "CBZ", recv: flagAddr, tmp: 3}, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, g, err, dead := check(c.sh)
			if c.matchErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.matchErr) {
					t.Fatalf("match error %v, want %q", err, c.matchErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if g.Call != fireFunc || len(g.Receivers) != 1 || g.Receivers[0] != flagAddr || g.Return != g.CallPC+4 {
				t.Errorf("guarded call %+v", g)
			}
			if s.Fire() == s.Skip() || s.Check.Reg != 3 || s.Check.Flag != flagAddr {
				t.Errorf("site %+v", s)
			}
			if c.deadErr == "" && dead != "" || c.deadErr != "" && !strings.Contains(dead, c.deadErr) {
				t.Errorf("sled note %q, want %q", dead, c.deadErr)
			}
		})
	}
	// A receiver other than the flag is reported as such.
	if _, g, err, _ := check(shape{op: "CBZ", recv: flagAddr + 8}); err != nil || len(g.Receivers) != 1 || g.Receivers[0] != flagAddr+8 {
		t.Errorf("other receiver: %+v, %v", g, err)
	}
}

// A branch into the code between the load and the site means a path that skips the load.
func TestBranchIntoSite(t *testing.T) {
	p, _ := shape{op: "CBZ", recv: flagAddr, between: []uint32{wMOVX1X2, wMOVX1X2}}.build()
	entry := p.pc()
	p.add(encCB(0x34, 1, entry, base+12), wRET) // CBZ W1 to the second MOV
	m := p.mem()
	s, err := follow(m, candidates(m.Code, base, 0, len(m.Code))[0])
	if err != nil {
		t.Fatal(err)
	}
	w, err := walk(m, base, p.pc())
	if err != nil {
		t.Fatal(err)
	}
	if err := match(m, w, s); err == nil || !strings.Contains(err.Error(), "between the flag load") {
		t.Errorf("match = %v", err)
	}
}

// regDead follows loops without running forever and stops at its budget.
func TestRegDeadLoop(t *testing.T) {
	var p prog
	p.add(wMOVX1X2, encCB(0x34, 1, p.pc()+4, base)) // loop: MOV; CBZ W1, loop
	p.add(wRET)
	if err := regDead(p.mem(), base, 3, callFx); err != nil {
		t.Errorf("loop without uses: %v", err)
	}
	var q prog
	q.add(wMOVX1X2, encCB(0x34, 1, q.pc()+4, base), wMOVX1X3, wRET)
	if err := regDead(q.mem(), base, 3, callFx); err == nil {
		t.Error("a read after the loop was missed")
	}
}
