package offline

import (
	"encoding/binary"
	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/sled"
	"strings"
)

// ScanAndRescanSealed scans the binary at path (sled.Scan), writes every sealable
// site's disabled sled and its other rewrites into a copy of its text, as sdtctl seal
// writes them into the file, and returns what sled.Rescan finds in that text: the
// sites a sealed binary whose table cannot be used is left with.
func ScanAndRescanSealed(path string) (scan, rescan *sled.Table, err error) {
	scan, rescan, _, err = ScanAndRescanSealedRejoins(path)
	return scan, rescan, err
}

// ScanAndRescanSealedRejoins is ScanAndRescanSealed, and also says of each fire site
// of the scan whether its fire block comes straight back to the sled's jump target
// after the fire call (race calls passed over): what Rescan can prove.
func ScanAndRescanSealedRejoins(path string) (scan, rescan *sled.Table, rejoins map[uintptr]bool, err error) {
	b, err := open(path, "sites")
	if err != nil {
		return nil, nil, nil, err
	}
	defer b.f.Close()
	src, err := b.source()
	if err != nil {
		return nil, nil, nil, err
	}
	scan = sled.Scan(b.arch.Arch, src)
	code := append([]byte(nil), b.code...)
	at := func(addr uintptr) []byte { return code[uint64(addr)-b.text.Addr:] }
	for _, s := range scan.Sites {
		if !s.Sealable() {
			continue
		}
		copy(at(s.Addr), s.Off)
		for _, a := range s.Also {
			copy(at(a.Addr), a.New)
		}
	}
	src.Text, src.Mem = code, arch.Bytes{Base: b.text.Addr, Code: code}
	// Rejoining is read in the sealed text, as Rescan reads it: a later site on the
	// way is its sled's jump there, not the compiler's conditional branch.
	rejoins = map[uintptr]bool{}
	race := func(target uint64) bool { return strings.HasPrefix(src.Syms.Name(target), "runtime.race") }
	for _, s := range scan.Sites {
		if s.Kind == sled.Fire && s.Sealable() {
			// A disabled sled that jumps to its own end (amd64: an out-of-line site's
			// rel8 jump) skips no fire block.
			if b.arch.Jumps(s.Off) && jumpTarget(s) != uint64(s.Addr)+uint64(s.Len) {
				rejoins[s.Addr] = b.arch.Rejoins(src.Mem, uint64(s.Return), jumpTarget(s), race)
			}
		}
	}
	return scan, sled.Rescan(b.arch.Arch, src), rejoins, nil
}

// jumpTarget is where a site's sled jumps in its disabled form: where its compiler's
// branch went when the flag was clear. The jump is the sled's first instruction.
func jumpTarget(s sled.Site) uint64 {
	t, at := s.Off, uint64(s.Addr)
	switch {
	case len(t) >= 2 && t[0] == 0xEB:
		return at + 2 + uint64(int64(int8(t[1])))
	case len(t) >= 5 && t[0] == 0xE9:
		return at + 5 + uint64(int64(int32(binary.LittleEndian.Uint32(t[1:]))))
	case len(t) == 4:
		w := binary.LittleEndian.Uint32(t)
		return at + uint64(int64(int32(w<<6)>>6)*4)
	}
	return 0
}
