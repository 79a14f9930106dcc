//go:build !amd64

package functab

import "encoding/binary"

// firstInRange returns the offset of the first 16 bytes of b that hold a 4-byte word
// w, at a multiple of 4, with w-lo <= span; len(b) rounded down to 16 if none does.
func firstInRange(b []byte, lo, span uint32) int {
	i := 0
	for ; i+16 <= len(b); i += 16 { // four words a step, for the few instructions a word
		x, y := binary.LittleEndian.Uint64(b[i:]), binary.LittleEndian.Uint64(b[i+8:])
		if uint32(x)-lo <= span || uint32(x>>32)-lo <= span || uint32(y)-lo <= span || uint32(y>>32)-lo <= span {
			return i
		}
	}
	return i
}
