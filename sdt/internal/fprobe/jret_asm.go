//go:build amd64 || arm64

package fprobe

// Defined in leaf_$GOARCH.s, with jretSlotLen and jretSlotCode in leaf_$GOARCH.go.
func jretSlots()
func jretStub()
func jretBody()
func jretAddrs() (slots, stub uintptr)

// jretSlotAddr is return slot i's address.
func jretSlotAddr(i int) uintptr {
	slots, _ := jretAddrs()
	return slots + uintptr(i)*jretSlotLen
}
