package sdt

import (
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

var (
	fireNull  = Define2[int, string]("firebench", "null", "n", "s")
	fireNull1 = Define1[int]("firebench", "null1", "n")
)

//go:noinline
func fireNullSite(i int) { Probe2(&fireNull, i, "hello") }

//go:noinline
func fireNull1Site(i int) { Probe1(&fireNull1, i) }

type nullSink struct{ n int }

func (s *nullSink) Fire(f *registry.Firing) { s.n += f.N }

// BenchmarkFireDispatch is an enabled fire into a sink that does nothing: what the
// fire path costs a consumer before the consumer's own work.
func BenchmarkFireDispatch(b *testing.B) {
	for _, c := range []struct {
		spec string
		site func(int)
	}{{"firebench:::null1", fireNull1Site}, {"firebench:::null", fireNullSite}} {
		b.Run(c.spec, func(b *testing.B) {
			NeedSwitchable(b, c.spec)
			s := &nullSink{}
			_, cancel, err := registry.Subscribe(c.spec, s)
			if err != nil {
				b.Fatal(err)
			}
			defer cancel()
			if _, err := Enable(c.spec); err != nil {
				b.Fatal(err)
			}
			defer Disable(c.spec)
			for i := 0; b.Loop(); i++ {
				c.site(i)
			}
			if s.n == 0 {
				b.Fatal("no fire reached the sink")
			}
		})
	}
}

// BenchmarkFireCounter is the same fire with no consumer: the hit count only.
func BenchmarkFireCounter(b *testing.B) {
	NeedSwitchable(b, "firebench:::null1")
	if _, err := Enable("firebench:::null1"); err != nil {
		b.Fatal(err)
	}
	defer Disable("firebench:::null1")
	for i := 0; b.Loop(); i++ {
		fireNull1Site(i)
	}
}
