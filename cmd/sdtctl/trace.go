package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

func cmdTrace(args []string, stdout, stderr io.Writer, stop <-chan struct{}) error {
	args, command, follow := splitCommand(args)
	o := newFlags("trace", stderr, true)
	count := o.fs.Int("c", 0, "stop after `N` events")
	dur := o.fs.Duration("d", 0, "stop after `DURATION`")
	bufsize := o.fs.String("bufsize", "", "`BYTES` of each per-P buffer in the process (k, m, g suffixes; default 4m, and 32m with --raw to a file, each halved until GOMAXPROCS of them fit the process's trace budget, SDT_MEMORY_TRACE: 256m unless set)")
	where := o.fs.String("where", "", "record only fires whose arguments match `EXPR` (arg0 > 100 && path == \"/api\"), evaluated in the process")
	stack := o.fs.Bool("stack", false, fmt.Sprintf("with each event the Go call stack of the fire (%d frames), as DTrace's ustack()", ctlproto.StackDepth))
	raw := o.fs.Bool("raw", false, "write the records as the process's buffers hold them, a raw trace for sdtctl decode (redirect stdout to a file): nothing is formatted while tracing (linux; not with --stack or --json)")
	many := o.manyFlag()
	o.detachFlag()
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if err := oneSpec("trace", pos); err != nil {
		return err
	}
	if err := checkSpecs(pos); err != nil {
		return err
	}
	if *raw && (*stack || o.json) {
		return fail(exitUsage, "trace: --raw is not with --stack or --json (sdtctl decode --json prints a raw trace as JSON)")
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
	if *dur < 0 {
		return fail(exitUsage, "trace: -d %v: want a duration above 0", *dur)
	}
	q := &ctlproto.Request{Op: ctlproto.OpTrace, Spec: pos[0], Count: *count, DurationMS: dur.Milliseconds(), BufSize: size, Where: *where}
	if *raw && size == 0 && regularFile(stdout) {
		// the output keeps up with tens of millions of events a second; what drops is
		// sdtctl held off the CPU longer than a buffer lasts (4 MiB: a few ms at 10M/s)
		q.BufSizeUpTo = rawBufSize
	}
	if *stack {
		q.Stack = ctlproto.StackDepth
	} else {
		// sdtctl reads the process's buffers itself, where it can (linux): the
		// process copies nothing. A stack's frames are named by the process as it
		// sends them, so a trace with stacks is sent.
		q.Live = true
	}
	cls, cmd, err := o.streams("trace", follow, command, q, stdout, stderr) // cmd: the command started, with -- CMD
	if cls == nil {
		return err
	}
	if !follow {
		for _, cl := range cls { // a followed command's connection streams already
			if err := checkRuntimeCost(cl, pos[0], *many); err != nil {
				return err
			}
			noteFunctions(cl, pos[0], stderr)
			noteLeftOut(cl, pos[0], "--where", whereNames(*where), stderr)
		}
	}
	// Each process streams on its own connection; their events are merged into one
	// output, a batch at a time, each line with its pid. The count is of all of them.
	out := bufio.NewWriterSize(stdout, 256<<10)
	var rawo *rawOut
	if *raw {
		rawo = newRawOut(out, stdout)
	}
	st := newStopperFor(stop, cmd != nil)
	var mu sync.Mutex // out, total
	total := 0
	start := time.Now()
	runs := make([]*traceRun, len(cls))
	var wg sync.WaitGroup
	for i, cl := range cls {
		t := &traceRun{cl: cl}
		t.p = &printer{w: out, pid: cl.pid, json: o.json, er: &t.er}
		runs[i] = t
		qu := &quota{more: func() bool { return *count == 0 || total < *count }}
		qu.left = func() uint64 {
			if *count == 0 {
				return math.MaxUint64
			}
			return uint64(max(*count-total, 0))
		}
		qu.took = func(n int) {
			total += n
			if *count > 0 && total >= *count && total-n < *count {
				st.stop() // a live trace's count is sdtctl's: the processes do not stop at it
			}
		}
		cl.onStarted = func(r *ctlproto.Response) {
			if r.Live {
				t.startLive(&mu, out, rawo, qu)
			} else if rawo != nil {
				mu.Lock()
				t.bad = fail(exitError, "pid %d: --raw: the process does not share its buffers live (not linux, or an earlier gosdt)", cl.pid)
				mu.Unlock()
				st.stop()
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.close()
			t.end, t.err = stream(cl, q, st.C, func(r *ctlproto.Response) {
				if r.Kind != ctlproto.KindEvents {
					return
				}
				mu.Lock()
				defer mu.Unlock()
				t.share(r)
				if rawo != nil && t.live != nil && r.Clock != nil {
					rawo.frame(cl.pid, &ctlproto.Response{Kind: ctlproto.KindEvents, Pid: cl.pid, Clock: r.Clock})
				}
				t.drops = r.Drops
				if t.bad != nil {
					return
				}
				t.er.Take(r)
				err := t.er.Each(r.Records, func(rec ctlproto.Record, ds *ctlproto.Desc, l *ctlproto.Layout) bool {
					if *count > 0 && total >= *count {
						return false
					}
					t.p.print(rec, ds, l, t.er.Clock())
					t.n++
					total++
					return true
				})
				if err != nil {
					t.bad = fail(exitError, "pid %d: %v", cl.pid, err)
				}
				if *count > 0 && total >= *count && len(cls) > 1 {
					st.stop() // the others: a process ends its own trace at the count
				}
				// a batch at a time: at a million events a second that is a thousand
				// lines per write, and an interactive trace still shows each event promptly
				out.Flush()
			})
			if t.live != nil {
				t.endLive(&mu, out, qu)
				return
			}
			if t.end == nil && exitCode(t.err) == exitExited {
				mu.Lock()
				defer mu.Unlock()
				t.share(nil)
				t.leftover(qu)
				out.Flush()
			}
		}()
	}
	wg.Wait()
	st.release()
	out.Flush()
	el := time.Since(start)
	fails := failures{stderr: stderr}
	for _, t := range runs {
		exited := exitCode(t.err) == exitExited
		if t.err == nil || exited {
			t.summary(stdout, stderr, o.json, len(runs) > 1, *where != "", el)
		}
		if exited {
			t.err = fail(exitExited, "pid %d: process exited during the trace: %d events received, %d dropped so far", t.cl.pid, t.n, t.drops)
		}
		if t.err == nil {
			t.err = t.bad
		}
		if cmd != nil && exited {
			t.err, cmd.sawEnd = nil, true // the command's end is the trace's: said below
		}
		fails.add(t.err)
	}
	if rawo != nil {
		if err := out.Flush(); err != nil && rawo.err == nil {
			rawo.err = err
		}
		if rawo.err != nil {
			// the events counted were read, not all written: the file is short
			fails.add(fail(exitError, "trace --raw: writing the output: %v", rawo.err))
		}
	}
	if cmd != nil {
		return cmd.finish(fails.err(), stdout, stderr, o.json)
	}
	return fails.err()
}

// rawBufSize is the per-P buffer a raw trace to a file asks for where --bufsize
// is not given: 32 MiB lasts ~50 ms of one P firing 10M events a second. Its pages are
// the process's as they are written; the process halves it to fit its budget.
const rawBufSize = 32 << 20

// regularFile reports whether w is a regular file (a raw trace's output that
// takes what the rings give as fast as they give it).
func regularFile(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode().IsRegular()
}

// quota is a trace's -c, counted by sdtctl across its processes (under the trace's
// lock): more says whether another event may be taken, left how many (all:
// math.MaxUint64), took that n were.
type quota struct {
	more func() bool
	left func() uint64
	took func(n int)
}

// traceRun is the trace of one process.
type traceRun struct {
	cl    *client
	er    ctlproto.EventReader
	p     *printer
	n     int    // events printed
	drops uint64 // all told so far (events batches), until the end says
	end   *ctlproto.Response
	err   error // the stream's
	bad   error // the events'
	rs    rings // the process's buffers, shared
	live  *liveRead
}

// share takes the buffers the stream's start and r (an events frame) passed.
func (t *traceRun) share(r *ctlproto.Response) {
	if !t.rs.started && t.cl.started != nil {
		t.rs.take(t.cl, t.cl.started)
	}
	if r != nil {
		t.rs.take(t.cl, r)
	}
}

// leftover prints what the exited process wrote into its buffers and did not send,
// while more says, and takes the drops from the buffers: all they counted, the
// records its end cut short, and the records that cannot be decoded.
func (t *traceRun) leftover(q *quota) {
	if !t.rs.shared() || t.bad != nil {
		return
	}
	if !t.er.Timed() && t.cl.started != nil {
		t.er.Take(t.cl.started) // its clock
	}
	t.drops = t.rs.leftover(&t.er, func(rec ctlproto.Record, ds *ctlproto.Desc, l *ctlproto.Layout) bool {
		if !q.more() {
			return false
		}
		t.p.print(rec, ds, l, t.er.Clock())
		t.n++
		q.took(1)
		return true
	})
}

// summary says what the trace received: "N events in S (R/s), D dropped", with the
// pid when several processes are traced; of a process that exited, the drops known
// until then. --json: one object per process.
func (t *traceRun) summary(stdout, stderr io.Writer, asJSON, pids, filtered bool, el time.Duration) {
	if asJSON {
		m := map[string]any{"pid": t.cl.pid, "events": t.n, "drops": t.drops, "seconds": el.Seconds()}
		if t.end != nil {
			m["drops"], m["buffer_drops"], m["delivered"], m["filtered"] = t.end.Drops, t.end.BufferDrops, t.end.Delivered, t.end.Filtered
		} else {
			m["exited"] = true
		}
		printJSON(stdout, m)
		return
	}
	if pids {
		fmt.Fprintf(stderr, "pid %d: ", t.cl.pid)
	}
	if t.end == nil {
		fmt.Fprintf(stderr, "%d events in %.2fs (%.0f/s), %d dropped until the process exited\n", t.n, el.Seconds(), float64(t.n)/el.Seconds(), t.drops)
		return
	}
	fmt.Fprintf(stderr, "%d events in %.2fs (%.0f/s), %d dropped", t.n, el.Seconds(), float64(t.n)/el.Seconds(), t.end.Drops)
	if t.end.Drops > 0 {
		fmt.Fprintf(stderr, " (per buffer: %s)", joinUints(t.end.BufferDrops))
	}
	if filtered {
		fmt.Fprintf(stderr, ", %d filtered", t.end.Filtered)
	}
	fmt.Fprintln(stderr)
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
	given, mul := s, 1
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
		return 0, fmt.Errorf("%q: want a size of 1 byte to %s (%d bytes), with k, m or g", given, sizeText(ctlproto.MaxBufSize), ctlproto.MaxBufSize)
	}
	return n * mul, nil
}

// sizeText is n bytes in the largest unit that divides it: 1g, 4m, 100k, 10.
func sizeText(n int) string {
	for _, u := range []struct {
		suffix string
		size   int
	}{{"g", 1 << 30}, {"m", 1 << 20}, {"k", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.Itoa(n/u.size) + u.suffix
		}
	}
	return strconv.Itoa(n)
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
	shows    []byte   // how each argument is shown: a ctlproto kind, showPointer or showError
}

// How a value is shown besides its kind, from its Go type: an address in hex, as
// dtrace prints pointers; an error by its text, or nil.
const (
	showPointer = 100 + iota
	showError
)

// showOf is how an argument of kind k and Go type typ is shown.
func showOf(k byte, typ string) byte {
	switch {
	case k == ctlproto.ValUint && pointerType(typ):
		return showPointer
	case k == ctlproto.ValString && typ == "error":
		return showError
	}
	return k
}

// pointerType reports whether typ is a type fbt carries by address (fbtrt): a
// pointer, map, chan, func or unsafe.Pointer. uintptr is a number.
func pointerType(typ string) bool {
	for _, p := range []string{"*", "map[", "chan ", "chan<- ", "<-chan ", "func("} {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return typ == "unsafe.Pointer"
}

// nilError is what an fbt probe carries for a nil error (sdt/internal/fbtrt).
const nilError = "<nil>"

// appendText appends argument i as text: numbers, true/false, pointers as 0x...,
// strings and errors quoted, a nil error as nil.
func appendText(b []byte, show byte, rec ctlproto.Record, l *ctlproto.Layout, i int) []byte {
	switch show {
	case ctlproto.ValString:
		return appendQuoted(b, l.Str(rec, i))
	case showError:
		if s := l.Str(rec, i); string(s) != nilError || rec.Cut(i) {
			return appendQuoted(b, s)
		}
		return append(b, "nil"...)
	case showPointer:
		return strconv.AppendUint(append(b, "0x"...), rec.Slot(i), 16)
	}
	return ctlproto.AppendValue(b, show, rec, l, i)
}

// appendJSONValue appends argument i as a typed JSON value: integers as numbers,
// every digit exact (beyond 2^53 too: read them as int64/uint64, not doubles),
// floats as numbers (NaN and infinities as the strings "NaN", "+Inf", "-Inf"), bools
// as true/false, strings as strings, pointers as "0x..." strings, an error as its
// text or null.
func appendJSONValue(b []byte, show byte, rec ctlproto.Record, l *ctlproto.Layout, i int) []byte {
	switch show {
	case ctlproto.ValString:
		return appendJSONBytes(b, l.Str(rec, i))
	case showError:
		if s := l.Str(rec, i); string(s) != nilError || rec.Cut(i) {
			return appendJSONBytes(b, s)
		}
		return append(b, "null"...)
	case showPointer:
		b = strconv.AppendUint(append(b, `"0x`...), rec.Slot(i), 16)
		return append(b, '"')
	case ctlproto.ValFloat:
		f := math.Float64frombits(rec.Slot(i))
		switch {
		case math.IsNaN(f):
			return append(b, `"NaN"`...)
		case math.IsInf(f, 1):
			return append(b, `"+Inf"`...)
		case math.IsInf(f, -1):
			return append(b, `"-Inf"`...)
		}
	}
	return ctlproto.AppendValue(b, show, rec, l, i)
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
		t.shows = append(t.shows, showOf(ds.Kinds[i], typ))
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
	for i := range ds.Kinds {
		b = append(b, t.args[i]...)
		b = appendText(b, t.shows[i], rec, l, i)
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
// ctlproto.Event, each argument's value typed (appendJSONValue).
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
		for i := range ds.Kinds {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, t.jsonArgs[i]...)
			b = appendJSONValue(b, t.shows[i], rec, l, i)
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
