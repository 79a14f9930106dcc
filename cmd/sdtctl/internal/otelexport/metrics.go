package otelexport

import (
	"context"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/quantize"
)

// Metric names.
const (
	MetricFires   = "gosdt.probe.fires"   // every fire of every probe, by the stat key
	MetricLatency = "gosdt.probe.latency" // latency_ns of return and latency probes, in ns
	MetricDropped = "gosdt.export.dropped"
	MetricSpans   = "gosdt.export.spans"
)

// histBounds are the upper bounds of the explicit histogram's buckets: 2^k-1 ns, so
// that bucket k holds exactly the integers of the process's power-of-two bucket
// [2^(k-1), 2^k) (an OTLP bucket includes its upper bound), up to 2^40 ns (18 min);
// above, the last bucket.
var histBounds = func() []float64 {
	b := []float64{0}
	for k := 1; k <= 40; k++ {
		b = append(b, float64(uint64(1)<<k-1))
	}
	return b
}()

// StatStream is one of a process's stat streams, whose snapshots become metrics.
type StatStream struct {
	Spec  string
	SpecN int    // its index among the export's specs
	By    string // probe, site, or an argument's name
	Timed bool   // its rows fold latency_ns: they are the latency histograms
	// ByKey and ByKind are the attribute of an argument key (By) and the kind of its
	// values (ctlproto.ValInt ..).
	ByKey  string
	ByKind byte

	start time.Time
	last  *ctlproto.Stat
}

// producer makes the metrics of one process, at each export of its reader: the last
// snapshot of each of its stat streams, and what the export dropped.
type producer struct {
	mu          sync.Mutex
	streams     []*StatStream
	owns        func(spec int, probe string) bool
	exponential bool
	start       time.Time
	exportStats func() exportCounts
}

// exportCounts is what the export of one process sent and lost so far.
type exportCounts struct {
	spans                                     uint64
	processBuffers, exporterQueue, exportFail uint64
}

var scope = instrumentation.Scope{Name: "github.com/gosdt/gosdt/cmd/sdtctl"}

func (p *producer) add(s *StatStream) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	s.start = time.Now()
	p.streams = append(p.streams, s)
	return len(p.streams) - 1
}

func (p *producer) snapshot(i int, st *ctlproto.Stat) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.streams[i].last = st
}

func (p *producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fires := metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true}
	hist := metricdata.Histogram[int64]{Temporality: metricdata.CumulativeTemporality}
	ehist := metricdata.ExponentialHistogram[int64]{Temporality: metricdata.CumulativeTemporality}
	for _, s := range p.streams {
		st := s.last
		if st == nil {
			continue
		}
		at := time.Unix(0, st.Time)
		for _, r := range st.Rows {
			if s.By == "probe" && p.owns != nil && !p.owns(s.SpecN, r.Key) {
				continue // another spec's stream has this probe
			}
			set := s.attrs(r.Key)
			if !s.Timed {
				fires.DataPoints = append(fires.DataPoints, metricdata.DataPoint[int64]{Attributes: set, StartTime: s.start, Time: at, Value: r.Count})
				continue
			}
			if p.exponential {
				ehist.DataPoints = append(ehist.DataPoints, exponential(r, set, s.start, at))
			} else {
				hist.DataPoints = append(hist.DataPoints, explicit(r, set, s.start, at))
			}
		}
	}
	var ms []metricdata.Metrics
	if len(fires.DataPoints) > 0 {
		ms = append(ms, metricdata.Metrics{Name: MetricFires, Description: "Fires of the probes, by probe (or the export's --by key)", Unit: "{fire}", Data: fires})
	}
	if len(hist.DataPoints) > 0 {
		ms = append(ms, metricdata.Metrics{Name: MetricLatency, Description: "latency_ns of the calls and timed blocks", Unit: "ns", Data: hist})
	}
	if len(ehist.DataPoints) > 0 {
		ms = append(ms, metricdata.Metrics{Name: MetricLatency, Description: "latency_ns of the calls and timed blocks", Unit: "ns", Data: ehist})
	}
	if p.exportStats != nil {
		c := p.exportStats()
		now := time.Now()
		where := func(w string, n uint64) metricdata.DataPoint[int64] {
			return metricdata.DataPoint[int64]{Attributes: attribute.NewSet(attribute.String("gosdt.where", w)), StartTime: p.start, Time: now, Value: int64(n)}
		}
		ms = append(ms,
			metricdata.Metrics{Name: MetricDropped, Description: "Events and spans the export lost: in the process's buffers, in the exporter's queue, in exports that failed",
				Unit: "{event}", Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
					DataPoints: []metricdata.DataPoint[int64]{where("process_buffer", c.processBuffers), where("exporter_queue", c.exporterQueue), where("export_failed", c.exportFail)}}},
			metricdata.Metrics{Name: MetricSpans, Description: "Spans exported", Unit: "{span}", Data: metricdata.Sum[int64]{Temporality: metricdata.CumulativeTemporality, IsMonotonic: true,
				DataPoints: []metricdata.DataPoint[int64]{{StartTime: p.start, Time: now, Value: int64(c.spans)}}}})
	}
	if len(ms) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{{Scope: scope, Metrics: ms}}, nil
}

// attrs are the attributes of a row's key.
func (s *StatStream) attrs(key string) attribute.Set {
	switch s.By {
	case "probe":
		return probeAttrs(key, nil)
	case "site":
		// "provider:module:function:name 0xADDR FILE:LINE", or "... (not attributed to a site)"
		name, rest, _ := strings.Cut(key, " ")
		var extra []attribute.KeyValue
		if _, at, ok := strings.Cut(rest, " "); ok && strings.HasPrefix(rest, "0x") {
			if i := strings.LastIndexByte(at, ':'); i > 0 {
				if line, err := strconv.Atoi(at[i+1:]); err == nil {
					extra = append(extra, attribute.String("code.filepath", at[:i]), attribute.Int("code.lineno", line))
				}
			}
		}
		return probeAttrs(name, extra)
	}
	kv := attribute.String(s.ByKey, key)
	switch s.ByKind {
	case ctlproto.ValInt, ctlproto.ValUint:
		if n, err := strconv.ParseInt(key, 10, 64); err == nil {
			kv = attribute.Int64(s.ByKey, n)
		}
	case ctlproto.ValBool:
		if b, err := strconv.ParseBool(key); err == nil {
			kv = attribute.Bool(s.ByKey, b)
		}
	}
	return attribute.NewSet(attribute.String("gosdt.spec", s.Spec), kv)
}

func probeAttrs(name string, extra []attribute.KeyValue) attribute.Set {
	kvs := append([]attribute.KeyValue{attribute.String("gosdt.probe", name)}, extra...)
	parts := strings.SplitN(name, ":", 4)
	if len(parts) == 4 {
		if ns, fn := codeNames(parts[1], parts[2]); fn != "" {
			kvs = append(kvs, attribute.String("code.namespace", ns), attribute.String("code.function", fn))
		}
	}
	return attribute.NewSet(kvs...)
}

// explicit is a row's histogram with the bounds histBounds.
func explicit(r ctlproto.Row, set attribute.Set, start, at time.Time) metricdata.HistogramDataPoint[int64] {
	counts := make([]uint64, len(histBounds)+1)
	for _, b := range r.Hist {
		i := 0 // zero and below
		if b.Low > 0 {
			i = min(quantize.Bucket(b.Low)-64, len(histBounds))
		}
		counts[i] += b.Count
	}
	return metricdata.HistogramDataPoint[int64]{Attributes: set, StartTime: start, Time: at, Count: uint64(r.Count),
		Bounds: histBounds, BucketCounts: counts, Sum: r.Sum, Min: metricdata.NewExtrema(r.Min), Max: metricdata.NewExtrema(r.Max)}
}

// exponential is a row's histogram at scale 0, whose bucket i is (2^i, 2^(i+1)]: the
// process's bucket [2^i, 2^(i+1)) is put there (only a value of exactly 2^i is then
// one bucket too high; count, sum, minimum and maximum are exact).
func exponential(r ctlproto.Row, set attribute.Set, start, at time.Time) metricdata.ExponentialHistogramDataPoint[int64] {
	dp := metricdata.ExponentialHistogramDataPoint[int64]{Attributes: set, StartTime: start, Time: at, Count: uint64(r.Count),
		Sum: r.Sum, Min: metricdata.NewExtrema(r.Min), Max: metricdata.NewExtrema(r.Max), Scale: 0}
	lo, hi := math.MaxInt32, -1
	for _, b := range r.Hist {
		if b.Low > 0 {
			k := quantize.Bucket(b.Low) - 65
			lo, hi = min(lo, k), max(hi, k)
		}
	}
	if hi >= 0 {
		dp.PositiveBucket = metricdata.ExponentialBucket{Offset: int32(lo), Counts: make([]uint64, hi-lo+1)}
	}
	for _, b := range r.Hist {
		switch {
		case b.Low > 0:
			dp.PositiveBucket.Counts[quantize.Bucket(b.Low)-65-lo] += b.Count
		case b.Low == 0:
			dp.ZeroCount += b.Count
		default: // latencies are not negative: the lowest bucket holds them
			dp.ZeroCount += b.Count
		}
	}
	return dp
}
