package main

import (
	"testing"
	"time"
)

// TestPacer: the live reader sleeps so that a pass finds about an eighth of a ring:
// the longest sleep while nothing is written, shorter as the rings fill faster,
// never below the shortest, and none when a pass left more than that unread.
func TestPacer(t *testing.T) {
	var p pacer
	t0 := time.Unix(1000, 0)
	if d := p.next(t0, 0, 0); d != paceMax {
		t.Fatalf("first pass: %v, want %v", d, paceMax)
	}
	if d := p.next(t0.Add(time.Millisecond), 0, 0); d != paceMax {
		t.Fatalf("idle: %v, want %v", d, paceMax)
	}
	// a quarter of a ring in 1 ms: 250 rings/s (smoothed up at once): 0.5 ms to an eighth
	if d := p.next(t0.Add(2*time.Millisecond), 0.25, 0); d < 450*time.Microsecond || d > 550*time.Microsecond {
		t.Fatalf("250 rings/s: %v, want 0.5 ms", d)
	}
	// a ring filled in 1 ms: the shortest sleep
	if d := p.next(t0.Add(3*time.Millisecond), 1, 0.1); d != paceMin {
		t.Fatalf("1000 rings/s: %v, want %v", d, paceMin)
	}
	// a pass that left more than an eighth of a ring (max bytes a pass): no sleep
	if d := p.next(t0.Add(4*time.Millisecond), 1, 0.2); d != 0 {
		t.Fatalf("behind: %v, want 0", d)
	}
	// the rate decays as the rings slow down: back to the longest sleep
	for i := range 20 {
		p.next(t0.Add(time.Duration(5+i)*time.Millisecond), 0, 0)
	}
	if d := p.next(t0.Add(30*time.Millisecond), 0, 0); d != paceMax {
		t.Fatalf("after the burst: %v, want %v", d, paceMax)
	}
}
