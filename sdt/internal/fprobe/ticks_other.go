//go:build !amd64 && !arm64

package fprobe

import (
	"sync/atomic"

	"github.com/gosdt/gosdt/sdt/internal/rt"
)

func ticks() uint64 { return uint64(rt.Nanotime()) }

func publish(p *uint64, v uint64) { atomic.StoreUint64(p, v) }
