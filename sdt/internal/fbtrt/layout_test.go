package fbtrt

import (
	"testing"
	"unsafe"
)

// TestLayout: a Func starts as package sdt's definitions do, with the registry's head
// (its flag byte first, then its descriptor), so that discovery binds its sites as
// any others'.
func TestLayout(t *testing.T) {
	var f Func
	if unsafe.Offsetof(f.h) != 0 || unsafe.Offsetof(f.h.On) != 0 {
		t.Fatalf("Func: head at %d, flag at %d; sdt's definitions: 0 and 0", unsafe.Offsetof(f.h), unsafe.Offsetof(f.h.On))
	}
}
