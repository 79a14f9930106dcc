package goid

import (
	"runtime"
	"testing"
)

// The offset found holds the id of every goroutine, new ones included.
func TestOffset(t *testing.T) {
	off := Offset()
	if G() == 0 {
		if off != 0 {
			t.Fatalf("no G on %s, offset %d", runtime.GOARCH, off)
		}
		t.Skipf("goroutine ids are not read on %s", runtime.GOARCH)
	}
	if off == 0 {
		t.Fatal("no offset holds the goroutine id")
	}
	for range 20 {
		ch := make(chan [2]uint64)
		go func() { ch <- [2]uint64{At(G(), off), Own()} }()
		if got := <-ch; got[0] != got[1] || got[1] == 0 {
			t.Fatalf("the g holds %d, the stack trace says %d", got[0], got[1])
		}
	}
}
