//go:build amd64 || arm64

package patch

import (
	"bytes"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"
)

// TestRendezvousBacksOut holds one of two Ps in a non-preemptible assembly loop: the
// rendezvous cannot gather every P, must give up, and must leave the text untouched.
func TestRendezvousBacksOut(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	resetSite(t)
	before := append([]byte(nil), text(testTargetAddr(), wideLen)...)

	var stop uint32
	blocked := make(chan struct{})
	done := make(chan struct{})
	go func() {
		close(blocked)
		spinWhileLess(&stop, 1, 1<<62) // returns only when stop is set
		close(done)
	}()
	<-blocked
	time.AfterFunc(300*time.Millisecond, func() { atomic.StoreUint32(&stop, 1) })
	time.Sleep(time.Millisecond) // let the blocker enter its loop

	rep, err := setSite(true, len(siteOn), Options{Protocol: Rendezvous, ArrivalTimeout: 20 * time.Millisecond, Attempts: 2})
	if !errors.Is(err, ErrRendezvousTimeout) {
		t.Errorf("Apply = %v, want ErrRendezvousTimeout", err)
	}
	if rep.Attempts != 2 {
		t.Errorf("report %+v, want 2 attempts", rep)
	}
	if after := text(testTargetAddr(), wideLen); !bytes.Equal(after, before) {
		t.Errorf("text changed: % x -> % x", before, after)
	}
	checkRX(t)
	atomic.StoreUint32(&stop, 1)
	<-done
}
