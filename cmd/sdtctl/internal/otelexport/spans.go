package otelexport

import (
	"context"
	"encoding/hex"
	"math"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/gosdt/gosdt/cmd/sdtctl/internal/calls"
	"github.com/gosdt/gosdt/internal/ctlproto"
)

// nilError is what an fbt probe carries for a nil error (package sdt).
const nilError = "<nil>"

// spans is the calls.Sink that makes a span of every call, through the SDK's tracer:
// its sampler decides at the call's entry, before any attribute is made.
type spans struct {
	tracer trace.Tracer
	asm    *calls.Assembler // its clock
	locs   *locations
	infos  map[*calls.Probe]*probeInfo

	// counted by the assembler's goroutine, read by Summary after it ends
	sampledOut, events, outside uint64
}

// callSpan is a call's span, and the span of the program's that it joined (from a
// context.Context argument), if any.
type callSpan struct {
	span   trace.Span
	joined trace.SpanID
	skip   int // the entry's argument that joined it: not an attribute
	// start, and the latest end of its children: a call's span holds its
	// children's, which the clock (recalibrated between batches) or the counters of
	// two CPUs may put a few nanoseconds outside it
	start, kidsEnd time.Time
}

// probeInfo is what a probe's spans and events are given, made once.
type probeInfo struct {
	name string
	code []attribute.KeyValue // code.namespace, code.function
	keys []attribute.Key      // of each argument
}

func (s *spans) info(p *calls.Probe) *probeInfo {
	if in := s.infos[p]; in != nil {
		return in
	}
	in := &probeInfo{name: spanName(p)}
	if ns, fn := codeNames(p.Module, p.Function); fn != "" {
		in.code = append(in.code, attribute.String("code.namespace", ns), attribute.String("code.function", fn))
	}
	for i, a := range p.Args {
		in.keys = append(in.keys, attribute.Key(attrKey(p.Provider, a.Name, p.Kind == calls.Return && i >= p.Results)))
	}
	s.infos[p] = in
	return in
}

func (s *spans) time(ticks uint64) time.Time { return time.Unix(0, s.asm.UnixNano(ticks)) }

func (s *spans) Begin(c *calls.Call) {
	p := c.Probe()
	in := s.info(p)
	ctx := context.Background()
	cs := &callSpan{start: s.time(c.Start)}
	if c.Parent != nil {
		if parent, _ := c.Parent.Data.(*callSpan); parent != nil {
			ctx = trace.ContextWithSpan(ctx, parent.span)
			if cs.start.Before(parent.start) {
				cs.start = parent.start
			}
		}
	}
	skip := -1
	if c.Entry != nil {
		if i, sc, ok := remoteParent(c.Entry); ok {
			skip = i
			if !joinedAbove(c.Parent, sc.SpanID()) {
				ctx = trace.ContextWithRemoteSpanContext(context.Background(), sc)
			}
			cs.joined = sc.SpanID()
		}
	}
	_, cs.span = s.tracer.Start(ctx, in.name, trace.WithTimestamp(cs.start), trace.WithSpanKind(trace.SpanKindInternal))
	c.Data = cs
	if !cs.span.IsRecording() {
		s.sampledOut++
		return
	}
	cs.skip = skip
}

// End gives the span every attribute at once (the SDK deduplicates at each call):
// where the function is, its goroutine, the entry's arguments and the return's.
func (s *spans) End(c *calls.Call) {
	cs, _ := c.Data.(*callSpan)
	if cs == nil {
		return
	}
	end := s.time(c.End)
	if end.Before(cs.start) {
		end = cs.start
	}
	if end.Before(cs.kidsEnd) {
		end = cs.kidsEnd
	}
	if c.Parent != nil {
		if parent, _ := c.Parent.Data.(*callSpan); parent != nil && end.After(parent.kidsEnd) {
			parent.kidsEnd = end
		}
	}
	if cs.span.IsRecording() {
		in := s.info(c.Probe())
		attrs := make([]attribute.KeyValue, 0, len(in.code)+4+len(in.keys)+8)
		attrs = append(attrs, in.code...)
		attrs = append(attrs, s.locs.of(c)...)
		if c.Goroutine != 0 {
			attrs = append(attrs, attribute.Int64("gosdt.goroutine", int64(c.Goroutine)))
		}
		if c.Entry != nil {
			attrs = appendArgs(attrs, c.Entry, in.keys, 0, cs.skip)
		}
		if e := c.Return; e != nil {
			p := e.Probe
			attrs = appendArgs(attrs, e, s.info(p).keys, p.Results, -1)
			switch {
			case p.Kind == calls.Timed:
				attrs = append(attrs, attribute.String("gosdt.probe", p.Name))
			case c.Entry == nil:
				attrs = append(attrs, attribute.Bool("gosdt.entry_unseen", true))
			}
			switch {
			case e.Panicking():
				cs.span.SetStatus(codes.Error, "panic")
				cs.span.AddEvent("exception", trace.WithTimestamp(end),
					trace.WithAttributes(attribute.String("exception.type", "panic"), attribute.Bool("exception.escaped", true)))
			default:
				if msg, ok := returnedError(e); ok {
					cs.span.SetStatus(codes.Error, msg)
					cs.span.AddEvent("exception", trace.WithTimestamp(end),
						trace.WithAttributes(attribute.String("exception.message", msg)))
				}
			}
		}
		if c.Unfinished {
			attrs = append(attrs, attribute.Bool("gosdt.unfinished", true))
		}
		cs.span.SetAttributes(attrs...)
	}
	cs.span.End(trace.WithTimestamp(end))
	c.Data = nil
}

func (s *spans) Event(c *calls.Call, e *calls.Event) {
	var cs *callSpan
	if c != nil {
		cs, _ = c.Data.(*callSpan)
	}
	if cs == nil {
		s.outside++
		return
	}
	if !cs.span.IsRecording() {
		return
	}
	s.events++
	in := s.info(e.Probe)
	cs.span.AddEvent(e.Probe.Name, trace.WithTimestamp(s.time(e.Ticks)), trace.WithAttributes(appendArgs(nil, e, in.keys, 0, -1)...))
}

// appendArgs appends the event's arguments from from on as attributes, but skip.
func appendArgs(attrs []attribute.KeyValue, e *calls.Event, keys []attribute.Key, from, skip int) []attribute.KeyValue {
	p := e.Probe
	for i := from; i < e.N() && i < len(keys); i++ {
		if i == skip {
			continue
		}
		v := e.Arg(i)
		k := keys[i]
		switch v.Kind {
		case ctlproto.ValInt:
			attrs = append(attrs, k.Int64(v.Int))
		case ctlproto.ValUint:
			switch {
			case i < len(p.Args) && pointerType(p.Args[i].Type):
				attrs = append(attrs, k.String("0x"+strconv.FormatUint(v.Uint, 16)))
			case v.Uint <= math.MaxInt64:
				attrs = append(attrs, k.Int64(int64(v.Uint)))
			default:
				attrs = append(attrs, k.String(strconv.FormatUint(v.Uint, 10)))
			}
		case ctlproto.ValBool:
			attrs = append(attrs, k.Bool(v.Bool))
		case ctlproto.ValFloat:
			attrs = append(attrs, k.Float64(v.Float))
		case ctlproto.ValString:
			attrs = append(attrs, k.String(v.Str))
		}
	}
	return attrs
}

// returnedError is the text of the first non-nil error among a return's results.
func returnedError(e *calls.Event) (string, bool) {
	p := e.Probe
	for i := p.Results; i < e.N() && i < len(p.Args); i++ {
		if p.Args[i].Type != "error" || p.Kinds[i] != ctlproto.ValString {
			continue
		}
		// "error" is how a process that predates error texts carries every error.
		if v := e.Arg(i).Str; v != nilError && v != "error" {
			return v, true
		}
	}
	return "", false
}

// remoteParent is the span context an entry's argument carries as a W3C traceparent
// (a context.Context of a program that imports sdt/otelsdt), and the argument's index.
func remoteParent(e *calls.Event) (int, trace.SpanContext, bool) {
	p := e.Probe
	for i := 0; i < e.N() && i < len(p.Args); i++ {
		// Cheap checks first: an interface carried as text, of a traceparent's length.
		if p.Kinds[i] != ctlproto.ValString || p.Args[i].Type == "string" || e.Len(i) != 55 {
			continue
		}
		if sc, ok := parseTraceparent(e.Arg(i).Str); ok {
			return i, sc, true
		}
	}
	return -1, trace.SpanContext{}, false
}

// parseTraceparent parses version 00 of a W3C traceparent.
func parseTraceparent(s string) (trace.SpanContext, bool) {
	if len(s) != 55 || s[:3] != "00-" || s[35] != '-' || s[52] != '-' {
		return trace.SpanContext{}, false
	}
	var tid trace.TraceID
	var sid trace.SpanID
	var flags [1]byte
	if _, err := hex.Decode(tid[:], []byte(s[3:35])); err != nil {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(sid[:], []byte(s[36:52])); err != nil {
		return trace.SpanContext{}, false
	}
	if _, err := hex.Decode(flags[:], []byte(s[53:55])); err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.TraceFlags(flags[0]), Remote: true})
	return sc, sc.IsValid()
}

// joinedAbove reports whether a call enclosing c (c and its parents) joined the
// program's span sid: then a call inside it with the same context is its child, not
// the program span's.
func joinedAbove(c *calls.Call, sid trace.SpanID) bool {
	for ; c != nil; c = c.Parent {
		if cs, _ := c.Data.(*callSpan); cs != nil && cs.joined == sid {
			return true
		}
	}
	return false
}

// locations say where a probe's function is, from the process's list of probes:
// code.filepath and code.lineno.
type locations struct {
	mu     sync.Mutex
	byFunc map[string]loc // provider:module:function of fbt-like probes: the entry's first site
	byName map[string]loc // a probe's first site
	missed func()         // asks for the list again: probes appeared that it lacks
}

type loc struct {
	file string
	line int
}

// set learns the sites of probes (a list reply).
func (l *locations) set(probes []ctlproto.Probe) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.byFunc == nil {
		l.byFunc, l.byName = map[string]loc{}, map[string]loc{}
	}
	for _, p := range probes {
		var first loc
		for _, s := range p.Sites {
			if s.File != "" && (first.file == "" || s.Line < first.line) {
				first = loc{s.File, s.Line}
			}
		}
		if first.file == "" {
			continue
		}
		l.byName[p.Name] = first
		if fn, name, ok := cutLast(p.Name); ok && name == "entry" {
			l.byFunc[fn] = first
		}
	}
}

func cutLast(name string) (string, string, bool) {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == ':' {
			return name[:i], name[i+1:], true
		}
	}
	return "", "", false
}

// of is the location of a call: its function's for a function, its probe's first
// site for a timed block.
func (l *locations) of(c *calls.Call) []attribute.KeyValue {
	p := c.Probe()
	l.mu.Lock()
	at, ok := loc{}, false
	if p.Kind == calls.Entry || p.Kind == calls.Return {
		at, ok = l.byFunc[p.Func()]
	}
	if !ok {
		at, ok = l.byName[p.Name]
	}
	l.mu.Unlock()
	if !ok {
		if l.missed != nil {
			l.missed()
		}
		return nil
	}
	return []attribute.KeyValue{attribute.String("code.filepath", at.file), attribute.Int("code.lineno", at.line)}
}
