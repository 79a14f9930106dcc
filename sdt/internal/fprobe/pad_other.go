//go:build !(linux && amd64)

package fprobe

import "errors"

// padFor: only amd64's epilogues need pads.
func padFor(site uintptr, stub uintptr) (uintptr, error) {
	return 0, errors.New("no pads on this platform")
}
