package sdt

import (
	"fmt"

	"github.com/gosdt/gosdt/sdt/internal/bridge"
)

// Errors of Enable, Disable and List, to match with errors.Is and errors.As.
// Package control's traces and aggregations return the same errors.
var (
	// ErrNoMatch: the spec matches no probe of this process.
	ErrNoMatch = bridge.ErrNoMatch
	// ErrMalformedSpec: the spec does not parse; the error is a *SpecError.
	ErrMalformedSpec = bridge.ErrMalformedSpec
	// ErrNotSupported: nothing the spec matches can be switched on this platform.
	ErrNotSupported = bridge.ErrNotSupported
)

// SpecError is a malformed probe spec: what is wrong, and where.
type SpecError struct {
	Spec   string // the spec as given
	Pos    int    // byte offset in Spec where it goes wrong; -1: the spec as a whole
	Reason string
}

func (e *SpecError) Error() string {
	if e.Pos >= 0 {
		return fmt.Sprintf("malformed probe spec %q at byte %d: %s", e.Spec, e.Pos, e.Reason)
	}
	return fmt.Sprintf("malformed probe spec %q: %s", e.Spec, e.Reason)
}

func (e *SpecError) Is(target error) bool { return target == ErrMalformedSpec }
