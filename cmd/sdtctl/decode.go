package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// cmdDecode prints a raw trace (trace --raw) as trace would have: the same lines
// or JSON objects, then what each process's trace delivered and dropped.
func cmdDecode(args []string, stdout, stderr io.Writer) error {
	o := newFlags("decode", stderr, false)
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return fail(exitUsage, "decode: one FILE at most (- or none: stdin)")
	}
	in := io.Reader(os.Stdin)
	name := "stdin"
	if len(pos) == 1 && pos[0] != "-" {
		f, err := os.Open(pos[0])
		if err != nil {
			return fail(exitUsage, "decode: %v", err)
		}
		defer f.Close()
		in, name = f, pos[0]
	}
	r := bufio.NewReaderSize(in, 1<<20)
	magic := make([]byte, len(ctlproto.RawMagic))
	if _, err := io.ReadFull(r, magic); err != nil || string(magic) != ctlproto.RawMagic {
		return fail(exitError, "decode: %s: not a raw trace (sdtctl trace --raw)", name)
	}
	out := bufio.NewWriterSize(stdout, 256<<10)
	defer out.Flush()
	type run struct {
		er  ctlproto.EventReader
		p   *printer
		n   uint64
		bad uint64
		end *ctlproto.Response
	}
	runs := map[uint32]*run{}
	var order []uint32
	var buf []byte
	for {
		kind, pid, b, err := ctlproto.ReadRawChunk(r, buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			out.Flush()
			return fail(exitError, "decode: %s: %v", name, err)
		}
		buf = b[:cap(b)]
		t := runs[pid]
		if t == nil {
			t = &run{}
			t.p = &printer{w: out, pid: int(pid), json: o.json, er: &t.er}
			runs[pid] = t
			order = append(order, pid)
		}
		if kind == ctlproto.RawFrame {
			f, err := ctlproto.ReadFrame(bytes.NewReader(b))
			if err != nil {
				return fail(exitError, "decode: %s: %v", name, err)
			}
			resp, err := ctlproto.DecodeResponse(f)
			if err != nil {
				return fail(exitError, "decode: %s: %v", name, err)
			}
			if resp.Kind == ctlproto.KindEnd {
				t.end = resp
				continue
			}
			t.er.Take(resp)
			continue
		}
		_, err = ctlproto.RawRecordsEach(b, func(rec ctlproto.Record) bool {
			if ds := t.er.Desc(rec); ds == nil || ds.Pending || !t.er.Timed() {
				t.bad++ // counted dropped by the trace too
				return true
			}
			if err := t.er.Each(rec, func(rec ctlproto.Record, ds *ctlproto.Desc, l *ctlproto.Layout) bool {
				t.p.print(rec, ds, l, t.er.Clock())
				t.n++
				return true
			}); err != nil {
				t.bad++
			}
			return true
		})
		if err != nil {
			out.Flush()
			return fail(exitError, "decode: %s: %v", name, err)
		}
	}
	out.Flush()
	for _, pid := range order {
		t := runs[pid]
		if o.json {
			m := map[string]any{"pid": pid, "events": t.n, "undecoded": t.bad}
			if t.end != nil {
				m["drops"], m["buffer_drops"], m["delivered"], m["filtered"] = t.end.Drops, t.end.BufferDrops, t.end.Delivered, t.end.Filtered
				if t.end.Code == "exited" {
					m["exited"] = true
				}
			} else {
				m["unfinished"] = true
			}
			printJSON(stdout, m)
			continue
		}
		fmt.Fprintf(stderr, "pid %d: %d events", pid, t.n)
		if t.end == nil {
			fmt.Fprintf(stderr, ", the trace's end is missing (cut short)\n")
			continue
		}
		fmt.Fprintf(stderr, ", %d dropped", t.end.Drops)
		if t.end.Drops > 0 {
			fmt.Fprintf(stderr, " (per buffer: %s)", joinUints(t.end.BufferDrops))
		}
		if t.end.Code == "exited" {
			fmt.Fprintf(stderr, ", until the process exited")
		}
		fmt.Fprintln(stderr)
	}
	return nil
}
