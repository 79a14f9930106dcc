// Command source is the event source of sdtctl's rate tests: once src:::fire is
// enabled (by a trace), G goroutines fire it N times each, at a steady total rate
// (-rate fires per second, 0: as fast as they go), then it says how many it fired,
// how fast, and how far behind its schedule it fell at worst (a paced goroutine the
// machine held off the CPU catches up in a burst), and waits for stdin to close.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/gosdt/gosdt/sdt"
)

var fire = sdt.Define3[int, int, string]("src", "fire", "i", "worker", "name")

var names = []string{"alpha", "beta", "/api/users", "/static/app.js"}

//go:noinline
func step(i, w int) { sdt.Probe3(&fire, i, w, names[i&3]) }

func main() {
	g := flag.Int("g", 1, "firing goroutines")
	n := flag.Int("n", 100000, "fires per goroutine")
	rate := flag.Float64("rate", 0, "fires per second, all goroutines together (0: as fast as they go)")
	flag.Parse()
	fmt.Println("ready")
	for !fire.Enabled() {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	var wg sync.WaitGroup
	lags := make([]time.Duration, *g)
	for w := range *g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lags[w] = run(w, *n, *rate/float64(*g))
		}()
	}
	wg.Wait()
	el := time.Since(start)
	// done FIRED SECONDS RATE LAG_MS
	fmt.Printf("done %d %.3f %.0f %.3f\n", *g**n, el.Seconds(), float64(*g**n)/el.Seconds(), slices.Max(lags).Seconds()*1000)
	io.Copy(io.Discard, os.Stdin)
}

// run fires n times, at rate per second (0: at once), a thousand at a time: a
// goroutine behind its schedule catches up, one ahead sleeps. It returns how far
// behind its schedule it was at worst.
func run(w, n int, rate float64) (lag time.Duration) {
	start := time.Now()
	for i := 0; i < n; {
		for end := min(i+1000, n); i < end; i++ {
			step(i, w)
		}
		if rate > 0 {
			ahead := time.Duration(float64(i)/rate*1e9) - time.Since(start)
			if ahead > 0 {
				time.Sleep(ahead)
			}
			lag = max(lag, -ahead)
		}
	}
	return lag
}
