package sdt

import (
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

var (
	pfWide   = Define2[int64, string]("pfiring", "wide", "v", "s")
	pfNarrow = Define2[uint8, int8]("pfiring", "narrow", "u", "i")
)

//go:noinline
func pfWideSite(v int64, s string) { Probe2(&pfWide, v, s) }

//go:noinline
func pfNarrowSite(u uint8, i int8) { Probe2(&pfNarrow, u, i) }

// seenSink records what each fire showed it.
type seenSink struct {
	slots [][2]uint64
	strs  []string
}

func (s *seenSink) Fire(f *registry.Firing) {
	s.slots = append(s.slots, [2]uint64{f.Slots[0], f.Slots[1]})
	s.strs = append(s.strs, strings.Clone(f.Strs[1]))
}

// TestPFiringReuse: a P's firing, reused from fire to fire, shows each fire only its
// own arguments: a narrow argument after a wide one has no stale high bytes, and no
// string outlives its fire there.
func TestPFiringReuse(t *testing.T) {
	if registry.PFiring(0) == nil {
		t.Skip("under the race detector fires build their firing on the stack")
	}
	for _, spec := range []string{"pfiring:::wide", "pfiring:::narrow"} {
		NeedSwitchable(t, spec)
		if _, err := Enable(spec); err != nil {
			t.Fatal(err)
		}
		defer Disable(spec)
	}
	s := &seenSink{}
	_, cancel, err := registry.Subscribe("pfiring:::", s)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	runtime.LockOSThread() // one P for every fire, as far as the scheduler allows
	defer runtime.UnlockOSThread()
	for range 100 {
		pfWideSite(-1, "kept?")
		pfNarrowSite(5, -3)
	}
	for i := 1; i < len(s.slots); i += 2 {
		if got := s.slots[i]; got != [2]uint64{5, uint64(0xffff_ffff_ffff_fffd)} {
			t.Fatalf("narrow fire %d after a wide one: slots %#x, want 0x5 and -3", i/2, got)
		}
		if s.strs[i-1] != "kept?" {
			t.Fatalf("wide fire %d: string %q", i/2, s.strs[i-1])
		}
	}
	for p := 0; registry.PFiring(p) != nil; p++ {
		for i, str := range registry.PFiring(p).Strs {
			if str != "" {
				t.Fatalf("P %d's firing keeps string %d %q after its fire", p, i, str)
			}
		}
	}
}
