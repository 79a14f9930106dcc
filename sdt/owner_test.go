package sdt

import (
	"errors"
	"slices"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

var ownerTick = Define1[int]("ownertest", "tick", "i")

//go:noinline
func ownerSite(i int) { Probe1(&ownerTick, i) }

// TestDisableReleasesOnlyItsOwn: the program's Disable while another owner (here, as
// package control holds for an sdtctl trace) holds the probe releases only the
// program's hold, and names the other; the other's release switches the probe off.
// (sdt/control's TestProgramDisableKeepsTrace runs the same through a connection.)
func TestDisableReleasesOnlyItsOwn(t *testing.T) {
	const spec = "ownertest:::tick"
	NeedSwitchable(t, spec)
	trace := &registry.Owner{Name: "sdtctl pid 1 trace"}
	if _, _, err := registry.Hold(trace, []string{spec}); err != nil {
		t.Fatal(err)
	}
	if _, err := Enable(spec); err != nil {
		t.Fatal(err)
	}
	list, _ := List(spec)
	if len(list) == 0 || !slices.Equal(list[0].HeldBy, []string{"sdtctl pid 1 trace", "program"}) {
		t.Fatalf("List: %+v; want both holders", list)
	}
	n, err := Disable(spec)
	var sh *StillHeldError
	if !errors.As(err, &sh) || n != 0 || !slices.Equal(sh.Holders, []string{"sdtctl pid 1 trace"}) || !ownerTick.Enabled() {
		t.Fatalf("Disable: %d, %v (enabled %v); want the trace's hold kept and named", n, err, ownerTick.Enabled())
	}
	registry.Release(trace)
	if ownerTick.Enabled() {
		t.Fatal("on after its last owner released it")
	}
}

func TestOwnerHoldsOnce(t *testing.T) {
	const spec = "ownertest:::tick"
	NeedSwitchable(t, spec)
	n1, err := Enable(spec)
	if err != nil {
		t.Fatal(err)
	}
	n2, err := Enable(spec)
	if err != nil || n2 != 0 {
		t.Fatalf("second Enable: %d, %v; want 0 switched", n2, err)
	}
	n3, err := Disable(spec)
	if err != nil || n3 != n1 || ownerTick.Enabled() {
		t.Fatalf("Disable: %d, %v (enabled %v); want %d switched off", n3, err, ownerTick.Enabled(), n1)
	}
}
