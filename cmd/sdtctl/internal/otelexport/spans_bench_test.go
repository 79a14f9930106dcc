package otelexport

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gosdt/gosdt/cmd/sdtctl/internal/calls"
	"github.com/gosdt/gosdt/internal/ctlproto"
)

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// rec packs a record of integer arguments.
func rec(ticks, g uint64, args ...uint64) ctlproto.Record {
	n := ctlproto.RecordHead + 8*len(args)
	b := make([]byte, n)
	binary.LittleEndian.PutUint16(b, uint16(n))
	b[2] = byte(len(args))
	binary.LittleEndian.PutUint64(b[16:], ticks)
	binary.LittleEndian.PutUint64(b[24:], g)
	for i, a := range args {
		binary.LittleEndian.PutUint64(b[32+8*i:], a)
	}
	return b
}

// BenchmarkSpans is sdtctl's cost of one call made a span, from its two records to the
// queue (the exporter discards): ordering, pairing, the SDK's span with its attributes.
func BenchmarkSpans(b *testing.B) {
	entry := calls.NewProbe(&ctlproto.Desc{Probe: "fbt:example.com/app/store:store.(*DB).Get:entry",
		Args: []ctlproto.Arg{{Name: "this", Type: "*store.DB"}, {Name: "n", Type: "int"}}, Kinds: []byte{ctlproto.ValUint, ctlproto.ValInt}})
	ret := calls.NewProbe(&ctlproto.Desc{Probe: "fbt:example.com/app/store:store.(*DB).Get:return",
		Args: []ctlproto.Arg{{Name: "latency_ns"}, {Name: "panicking"}, {Name: "r0", Type: "int"}}, Kinds: []byte{ctlproto.ValInt, ctlproto.ValBool, ctlproto.ValInt}})
	e := &Exporters{cfg: Config{Sampler: sdktrace.AlwaysSample(), Queue: QueueOptions{Size: 1 << 20, Batch: 512, Delay: time.Second, Timeout: time.Second}}, spans: discard{}}
	p := e.NewProcess(1, nil, ProcessOptions{})
	p.SetProbes([]ctlproto.Probe{{Name: entry.Name, Sites: []ctlproto.Site{{File: "/src/app/store/store.go", Line: 20}}}})
	clock := &ctlproto.Clock{NsPerTick: 1}
	const per = 64
	evs := make([]*calls.Event, 0, 2*per)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += per {
		evs = make([]*calls.Event, 0, 2*per)
		for j := range per {
			t := uint64(i+j) * 1_000_000 // a call a millisecond: the window holds 1000
			evs = append(evs, calls.NewEvent(entry, rec(t, 7, 0xc000010000, uint64(j)), 0), calls.NewEvent(ret, rec(t+500, 7, 500, 0, 42), 0))
		}
		p.in <- batch{stream: 0, evs: evs, clock: clock}
	}
	s := p.Close(time.Second)
	b.StopTimer()
	if s.Calls < uint64(b.N) {
		b.Fatalf("%d calls of %d", s.Calls, b.N)
	}
}
