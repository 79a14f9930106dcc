package sdt_test

import (
	"errors"
	"testing"

	"github.com/gosdt/gosdt/sdt"
)

var platformTick = sdt.Define1[int]("platformtest", "tick", "i")

//go:noinline
func platformSite(i int) { sdt.Probe1(&platformTick, i) }

// TestEnableSwitchesOrRefuses: on every platform (sealed sites on amd64 and arm64,
// the branch check elsewhere), Enable either switches the probe on, so that its
// handler runs, or says it is not supported. It never reports success with nothing
// switched.
func TestEnableSwitchesOrRefuses(t *testing.T) {
	var got []int
	detach := platformTick.Attach(func(i int) { got = append(got, i) })
	defer detach()
	n, err := sdt.Enable("platformtest:::tick")
	if errors.Is(err, sdt.ErrNotSupported) {
		if n != 0 || platformTick.Enabled() {
			t.Fatalf("Enable refused (%v) but switched %d (enabled %v)", err, n, platformTick.Enabled())
		}
		t.Logf("not supported here: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer sdt.Disable("platformtest:::tick")
	if !platformTick.Enabled() {
		t.Fatalf("Enable returned (%d, nil) but the probe is not enabled", n)
	}
	platformSite(7)
	if len(got) != 1 || got[0] != 7 {
		t.Fatalf("handler saw %v after one fire of 7", got)
	}
	if _, err := sdt.Disable("platformtest:::tick"); err != nil {
		t.Fatal(err)
	}
	platformSite(8)
	if platformTick.Enabled() || len(got) != 1 {
		t.Fatalf("after Disable: enabled %v, handler saw %v", platformTick.Enabled(), got)
	}
}

// TestErrorsMatch: what Enable returns can be matched without naming an internal
// package.
func TestErrorsMatch(t *testing.T) {
	_, err := sdt.Enable("a:b c")
	var se *sdt.SpecError
	if !errors.Is(err, sdt.ErrMalformedSpec) || !errors.As(err, &se) || se.Pos != 3 {
		t.Fatalf("malformed spec: %v (%T); want a *sdt.SpecError at byte 3", err, err)
	}
	if _, err := sdt.Enable("nosuchprovider:::nosuchprobe"); !errors.Is(err, sdt.ErrNoMatch) {
		t.Fatalf("no match: %v", err)
	}
	if _, err := sdt.List("a:b:c:d:e"); !errors.Is(err, sdt.ErrMalformedSpec) {
		t.Fatalf("List with a malformed spec: %v", err)
	}
}
