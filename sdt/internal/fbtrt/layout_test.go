package fbtrt

import (
	"testing"
	"unsafe"
)

// TestLayout: a Func starts as package sdt's definitions do, its flag byte first and
// its descriptor where sdt reads it, so that discovery binds its sites as any others'.
func TestLayout(t *testing.T) {
	var f Func
	if unsafe.Offsetof(f.on) != 0 || unsafe.Offsetof(f.core) != registry.CoreOffset {
		t.Fatalf("Func: flag at %d, descriptor at %d; sdt's definitions: 0 and %d", unsafe.Offsetof(f.on), unsafe.Offsetof(f.core), registry.CoreOffset)
	}
}
