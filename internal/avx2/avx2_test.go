//go:build amd64

package avx2

import (
	"testing"

	"golang.org/x/sys/cpu"
)

// TestSupported compares with golang.org/x/sys/cpu, which the searches used before.
func TestSupported(t *testing.T) {
	if Supported != cpu.X86.HasAVX2 {
		t.Errorf("Supported = %v, golang.org/x/sys/cpu says %v", Supported, cpu.X86.HasAVX2)
	}
}
