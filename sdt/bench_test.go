package sdt_test

import (
	"testing"

	"github.com/gosdt/gosdt/patch"
	"github.com/gosdt/gosdt/sdt"
)

var benchProbe = sdt.Define1[int]("bench", "toggle", "i")

//go:noinline
func benchSite(i int) { sdt.Probe1(&benchProbe, i) }

// BenchmarkEnableDisable is the latency of switching one probe with one site on and
// off (two patches per op) through each protocol.
func BenchmarkEnableDisable(b *testing.B) {
	benchSite(0)
	for _, p := range []patch.Protocol{patch.Atomic, patch.Rendezvous} {
		b.Run(p.String(), func(b *testing.B) {
			defer sdt.SetPatchOptions(sdt.SetPatchOptions(patch.Options{Protocol: p}))
			for b.Loop() {
				if _, err := sdt.Enable("bench:::toggle"); err != nil {
					b.Fatal(err)
				}
				if _, err := sdt.Disable("bench:::toggle"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
