//go:build !amd64 && !arm64

package consume

import (
	"sync/atomic"

	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// stamp returns the runtime's monotonic clock as ticks, and no g: where there is no
// assembly for the CPU's counter, events carry no goroutine id.
func stamp() (ticks uint64, gp uintptr) { return uint64(rt.Nanotime()), 0 }

// publish stores v at p with release semantics.
func publish(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
