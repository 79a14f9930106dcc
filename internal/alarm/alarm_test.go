package alarm

import (
	"testing"
	"time"
)

func TestAfterRingsOnce(t *testing.T) {
	a := After(time.Millisecond)
	defer a.Stop()
	select {
	case <-a.C:
	case <-time.After(5 * time.Second):
		t.Fatal("no ring within 5s")
	}
	select {
	case <-a.C:
		t.Fatal("a one-shot alarm rang twice")
	case <-time.After(20 * time.Millisecond):
	}
}

func TestEveryRingsUntilStopped(t *testing.T) {
	a := Every(time.Millisecond)
	for range 5 {
		select {
		case <-a.C:
		case <-time.After(5 * time.Second):
			t.Fatal("a periodic alarm stopped ringing")
		}
	}
	a.Stop()
	select { // at most one ring was under way
	case <-a.C:
	case <-time.After(10 * time.Millisecond):
	}
	select {
	case <-a.C:
		t.Fatal("rang after Stop")
	case <-time.After(20 * time.Millisecond):
	}
}

func TestResetTakesBackAndRearms(t *testing.T) {
	a := After(time.Hour)
	defer a.Stop()
	a.Reset(0)
	select {
	case <-a.C:
	default:
		t.Fatal("Reset(0) did not ring at once")
	}
	a.Reset(0)
	a.Reset(time.Hour) // takes back the ring of Reset(0)
	select {
	case <-a.C:
		t.Fatal("a ring not read survived Reset")
	default:
	}
	a.Reset(time.Millisecond)
	select {
	case <-a.C:
	case <-time.After(5 * time.Second):
		t.Fatal("no ring after Reset")
	}
}

// TestEveryRingsBeforeStartReturns: a period so short that the first ring may come
// before Every has returned must not find the alarm half made: it re-arms its timer
// from the ring, so an alarm made that way rings again.
func TestEveryRingsBeforeStartReturns(t *testing.T) {
	timeout := time.NewTimer(time.Minute)
	defer timeout.Stop()
	for i := range 2000 {
		a := Every(time.Nanosecond)
		for ring := range 2 {
			select {
			case <-a.C:
			case <-timeout.C:
				t.Fatalf("alarm %d: ring %d never came (a first ring before Every returned did not re-arm it)", i, ring)
			}
		}
		a.Stop()
	}
}
