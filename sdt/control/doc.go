// Package control is gosdt's control plane as programs import it: traces and
// aggregations in the process, and the server sdtctl talks to (linux).
//
// The consumers are sdt/internal/consume, the server sdt/internal/ctlserver; this
// package names their API.
//
// A program that uses probes links it through package sdt and needs no code for it:
// sdt starts it at the end of its initialisation (Start), and it serves
// sdtctl unless SDT_CONTROL=off (Serve, Stop and Socket change that at run time). The
// socket is $XDG_RUNTIME_DIR/gosdt/<pid>.sock, or /tmp/gosdt-<uid>/<pid>.sock, in a
// directory of mode 0700 that must belong to the process's user; clients must be that
// user or root. The protocol is internal/ctlproto.
//
// A program or a benchmark reads its own probes without the socket:
//
//	tr, err := control.OpenTrace("http:::done", control.TraceOptions{}) // switches the probes on, as its own owner
//	...
//	n, err := tr.Read(evs, time.Second)
//	tr.Close()                                  // releases them
//
//	agg, err := control.OpenAggregation("http:::done", control.AggOptions{By: "arg0", Value: "arg1", Hist: true})
//	snap := agg.Snapshot()
//
// A trace or aggregation holds its probes on while open, beside any other owner: the
// program's sdt.Enable, sdtctl, a USDT tracer. Closing it releases only its own hold.
//
// What traces and aggregations take of the process's memory is bounded: 256 MiB each
// (SDT_MEMORY_TRACE) and 512 MiB in all (SDT_MEMORY), sdtctl's and the program's own,
// and a trace at most half of what the process's memory limits leave (ulimit -v, its
// cgroup's). What is over is refused (ErrBudget) before anything is allocated. On
// linux a trace's buffers are mapped, committed page by page as their P writes them,
// and unmapped as the trace closes.
package control
