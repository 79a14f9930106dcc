package arm64

import (
	"encoding/binary"
	"testing"
)

func encB(pc, to uint64) uint32 { w, _ := bWord(pc, to); return w }

// TestSealed reads a CBZ site back from its sealed text: B skip over a fire block that
// comes back to skip; and refuses a B whose next word another branch reaches, and the
// NOP form, which says nothing of where the site would jump.
func TestSealed(t *testing.T) {
	build := func(intoFire bool) (prog, uint64, uint64) {
		var p prog
		p.add(encADRP(p.pc(), flagAddr, 27), 0xD503201F) // the flag load, its LDRB a NOP
		br := p.pc()
		p.add(0) // B skip, below
		fire := p.pc()
		p.add(wSTRX0SP, encADRP(p.pc(), flagAddr, 0), encADD(0, 0, flagAddr&0xfff), encBL(p.pc()+12, fireFunc))
		p.add(0) // B skip, below
		skip := p.pc()
		p.add(wMOVX1X2)
		if intoFire {
			p.add(encB(p.pc(), fire))
		}
		p.add(wRET)
		p.words[(br-base)/4] = encB(br, skip)
		p.words[(skip-4-base)/4] = encB(skip-4, skip)
		return p, br, skip
	}
	p, br, skip := build(false)
	m := p.mem()
	w, err := walk(m, base, p.pc())
	if err != nil {
		t.Fatal(err)
	}
	s, sl, ok := sealed(m, w, br)
	if !ok || s.Addr != br || s.Len != 4 || s.Taken != skip || !s.OnZero || binary.LittleEndian.Uint32(sl.On) != nopWord {
		t.Fatalf("sealed = %+v %+v %v", s, sl, ok)
	}
	g, err := guardedCall(m, s.Next(), nil)
	if err != nil || g.Call != fireFunc || !rejoins(m, g.Return, skip, nil) || rejoins(m, g.Return, br, nil) {
		t.Errorf("fire block: %+v %v", g, err)
	}
	for pc := uint64(base); pc < p.pc(); pc += 4 {
		if _, _, ok := sealed(m, w, pc); ok && pc != br {
			t.Errorf("a sealed site at %#x", pc)
		}
	}

	p, br, _ = build(true)
	m = p.mem()
	if w, err = walk(m, base, p.pc()); err != nil {
		t.Fatal(err)
	}
	if _, _, ok := sealed(m, w, br); ok {
		t.Error("a B whose next word another branch reaches is read as a sealed site")
	}
	p.words[(br-base)/4] = nopWord
	m = p.mem()
	if _, _, ok := sealed(m, w, br); ok {
		t.Error("a NOP is read as a sealed site")
	}
}
