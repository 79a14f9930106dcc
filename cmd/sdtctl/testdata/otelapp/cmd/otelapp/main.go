// Command otelapp runs package app for sdtctl export's tests. A program that already
// uses OpenTelemetry: it makes spans of its own with the SDK (exported nowhere) and
// imports gosdt's bridge, so that a probed call with a context joins its trace.
//
//	otelapp serve   one command a line on stdin, one JSON line of what it did on stdout:
//	                req N (under a span of its own, sampled), unsampled N (under a span its
//	                sampler left out), work MS, crash N, timed N MS, put N, extremes
//	otelapp loop N  calls app.Spin(N) for ever, printing "calls TOTAL" every 50 ms
//	otelapp requests RATE   serves RATE requests a second (req N, each on a goroutine), for ever
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"example.com/otelapp/app"
	_ "github.com/gosdt/gosdt/sdt/otelsdt"
)

func main() {
	switch os.Args[1] {
	case "serve":
		serve()
	case "loop":
		n, _ := strconv.Atoi(os.Args[2])
		loop(n)
	case "requests":
		rate, _ := strconv.Atoi(os.Args[2])
		requests(rate)
	}
}

func serve() {
	sampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample())).Tracer("otelapp")
	unsampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())).Tracer("otelapp")
	out := json.NewEncoder(os.Stdout)
	out.Encode(map[string]any{"ready": os.Getpid()})
	var store app.Store
	var cache app.Cache
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		arg := func(i int) int {
			n, _ := strconv.Atoi(f[i])
			return n
		}
		res := map[string]any{"cmd": f[0]}
		switch f[0] {
		case "req", "unsampled":
			tr := sampled
			if f[0] == "unsampled" {
				tr = unsampled
			}
			ctx, span := tr.Start(context.Background(), "request")
			t0 := time.Now()
			key, err := app.Handle(ctx, arg(1))
			res["ns"] = time.Since(t0).Nanoseconds()
			span.End()
			sc := span.SpanContext()
			res["trace_id"], res["span_id"], res["key"] = sc.TraceID().String(), sc.SpanID().String(), key
			if err != nil {
				res["err"] = err.Error()
			}
		case "work":
			t0 := time.Now()
			app.Work(time.Duration(arg(1)) * time.Millisecond)
			res["ns"] = time.Since(t0).Nanoseconds()
		case "crash":
			func() {
				defer func() { res["recovered"] = fmt.Sprint(recover()) }()
				app.Crash(arg(1))
			}()
		case "timed":
			t0 := time.Now()
			app.Timed(arg(1), time.Duration(arg(2))*time.Millisecond)
			res["ns"] = time.Since(t0).Nanoseconds()
		case "nocontext":
			app.Lookup(context.Background(), arg(1))
		case "put": // (*Store).Put and (*Cache).Put of key-N, N: an error when N < 0
			if err := store.Put("key-"+f[1], arg(1)); err != nil {
				res["err"] = err.Error()
			}
			res["changed"] = cache.Put("key-"+f[1], arg(1))
		case "extremes":
			app.Extremes(math.MinInt64, math.MaxUint64, true)
			app.Extremes(math.MaxInt64, 1<<53+1, true)
		}
		out.Encode(res)
	}
}

// loop calls app.Spin as fast as it can, and says how many calls it has made.
func loop(n int) {
	var calls atomic.Int64
	go func() {
		for {
			app.Spin(n)
			calls.Add(1)
		}
	}()
	w := bufio.NewWriter(os.Stdout)
	for range time.Tick(50 * time.Millisecond) {
		fmt.Fprintf(w, "calls %d %d\n", calls.Load(), time.Now().UnixNano())
		w.Flush()
	}
}

// requests serves rate requests a second, each under a span of the program's own.
func requests(rate int) {
	tr := sdktrace.NewTracerProvider().Tracer("otelapp")
	fmt.Println("serving", rate, "requests a second, pid", os.Getpid())
	n := 0
	for range time.Tick(time.Second / time.Duration(max(rate, 1))) {
		n++
		go func(n int) {
			ctx, span := tr.Start(context.Background(), "request")
			defer span.End()
			app.Handle(ctx, n)
		}(n)
	}
}
