//go:build !amd64

package fprobe

import "github.com/gosdt/gosdt/arch"

// No stubs here yet (arm64's are still to be written): Lookup says so.
var host *arch.FuncProbes

func stubAddrs() (entry, ret uintptr) { return 0, 0 }

func saveSlot(reg uint8) (int, bool) { return 0, false }

const returnRegs = 4

const callLen = 4
