package otelcoltest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Span is one span as the collector received it.
type Span struct {
	Resource     map[string]any // attributes: string, int64, bool, float64
	Scope        string
	TraceID      string // hex
	SpanID       string
	ParentSpanID string // "" for a root
	Name         string
	Kind         int
	Start, End   time.Time
	Attrs        map[string]any
	Events       []Event
	StatusCode   int // 0 unset, 1 ok, 2 error
	StatusMsg    string
}

// Duration is the span's.
func (s *Span) Duration() time.Duration { return s.End.Sub(s.Start) }

// Event is a span event.
type Event struct {
	Name  string
	Time  time.Time
	Attrs map[string]any
}

// Point is one metric data point, with its metric's name, unit and resource.
type Point struct {
	Resource    map[string]any
	Metric      string
	Unit        string
	Kind        string // "sum", "gauge", "histogram" or "exponentialHistogram"
	Monotonic   bool
	Temporality int // 1 delta, 2 cumulative
	Attrs       map[string]any
	Start, Time time.Time
	Value       float64 // sum and gauge
	Count       uint64  // histograms
	Sum         float64
	Min, Max    *float64
	Bounds      []float64 // explicit histogram
	Buckets     []uint64  // explicit: one more than Bounds; exponential: the positive ones
	Scale       int       // exponential
	ZeroCount   uint64
	Offset      int
}

// The OTLP JSON encoding (what the file exporter writes): 64-bit integers as strings.
type (
	jsonKV struct {
		Key   string    `json:"key"`
		Value jsonValue `json:"value"`
	}
	jsonValue struct {
		String *string   `json:"stringValue"`
		Int    *string   `json:"intValue"`
		Bool   *bool     `json:"boolValue"`
		Double *float64  `json:"doubleValue"`
		Array  *struct { // kept as its text
			Values []jsonValue `json:"values"`
		} `json:"arrayValue"`
	}
	jsonResource struct {
		Attributes []jsonKV `json:"attributes"`
	}
	jsonScope struct {
		Name string `json:"name"`
	}
)

func attrs(kvs []jsonKV) map[string]any {
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = kv.Value.any()
	}
	return m
}

func (v jsonValue) any() any {
	switch {
	case v.String != nil:
		return *v.String
	case v.Int != nil:
		n, _ := strconv.ParseInt(*v.Int, 10, 64)
		return n
	case v.Bool != nil:
		return *v.Bool
	case v.Double != nil:
		return *v.Double
	case v.Array != nil:
		var out []any
		for _, x := range v.Array.Values {
			out = append(out, x.any())
		}
		return out
	}
	return nil
}

// u64 is an OTLP JSON 64-bit integer: a string, or a number.
type u64 uint64

func (n *u64) UnmarshalJSON(b []byte) error {
	s := string(bytes.Trim(b, `"`))
	if s == "" || s == "null" {
		*n = 0
		return nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	*n = u64(v)
	return err
}

func unixNano(n u64) time.Time { return time.Unix(0, int64(n)) }

func parseSpans(b []byte) ([]Span, error) {
	var out []Span
	err := eachLine(b, func(line []byte) error {
		var req struct {
			ResourceSpans []struct {
				Resource   jsonResource `json:"resource"`
				ScopeSpans []struct {
					Scope jsonScope `json:"scope"`
					Spans []struct {
						TraceID      string   `json:"traceId"`
						SpanID       string   `json:"spanId"`
						ParentSpanID string   `json:"parentSpanId"`
						Name         string   `json:"name"`
						Kind         int      `json:"kind"`
						Start        u64      `json:"startTimeUnixNano"`
						End          u64      `json:"endTimeUnixNano"`
						Attributes   []jsonKV `json:"attributes"`
						Events       []struct {
							Time       u64      `json:"timeUnixNano"`
							Name       string   `json:"name"`
							Attributes []jsonKV `json:"attributes"`
						} `json:"events"`
						Status struct {
							Code    int    `json:"code"`
							Message string `json:"message"`
						} `json:"status"`
					} `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			return err
		}
		for _, rs := range req.ResourceSpans {
			res := attrs(rs.Resource.Attributes)
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					sp := Span{Resource: res, Scope: ss.Scope.Name, TraceID: s.TraceID, SpanID: s.SpanID, ParentSpanID: s.ParentSpanID,
						Name: s.Name, Kind: s.Kind, Start: unixNano(s.Start), End: unixNano(s.End), Attrs: attrs(s.Attributes),
						StatusCode: s.Status.Code, StatusMsg: s.Status.Message}
					for _, e := range s.Events {
						sp.Events = append(sp.Events, Event{Name: e.Name, Time: unixNano(e.Time), Attrs: attrs(e.Attributes)})
					}
					out = append(out, sp)
				}
			}
		}
		return nil
	})
	return out, err
}

type jsonPoint struct {
	Attributes []jsonKV  `json:"attributes"`
	Start      u64       `json:"startTimeUnixNano"`
	Time       u64       `json:"timeUnixNano"`
	AsInt      *string   `json:"asInt"`
	AsDouble   *float64  `json:"asDouble"`
	Count      u64       `json:"count"`
	Sum        float64   `json:"sum"`
	Min        *float64  `json:"min"`
	Max        *float64  `json:"max"`
	Buckets    []u64     `json:"bucketCounts"`
	Bounds     []float64 `json:"explicitBounds"`
	Scale      int       `json:"scale"`
	ZeroCount  u64       `json:"zeroCount"`
	Positive   struct {
		Offset  int   `json:"offset"`
		Buckets []u64 `json:"bucketCounts"`
	} `json:"positive"`
}

type jsonData struct {
	DataPoints  []jsonPoint `json:"dataPoints"`
	Temporality int         `json:"aggregationTemporality"`
	Monotonic   bool        `json:"isMonotonic"`
}

func parsePoints(b []byte) ([]Point, error) {
	var out []Point
	err := eachLine(b, func(line []byte) error {
		var req struct {
			ResourceMetrics []struct {
				Resource     jsonResource `json:"resource"`
				ScopeMetrics []struct {
					Metrics []struct {
						Name      string    `json:"name"`
						Unit      string    `json:"unit"`
						Sum       *jsonData `json:"sum"`
						Gauge     *jsonData `json:"gauge"`
						Histogram *jsonData `json:"histogram"`
						ExpHist   *jsonData `json:"exponentialHistogram"`
					} `json:"metrics"`
				} `json:"scopeMetrics"`
			} `json:"resourceMetrics"`
		}
		if err := json.Unmarshal(line, &req); err != nil {
			return err
		}
		for _, rm := range req.ResourceMetrics {
			res := attrs(rm.Resource.Attributes)
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					kind, data := "", (*jsonData)(nil)
					switch {
					case m.Sum != nil:
						kind, data = "sum", m.Sum
					case m.Gauge != nil:
						kind, data = "gauge", m.Gauge
					case m.Histogram != nil:
						kind, data = "histogram", m.Histogram
					case m.ExpHist != nil:
						kind, data = "exponentialHistogram", m.ExpHist
					default:
						continue
					}
					for _, dp := range data.DataPoints {
						p := Point{Resource: res, Metric: m.Name, Unit: m.Unit, Kind: kind, Monotonic: data.Monotonic,
							Temporality: data.Temporality, Attrs: attrs(dp.Attributes), Start: unixNano(dp.Start),
							Time: unixNano(dp.Time), Count: uint64(dp.Count), Sum: dp.Sum, Min: dp.Min, Max: dp.Max,
							Bounds: dp.Bounds, Scale: dp.Scale, ZeroCount: uint64(dp.ZeroCount)}
						switch {
						case dp.AsInt != nil:
							n, _ := strconv.ParseInt(*dp.AsInt, 10, 64)
							p.Value = float64(n)
						case dp.AsDouble != nil:
							p.Value = *dp.AsDouble
						}
						bs := dp.Buckets
						if kind == "exponentialHistogram" {
							bs, p.Offset = dp.Positive.Buckets, dp.Positive.Offset
						}
						for _, n := range bs {
							p.Buckets = append(p.Buckets, uint64(n))
						}
						out = append(out, p)
					}
				}
			}
		}
		return nil
	})
	return out, err
}

func eachLine(b []byte, f func([]byte) error) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for n := 1; sc.Scan(); n++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		if err := f(sc.Bytes()); err != nil {
			return fmt.Errorf("line %d of what the collector wrote: %v", n, err)
		}
	}
	return sc.Err()
}
