package sdt

import (
	"testing"
	"time"
)

var consumerTick = Define1[int]("consumertest", "tick", "i")

//go:noinline
func consumerSite(i int) { Probe1(&consumerTick, i) }

// TestConsumer: an in-process consumer holds its probes on while open, receives their
// events (a trace) or counts them (an aggregation), and switches them off on close.
func TestConsumer(t *testing.T) {
	const spec = "consumertest:::tick"
	NeedSwitchable(t, spec)
	tr, err := openConsumer("test trace", spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	agg := newAggregation(aggBy{Kind: "probe"}, 0, false)
	st, err := openConsumer("test stat", spec, agg)
	if err != nil {
		t.Fatal(err)
	}
	if !consumerTick.Enabled() {
		t.Fatal("an open consumer does not hold its probe on")
	}
	for i := range 5 {
		consumerSite(i)
	}
	for i := range 5 {
		select {
		case e := <-tr.events:
			if e.format(0) != string(rune('0'+i)) {
				t.Fatalf("event %d carries %q", i, e.format(0))
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("event %d not received", i)
		}
	}
	if rows := agg.snapshot().Rows; len(rows) != 1 || rows[0].Count != 5 || rows[0].Sum != 10 {
		t.Fatalf("aggregation rows %+v; want one row counting 5 fires summing 10", rows)
	}
	tr.close()
	if !consumerTick.Enabled() {
		t.Fatal("closing one consumer switched off a probe the other holds")
	}
	st.close()
	if consumerTick.Enabled() {
		t.Fatal("probe still on after its last consumer closed")
	}
	if tr.drops() != 0 {
		t.Fatalf("%d drops", tr.drops())
	}
}
