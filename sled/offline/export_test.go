package offline

import (
	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/sled"
)

// ScanAndRescanSealed scans the binary at path (sled.Scan), writes every sealable
// site's disabled sled and its other rewrites into a copy of its text, as sdtctl seal
// writes them into the file, and returns what sled.Rescan finds in that text: the
// sites a sealed binary whose table cannot be used is left with.
func ScanAndRescanSealed(path string) (scan, rescan *sled.Table, err error) {
	b, err := open(path, "sites")
	if err != nil {
		return nil, nil, err
	}
	defer b.f.Close()
	src, err := b.source()
	if err != nil {
		return nil, nil, err
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
	return scan, sled.Rescan(b.arch.Arch, src), nil
}
