package main

import (
	"context"
	"io"
	"log/slog"
	"unsafe"
)

// What the kernels in kernels_gen.go share; see bench/support.go.
var (
	sink     uint64
	noneLine = new([192]byte)
	logLevel slog.LevelVar
	logger   = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: &logLevel}))
	ctx      = context.Background()
)

//go:noinline
func hook(v uint64) { sink += v }

// evict does nothing here: instruction counts do not depend on the cache, so the
// cold shape is not run under callgrind.
//
//go:noinline
func evict(p unsafe.Pointer) { _ = p }
