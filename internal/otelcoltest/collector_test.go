package otelcoltest

import (
	"testing"
)

// TestCollector builds the collector (CI runs it first, to have it cached and to time
// the build) and checks that it starts, listens, and stops.
func TestCollector(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a collector")
	}
	c := Start(t)
	spans, err := c.Spans()
	if err != nil || len(spans) != 0 {
		t.Fatalf("a new collector has spans %v (%v)", spans, err)
	}
	c.Restart()
	c.Stop()
}
