package otelexport

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/gosdt/gosdt/cmd/sdtctl/internal/calls"
	"github.com/gosdt/gosdt/internal/ctlproto"
)

// Process is the export of one traced process: its resource, its tracer and meter
// providers over the shared exporters, the assembler that makes calls of its trace
// streams' events, and the metrics of its stat streams.
//
// Trace streams hand it their batches (Trace), each from its own goroutine; one
// goroutine of its own orders them and builds the spans, so that a reader never waits
// for a span to be built longer than the batches queued before its own take: behind
// them, the process's buffers fill and drop, counted there.
type Process struct {
	Pid   int
	tp    *sdktrace.TracerProvider
	mp    *sdkmetric.MeterProvider
	q     *queue
	pm    *processMetrics
	asm   *calls.Assembler
	sink  *spans
	prod  *producer
	locs  *locations
	start time.Time

	in    chan batch
	ended chan struct{}

	mu     sync.Mutex
	owners map[string]int // probe name to the spec whose streams' data of it are used
	drops  []uint64       // per trace stream: events its process buffers dropped, all told so far
	specOf []int          // per trace stream: its spec

	received atomic.Uint64
}

type batch struct {
	stream int
	evs    []*calls.Event
	clock  *ctlproto.Clock
}

// ProcessOptions shape one process's export.
type ProcessOptions struct {
	Assembler calls.Options
	Relist    func() // asks the session for the process's probes again (SetProbes)
}

// NewProcess starts the export of a process described by res.
func (e *Exporters) NewProcess(pid int, res *resource.Resource, o ProcessOptions) *Process {
	p := &Process{Pid: pid, start: time.Now(), in: make(chan batch, 64), ended: make(chan struct{}), owners: map[string]int{}}
	p.locs = &locations{missed: o.Relist}
	p.sink = &spans{locs: p.locs, infos: map[*calls.Probe]*probeInfo{}}
	p.asm = calls.NewAssembler(p.sink, o.Assembler)
	p.sink.asm = p.asm
	if e.spans != nil {
		p.q = newQueue(e.spans, e.cfg.Queue)
		p.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSampler(e.cfg.Sampler), sdktrace.WithSpanProcessor(p.q))
	} else {
		p.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.NeverSample()))
	}
	p.sink.tracer = p.tp.Tracer(scope.Name)
	p.prod = &producer{start: p.start, exponential: e.cfg.Exponential, owns: p.owns, exportStats: p.exportCounts}
	if e.metrics != nil {
		p.pm = &processMetrics{Exporter: e.metrics}
		p.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(p.pm, sdkmetric.WithInterval(e.cfg.Interval), sdkmetric.WithProducer(p.prod))))
	}
	go p.run()
	return p
}

// run orders and pairs the events as they come, and lets the streams' silence
// release what they held back.
func (p *Process) run() {
	defer close(p.ended)
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case b, ok := <-p.in:
			if !ok {
				p.asm.Close()
				return
			}
			p.asm.Add(b.stream, b.evs, b.clock, time.Now())
		case now := <-tick.C:
			p.asm.Flush(now)
		}
	}
}

// SetProbes tells the process's probes (a list reply): where their functions are.
func (p *Process) SetProbes(probes []ctlproto.Probe) { p.locs.set(probes) }

// AddTrace registers the trace stream of the export's spec number spec; its id is
// what Trace takes.
func (p *Process) AddTrace(spec int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drops = append(p.drops, 0)
	p.specOf = append(p.specOf, spec)
	return len(p.drops) - 1
}

// Claim makes spec the owner of the probes names (a list of what it matches) that no
// spec before it claimed: what the export's specs match in their order.
func (p *Process) Claim(spec int, names []string) {
	for _, n := range names {
		p.owns(spec, n)
	}
}

// AddStat registers a stat stream; its id is what Stat takes.
func (p *Process) AddStat(s *StatStream) int { return p.prod.add(s) }

// owns reports whether the streams of spec are those whose data about probe are
// used: the first spec seen to match it, so that specs that overlap do not count or
// trace a fire twice.
func (p *Process) owns(spec int, probe string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.owners[probe]
	if !ok {
		p.owners[probe] = spec
		return true
	}
	return o == spec
}

// Trace takes an events batch of trace stream id, read by er (which learns its
// descriptions): its records are copied, so r may be reused when it returns.
func (p *Process) Trace(id int, er *ctlproto.EventReader, descs map[*ctlproto.Desc]*calls.Probe, r *ctlproto.Response) error {
	er.Take(r)
	p.mu.Lock()
	p.drops[id] = r.Drops
	p.mu.Unlock()
	if len(r.Records) == 0 {
		return nil
	}
	recs := bytes.Clone(r.Records)
	// The batch's events in one allocation, as its records are in one: they are
	// released together, once the last of them is done with.
	n := 0
	for b := recs; len(b) >= ctlproto.RecordHead; n++ {
		size := ctlproto.Record(b).Size()
		if size < ctlproto.RecordHead || size > len(b) {
			break // Each says what is wrong
		}
		b = b[size:]
	}
	store := make([]calls.Event, 0, n)
	evs := make([]*calls.Event, 0, n)
	err := er.Each(recs, func(rec ctlproto.Record, ds *ctlproto.Desc, _ *ctlproto.Layout) bool {
		pr := descs[ds]
		if pr == nil {
			pr = calls.NewProbe(ds)
			if !p.owns(p.spec(id), ds.Probe) {
				pr = &calls.Probe{} // another stream's: skipped
			}
			descs[ds] = pr
		}
		if pr.Name != "" && len(store) < cap(store) {
			store = append(store, calls.Event{})
			e := &store[len(store)-1]
			e.Set(pr, rec, id)
			evs = append(evs, e)
		}
		return true
	})
	p.received.Add(uint64(len(evs)))
	clock := *er.Clock()
	p.in <- batch{stream: id, evs: evs, clock: &clock}
	return err
}

func (p *Process) spec(trace int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.specOf[trace]
}

// TraceEnd takes the end of trace stream id: its final drops.
func (p *Process) TraceEnd(id int, r *ctlproto.Response) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.drops[id] = r.Drops
}

// Stat takes a snapshot of stat stream id.
func (p *Process) Stat(id int, st *ctlproto.Stat) { p.prod.snapshot(id, st) }

func (p *Process) processDrops() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n uint64
	for _, d := range p.drops {
		n += d
	}
	return n
}

func (p *Process) exportCounts() exportCounts {
	c := exportCounts{processBuffers: p.processDrops()}
	if p.q != nil {
		c.spans, c.exporterQueue, c.exportFail = p.q.exported.Load(), p.q.dropped.Load(), p.q.failed.Load()
	}
	return c
}

// Summary is what the export of a process did.
type Summary struct {
	Pid            int    `json:"pid"`
	Events         uint64 `json:"events"`          // records received
	Calls          uint64 `json:"calls"`           // calls seen
	Spans          uint64 `json:"spans"`           // spans exported
	SampledOut     uint64 `json:"sampled_out"`     // calls the sampler left out
	SpanEvents     uint64 `json:"span_events"`     // probes fired inside a call: events of its span
	Outside        uint64 `json:"outside_calls"`   // probes fired outside any call (metrics only)
	Unpaired       uint64 `json:"entry_unseen"`    // returns whose entry was not seen
	Unfinished     uint64 `json:"unfinished"`      // calls whose return never came
	Late           uint64 `json:"late"`            // events that came after their window
	Early          uint64 `json:"early"`           // events released before their window passed: too many held
	OpenLimit      uint64 `json:"open_limit"`      // entries not opened: too many calls open
	ProcessBuffers uint64 `json:"dropped_process"` // events the process's buffers dropped
	ExporterQueue  uint64 `json:"dropped_queue"`   // spans the exporter's queue dropped
	ExportFailed   uint64 `json:"export_failed"`   // spans in exports that failed
	MetricsFailed  uint64 `json:"metric_exports_failed"`
	// NoMetricsReceiver is the metric exports the endpoint refused as taking no
	// metrics (a traces-only backend): said once, not a failure.
	NoMetricsReceiver uint64 `json:"metric_exports_no_receiver,omitempty"`
	LastError         string `json:"last_error,omitempty"`
}

// Close ends the export of the process once its streams have ended: what they sent
// is made spans, the calls still open end unfinished, and what is queued is sent,
// waiting up to flush for the collector (what it could not send then is counted
// failed).
func (p *Process) Close(flush time.Duration) Summary {
	close(p.in)
	<-p.ended
	ctx, cancel := context.WithTimeout(context.Background(), flush)
	defer cancel()
	// Spans and metrics are sent at once: a collector that does not answer costs the
	// wait once. The queue is shut down first, itself: the provider's Shutdown skips
	// its processors once ctx is done, and the counts must be final.
	var wg sync.WaitGroup
	wg.Go(func() {
		if p.q != nil {
			p.q.Shutdown(ctx)
		}
		p.tp.Shutdown(ctx)
	})
	if p.mp != nil {
		wg.Go(func() { p.mp.Shutdown(ctx) })
	}
	wg.Wait()
	a := p.asm.Stats
	s := Summary{Pid: p.Pid, Events: p.received.Load(), Calls: a.Calls, SampledOut: p.sink.sampledOut,
		SpanEvents: p.sink.events, Outside: p.sink.outside, Unpaired: a.Unpaired, Unfinished: a.Unfinished,
		Late: a.Late, Early: a.Early, OpenLimit: a.OpenLimit, ProcessBuffers: p.processDrops()}
	if p.q != nil {
		s.Spans, s.ExporterQueue, s.ExportFailed = p.q.exported.Load(), p.q.dropped.Load(), p.q.failed.Load()
		if err := p.q.lastErr.Load(); err != nil {
			s.LastError = (*err).Error()
		}
	}
	if p.pm != nil {
		s.MetricsFailed, s.NoMetricsReceiver = p.pm.failed.Load(), p.pm.noReceiver.Load()
		if err := p.pm.lastErr.Load(); err != nil && s.LastError == "" {
			s.LastError = (*err).Error()
		}
	}
	return s
}
