//go:build !(linux && amd64)

package fprobe

import (
	"errors"

	"github.com/gosdt/gosdt/patch"
)

// padFor: only amd64's epilogues need pads.
func padFor(site uintptr, stub uintptr) (uintptr, error) {
	return 0, errors.New("no pads on this platform")
}

// trampTake: punned leaf entries are amd64's.
func trampTake(t, slot uintptr) (patch.Write, error) {
	return patch.Write{}, errors.New("no trampolines on this platform")
}

func trampDrop(t uintptr) {}

func trampHolds(t, slot uintptr) bool { return false }
