package registry

import (
	"runtime"
	"unsafe"
)

// What a fire shows its consumers (a firing: its arguments and where it came from)
// is 200 bytes. Declared on the fire's stack it would be cleared whole on every fire,
// most of it (six strings) for nothing; instead each P has one, and a fire, pinned
// to its P from admission to the end of its consumers, writes only the fields its
// probe's arguments use (SetArg, emit), and clears its strings after (DropArg). One
// per P is enough: sinks run pinned, never keep the firing and never fire, so no
// two fires use a P's at once. A P beyond those counted at init, and every fire
// under the race detector (which cannot see that the P pin orders its writers),
// builds one on its stack instead.

// pFiringSlot pads a P's firing to whole cache lines of its own.
type pFiringSlot struct {
	f firing
	_ [(256 - unsafe.Sizeof(firing{})%256) % 256]byte
}

var pFirings = make([]pFiringSlot, max(runtime.GOMAXPROCS(0), runtime.NumCPU()))

// PFiring is P pid's firing; nil where the fire must build its own. The caller is
// pinned to pid.
func PFiring(pid int) *firing {
	if raceBuild || uint(pid) >= uint(len(pFirings)) {
		return nil
	}
	return &pFirings[pid].f
}
