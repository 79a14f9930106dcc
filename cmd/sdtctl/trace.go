package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

func cmdTrace(args []string, stdout, stderr io.Writer, stop <-chan struct{}) error {
	o := newFlags("trace", stderr, true)
	count := o.fs.Int("c", 0, "stop after `N` events")
	dur := o.fs.Duration("d", 0, "stop after `DURATION`")
	bufsize := o.fs.String("bufsize", "", "`BYTES` of each per-P buffer in the process (k, m, g suffixes; default 4m)")
	where := o.fs.String("where", "", "record only fires whose arguments match `EXPR` (arg0 > 100 && path == \"/api\"), evaluated in the process")
	stack := o.fs.Bool("stack", false, fmt.Sprintf("with each event the Go call stack of the fire (%d frames), as DTrace's ustack()", ctlproto.StackDepth))
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fail(exitUsage, "trace: want one SPEC")
	}
	if err := checkSpecs(pos); err != nil {
		return err
	}
	if *count < 0 {
		return fail(exitUsage, "trace: -c %d: want a count of events", *count)
	}
	if len(*where) > ctlproto.MaxWhere {
		return fail(exitUsage, "trace: --where: %d bytes, at most %d", len(*where), ctlproto.MaxWhere)
	}
	size, err := parseSize(*bufsize)
	if err != nil {
		return fail(exitUsage, "trace: --bufsize: %v", err)
	}
	cls, err := o.targets(false)
	if err != nil {
		return err
	}
	cl := cls[0]
	defer cl.close()
	out := bufio.NewWriterSize(stdout, 256<<10)
	var er ctlproto.EventReader
	p := &printer{w: out, pid: cl.pid, json: o.json, er: &er}
	n := 0
	start := time.Now()
	var bad error
	q := &ctlproto.Request{Op: ctlproto.OpTrace, Spec: pos[0], Count: *count, DurationMS: dur.Milliseconds(), BufSize: size, Where: *where}
	if *stack {
		q.Stack = ctlproto.StackDepth
	}
	end, err := stream(cl, q, stop, func(r *ctlproto.Response) {
		if r.Kind != ctlproto.KindEvents || bad != nil {
			return
		}
		er.Take(r)
		err := er.Each(r.Records, func(rec ctlproto.Record, ds *ctlproto.Desc, l *ctlproto.Layout) bool {
			if *count > 0 && n >= *count {
				return false
			}
			p.print(rec, ds, l, er.Clock())
			n++
			return true
		})
		if err != nil {
			bad = fail(exitError, "pid %d: %v", cl.pid, err)
		}
		// a batch at a time: at a million events a second that is a thousand lines
		// per write, and an interactive trace still shows each event promptly
		out.Flush()
	})
	out.Flush()
	if err == nil {
		err = bad
	}
	if err != nil {
		return err
	}
	el := time.Since(start)
	if o.json {
		printJSON(stdout, map[string]any{"pid": cl.pid, "events": n, "drops": end.Drops, "buffer_drops": end.BufferDrops,
			"delivered": end.Delivered, "filtered": end.Filtered, "seconds": el.Seconds()})
	} else {
		fmt.Fprintf(stderr, "%d events in %.2fs (%.0f/s), %d dropped", n, el.Seconds(), float64(n)/el.Seconds(), end.Drops)
		if end.Drops > 0 {
			fmt.Fprintf(stderr, " (per buffer: %s)", joinUints(end.BufferDrops))
		}
		if *where != "" {
			fmt.Fprintf(stderr, ", %d filtered", end.Filtered)
		}
		fmt.Fprintln(stderr)
	}
	return nil
}

func joinUints(v []uint64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatUint(x, 10)
	}
	return strings.Join(s, " ")
}

// parseSize parses a byte count with an optional k, m or g suffix (powers of 1024);
// "" is 0, the process's default.
func parseSize(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	mul := 1
	switch strings.ToLower(s[len(s)-1:]) {
	case "k":
		mul = 1 << 10
	case "m":
		mul = 1 << 20
	case "g":
		mul = 1 << 30
	}
	if mul > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 || n > ctlproto.MaxBufSize/mul {
		return 0, fmt.Errorf("%q: want a size of 1 to %d bytes, with k, m or g", s, ctlproto.MaxBufSize)
	}
	return n * mul, nil
}

// printer writes events as text lines or JSON objects. Text is made by hand, a
// description's parts once: at millions of events a second, fmt would be most of
// sdtctl's time.
type printer struct {
	w      *bufio.Writer
	pid    int
	json   bool
	er     *ctlproto.EventReader // names the frames of stacks
	frames map[uint64][]byte     // a frame's text: "func file:line"
	texts  map[*ctlproto.Desc]*descText
	sec    int64  // the second whose clock time is secTx
	secTx  []byte // "15:04:05." (JSON: "2006-01-02T15:04:05.")
	zone   []byte // JSON: "Z07:00"
}

// descText is a description's text: its probe name and argument prefixes.
type descText struct {
	head     []byte   // " provider:module:function:name"
	args     [][]byte // " name="
	jsonHead []byte   // `,"probe":"...","site":N`
	jsonArgs [][]byte // `{"name":"...","type":"...","value":`
}

func (p *printer) text(ds *ctlproto.Desc) *descText {
	if t := p.texts[ds]; t != nil {
		return t
	}
	if p.texts == nil {
		p.texts = map[*ctlproto.Desc]*descText{}
	}
	t := &descText{head: []byte(" " + ds.Probe)}
	t.jsonHead = appendJSONString(append(t.jsonHead, `,"probe":`...), ds.Probe)
	if ds.Site != 0 {
		t.jsonHead = strconv.AppendUint(append(t.jsonHead, `,"site":`...), ds.Site, 10)
	}
	for i := range ds.Kinds {
		name, typ := "arg"+strconv.Itoa(i), ""
		if i < len(ds.Args) {
			name, typ = ds.Args[i].Name, ds.Args[i].Type
		}
		t.args = append(t.args, []byte(" "+name+"="))
		j := appendJSONString([]byte(`{"name":`), name)
		j = appendJSONString(append(j, `,"type":`...), typ)
		t.jsonArgs = append(t.jsonArgs, append(j, `,"value":`...))
	}
	p.texts[ds] = t
	return t
}

// clock appends the time of ns: "15:04:05.000000" (text), or RFC 3339 with
// nanoseconds (JSON); the part up to the second is made once a second.
func (p *printer) clock(b []byte, ns int64) []byte {
	if sec := ns / 1e9; sec != p.sec || p.secTx == nil {
		layout := "15:04:05."
		if p.json {
			layout = "2006-01-02T15:04:05."
		}
		t := time.Unix(sec, 0)
		p.sec, p.secTx = sec, t.AppendFormat(p.secTx[:0], layout)
		p.zone = t.AppendFormat(p.zone[:0], "Z07:00")
	}
	b = append(b, p.secTx...)
	// microseconds (text) or nanoseconds (JSON), right to left: division by the
	// constant 10 is a multiplication, by a variable power of ten a DIV each
	frac, n := uint64(ns%1e9)/1e3, 6
	if p.json {
		frac, n = uint64(ns%1e9), 9
	}
	var d [9]byte
	for i := n - 1; i >= 0; i-- {
		d[i] = byte('0' + frac%10)
		frac /= 10
	}
	b = append(b, d[:n]...)
	if p.json {
		b = append(b, p.zone...)
	}
	return b
}

// appendQuoted appends s as Go quotes it (strconv.Quote), without converting it to a
// string when it needs no escape.
func appendQuoted(b, s []byte) []byte {
	for _, c := range s {
		if c < ' ' || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return strconv.AppendQuote(b, string(s))
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// print writes one event: "15:04:05.000000 PID/GOID probe name=value ...", or a
// JSON object.
func (p *printer) print(rec ctlproto.Record, ds *ctlproto.Desc, l *ctlproto.Layout, clock *ctlproto.Clock) {
	ns := clock.UnixNano(rec.Ticks())
	if p.json {
		p.printJSON(rec, ds, l, ns)
		return
	}
	b := p.clock(p.w.AvailableBuffer(), ns)
	b = append(b, ' ')
	b = strconv.AppendInt(b, int64(p.pid), 10)
	b = append(b, '/')
	b = strconv.AppendUint(b, rec.Goroutine(), 10)
	t := p.text(ds)
	b = append(b, t.head...)
	for i, k := range ds.Kinds {
		b = append(b, t.args[i]...)
		if k == ctlproto.ValString {
			b = appendQuoted(b, l.Str(rec, i))
		} else {
			b = ctlproto.AppendValue(b, k, rec, l, i)
		}
		if rec.Cut(i) {
			b = append(b, "..."...)
		}
	}
	b = append(b, '\n')
	for i := range l.Depth() {
		b = append(b, "                "...)
		b = append(b, p.frame(l.PC(rec, i))...)
		b = append(b, '\n')
	}
	p.w.Write(b) // appended in the writer's own buffer (when it had room): no copy
}

// frame is the text of a stack's return address, made once.
func (p *printer) frame(pc uint64) []byte {
	if t, ok := p.frames[pc]; ok {
		return t
	}
	if p.frames == nil {
		p.frames = map[uint64][]byte{}
	}
	t := []byte(p.er.Frame(pc).String())
	p.frames[pc] = t
	return t
}

// printJSON writes one event as {"pid":N,"event":{...}}, the fields of
// ctlproto.Event.
func (p *printer) printJSON(rec ctlproto.Record, ds *ctlproto.Desc, l *ctlproto.Layout, ns int64) {
	t := p.text(ds)
	b := append(p.w.AvailableBuffer(), `{"pid":`...)
	b = strconv.AppendInt(b, int64(p.pid), 10)
	b = append(b, `,"event":{"time":"`...)
	b = p.clock(b, ns)
	b = append(b, '"')
	b = append(b, t.jsonHead...)
	if g := rec.Goroutine(); g != 0 {
		b = append(b, `,"goroutine":`...)
		b = strconv.AppendUint(b, g, 10)
	}
	if len(ds.Kinds) > 0 {
		b = append(b, `,"args":[`...)
		for i, k := range ds.Kinds {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, t.jsonArgs[i]...)
			if k == ctlproto.ValString {
				b = appendJSONBytes(b, l.Str(rec, i))
			} else {
				b = append(b, '"')
				b = ctlproto.AppendValue(b, k, rec, l, i)
				b = append(b, '"')
			}
			if rec.Cut(i) {
				b = append(b, `,"cut":true`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if l.Depth() > 0 {
		b = append(b, `,"stack":[`...)
		for i := range l.Depth() {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONBytes(b, p.frame(l.PC(rec, i)))
		}
		b = append(b, ']')
	}
	b = append(b, "}}\n"...)
	p.w.Write(b) // appended in the writer's own buffer (when it had room): no copy
}

// appendJSONBytes is appendJSONString for bytes, without a conversion when they need
// no escape.
func appendJSONBytes(b, s []byte) []byte {
	for _, c := range s {
		if c < ' ' || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return appendJSONString(b, string(s))
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONString appends s as a JSON string; bytes that are not UTF-8 become
// U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c < 0x20:
				b = append(b, `\u00`...)
				b = append(b, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&15])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
