package main

import (
	"bufio"
	"encoding/binary"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
)

// benchBatch is a batch of n records of a probe (int, int, string), as a process
// sends them.
func benchBatch(n int) *ctlproto.Response {
	kinds := []byte{ctlproto.ValInt, ctlproto.ValInt, ctlproto.ValString}
	var recs []byte
	names := []string{"alpha", "beta", "/api/users", "/static/app.js"}
	for i := range n {
		at := len(recs)
		s := names[i&3]
		recs = binary.LittleEndian.AppendUint64(recs, 3<<16|7<<32)
		recs = binary.LittleEndian.AppendUint64(recs, 0x401000)
		recs = binary.LittleEndian.AppendUint64(recs, uint64(1e9+i*300))
		recs = binary.LittleEndian.AppendUint64(recs, 18)
		recs = binary.LittleEndian.AppendUint64(recs, uint64(i))
		recs = binary.LittleEndian.AppendUint64(recs, 0)
		recs = binary.LittleEndian.AppendUint64(recs, uint64(len(s)))
		recs = append(recs, s...)
		for len(recs)%8 != 0 {
			recs = append(recs, 0)
		}
		binary.LittleEndian.PutUint16(recs[at:], uint16(len(recs)-at))
	}
	return &ctlproto.Response{Kind: ctlproto.KindEvents, Records: recs, Clock: &ctlproto.Clock{Ticks: 1e9, Wall: 1.7e18, NsPerTick: 0.3},
		Descs: []ctlproto.Desc{{ID: 7, Probe: "src:main:main.step:fire", Site: 0x401000, Kinds: kinds,
			Args: []ctlproto.Arg{{Name: "i", Type: "int"}, {Name: "worker", Type: "int"}, {Name: "name", Type: "string"}}}}}
}

// BenchmarkPrint is what sdtctl trace spends on one event: decode it from a batch
// and write its line (text, or --json), buffered.
func BenchmarkPrint(b *testing.B) {
	for _, json := range []bool{false, true} {
		name := "text"
		if json {
			name = "json"
		}
		b.Run(name, func(b *testing.B) {
			batch := benchBatch(1000)
			w := bufio.NewWriterSize(io.Discard, 256<<10)
			p := &printer{w: w, pid: 4242, json: json}
			var er ctlproto.EventReader
			er.Take(batch)
			n := 0
			for b.Loop() {
				er.Each(batch.Records, func(rec ctlproto.Record, ds *ctlproto.Desc, l *ctlproto.Layout) bool {
					p.print(rec, ds, l, er.Clock())
					n++
					return true
				})
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/event")
		})
	}
}

// TestPrintTime: an event's time is its clock's, to the microsecond in text and the
// nanosecond in --json.
func TestPrintTime(t *testing.T) {
	batch := benchBatch(3)
	for _, c := range []struct {
		json           bool
		prefix, layout string
	}{{false, "", "15:04:05.000000 "}, {true, `{"pid":4242,"event":{"time":"`, `2006-01-02T15:04:05.000000000Z07:00"`}} {
		var out strings.Builder
		w := bufio.NewWriter(&out)
		p := &printer{w: w, pid: 4242, json: c.json}
		var er ctlproto.EventReader
		er.Take(batch)
		var want []string
		er.Each(batch.Records, func(rec ctlproto.Record, ds *ctlproto.Desc, l *ctlproto.Layout) bool {
			p.print(rec, ds, l, er.Clock())
			want = append(want, c.prefix+time.Unix(0, er.Clock().UnixNano(rec.Ticks())).Format(c.layout))
			return true
		})
		w.Flush()
		lines := strings.Split(out.String(), "\n")
		for i, wl := range want {
			if !strings.HasPrefix(lines[i], wl) {
				t.Errorf("line %q, want it to begin %q", lines[i], wl)
			}
		}
	}
}
