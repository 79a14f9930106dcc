package registry

import (
	"fmt"
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
