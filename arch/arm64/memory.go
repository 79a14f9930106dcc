package arm64

import (
	"fmt"

	"github.com/gosdt/gosdt/arch"
)

// Memory, Bytes and ShapeError are shared by every architecture; see package arch.
type (
	Memory     = arch.Memory
	Bytes      = arch.Bytes
	ShapeError = arch.ShapeError
)

func shapeErr(pc uint64, format string, args ...any) error {
	return &ShapeError{Arch: "arm64", PC: pc, Reason: fmt.Sprintf(format, args...)}
}
