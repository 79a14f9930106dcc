package control

import (
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/sdt/internal/bridge"
)

// What streams send: a trace's records in batches (ctlproto's events), an
// aggregation's snapshots.

// maxBatchEvents and maxBatchBytes bound one events frame, far below ctlproto.MaxFrame
// (a record is at most a few hundred bytes).
const (
	maxBatchEvents = 1024
	maxBatchBytes  = 64 << 10
)

// batcher turns a trace's records into events frames. It describes each probe site
// to the client once, in the batch that first names it.
type batcher struct {
	t     *Trace
	descs map[[2]uintptr]uint64
	rec   record
	n     int // events in the last batch
}

func newBatcher(t *Trace) *batcher { return &batcher{t: t, descs: map[[2]uintptr]uint64{}} }

// next takes up to limit records that have arrived into a batch; nil when none has.
func (w *batcher) next(limit int) *ctlproto.Response {
	w.n = 0
	var batch *ctlproto.Response
	var last int64
	for w.n < limit && (batch == nil || len(batch.Records) < maxBatchBytes) && w.t.r.get(&w.rec) {
		if batch == nil {
			batch = &ctlproto.Response{Kind: ctlproto.KindEvents}
		}
		last = w.append(batch, last)
		w.n++
	}
	return batch
}

// append adds w.rec to batch; last is the time of the batch's previous record, and
// the record's is returned.
func (w *batcher) append(batch *ctlproto.Response, last int64) int64 {
	rec := &w.rec
	k := [2]uintptr{uintptr(rec.probe), rec.site}
	id, ok := w.descs[k]
	if !ok {
		id = uint64(len(w.descs) + 1)
		w.descs[k] = id
		batch.Descs = append(batch.Descs, w.describe(id))
	}
	t := wallTime(rec.time).UnixNano()
	b := ctlproto.AppendRecordHead(batch.Records, id, t-last, int(rec.n))
	for i := 0; i < int(rec.n); i++ {
		var str []byte
		if rec.kinds[i] == bridge.String {
			str = rec.strBytes(i)
		}
		b = ctlproto.AppendValue(b, int(rec.kinds[i]), rec.cut&(1<<i) != 0, rec.slots[i], str)
	}
	batch.Records = b
	return t
}

// describe names w.rec's probe and site, and its arguments.
func (w *batcher) describe(id uint64) ctlproto.Desc {
	rec := &w.rec
	ds := ctlproto.Desc{ID: id, Probe: w.t.c.name(rec.probe, rec.site), Site: uint64(rec.site)}
	if p := w.t.c.probes[rec.probe]; p != nil {
		for i := range p.Args {
			ds.Args = append(ds.Args, ctlproto.Arg{Name: p.Args[i], Type: p.Types[i]})
		}
	}
	return ds
}

func toStat(s Snapshot) *ctlproto.Stat {
	st := &ctlproto.Stat{Time: time.Now(), By: s.By, Value: s.Value, Overflow: s.Overflow, Rows: []ctlproto.Row{}}
	for _, r := range s.Rows {
		row := ctlproto.Row{Key: r.Key, Count: r.Count, Sum: r.Sum, Min: r.Min, Max: r.Max, Avg: r.Avg}
		for _, b := range r.Hist {
			row.Hist = append(row.Hist, ctlproto.Bucket{Low: b.Low, Count: b.Count})
		}
		st.Rows = append(st.Rows, row)
	}
	return st
}
