package functab

// firstInRange returns the offset of the first 16 bytes of b that hold a 4-byte word
// w, at a multiple of 4, with w-lo <= span; len(b) rounded down to 16 if none does.
//
//go:noescape
func firstInRange(b []byte, lo, span uint32) int
