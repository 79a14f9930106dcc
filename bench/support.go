package bench

import (
	"context"
	"io"
	"log/slog"
)

// What the kernels in kernels_gen_test.go share. Everything a kernel computes ends
// in sink, so that no loop is optimized away.
var (
	sink uint64

	// noneLine[64] is what the "none" variant's cold shape evicts: a line of its
	// own (the allocation spans at least two lines) that nothing reads or writes.
	noneLine = new([192]byte)

	// logger is below its level: Debug is off.
	logLevel slog.LevelVar // Info, the zero value
	logger   = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: &logLevel}))
	ctx      = context.Background()
)

// hook is the atomicbool variant's event code: something the compiler cannot drop.
//
//go:noinline
func hook(v uint64) { sink += v }
