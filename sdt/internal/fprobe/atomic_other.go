//go:build !amd64

package fprobe

import "sync/atomic"

func load64(p *uint64) uint64               { return atomic.LoadUint64(p) }
func store64(p *uint64, v uint64)           { atomic.StoreUint64(p, v) }
func add64(p *uint64, d uint64)             { atomic.AddUint64(p, d) }
func cas64(p *uint64, old, new uint64) bool { return atomic.CompareAndSwapUint64(p, old, new) }
