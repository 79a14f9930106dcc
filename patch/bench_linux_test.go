//go:build amd64 || arm64

package patch

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// BenchmarkApply measures one toggle round trip (on, then off) of one site, idle and
// with busy goroutines. The busy ones pass through the scheduler every few thousand
// calls, as real goroutines do; a purely CPU-bound loop in an assembly function is all
// but unpreemptible and makes every rendezvous wait out its timeout (that case is
// TestRendezvousBacksOut's).
func BenchmarkApply(b *testing.B) {
	for _, busy := range []int{0, 4} {
		for _, p := range []Protocol{Atomic, Rendezvous} {
			name := p.String()
			if busy > 0 {
				name = fmt.Sprintf("%v/busy=%d", p, busy)
			}
			b.Run(name, func(b *testing.B) {
				resetSite(b)
				var stop atomic.Bool
				var wg sync.WaitGroup
				for range busy {
					wg.Go(func() {
						for i := 0; !stop.Load(); i++ {
							testTarget()
							if i%4096 == 0 {
								runtime.Gosched()
							}
						}
					})
				}
				o := Options{Protocol: p}
				for b.Loop() {
					if _, err := setSite(true, len(siteOn), o); err != nil {
						b.Fatal(err)
					}
					if _, err := setSite(false, len(siteOn), o); err != nil {
						b.Fatal(err)
					}
				}
				stop.Store(true)
				wg.Wait()
			})
		}
	}
}
