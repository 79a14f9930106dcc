package sdt

import (
	"errors"
	"fmt"

	"github.com/gosdt/gosdt/internal/spec"
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

// parseSpec parses a probe description, returning a *SpecError when it is malformed.
func parseSpec(text string) (spec.Spec, error) {
	sp, err := spec.Parse(text)
	if err != nil {
		var se *spec.Error
		if errors.As(err, &se) {
			return sp, &SpecError{Spec: se.Spec, Pos: se.Pos, Reason: se.Reason}
		}
		return sp, err
	}
	return sp, nil
}

// parseListSpec is parseSpec, where "" matches every probe.
func parseListSpec(text string) (spec.Spec, error) {
	if text == "" {
		return spec.Spec{}, nil
	}
	return parseSpec(text)
}
