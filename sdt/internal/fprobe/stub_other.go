//go:build !amd64 && !arm64

package fprobe

import "github.com/gosdt/gosdt/arch"

// No stubs here: Lookup says function probes are not supported.
var host *arch.FuncProbes

func stubAddrs() (entry, ret uintptr) { return 0, 0 }

func saveSlot(reg uint8) (int, bool) { return 0, false }

const (
	callLen    = 4
	maxSpills  = 32
	returnRegs = 4
)
