package registry

import (
	"os"
	"time"

	"github.com/gosdt/gosdt/internal/sealfmt"
)

// A sealed binary carries USDT notes (sdtctl seal): bpftrace, perf or SystemTap put a
// uprobe on a site's probe NOP or fire call and raise the probe's semaphore, but a
// disabled site jumps over both. The kernel only counts attachments in the semaphore; nothing
// tells the process. So a goroutine polls the semaphores, and holds a probe's sites
// on while its count is non-zero, as an sdtctl client would: a tracer sees events
// within one poll interval (SDT_USDT_POLL, default 100ms) plus the time to patch.

const defaultUSDTPoll = 100 * time.Millisecond

// usdtPollFromEnv reads SDT_USDT_POLL: a duration, or off. ok is false for off.
func usdtPollFromEnv() (d time.Duration, ok bool) {
	v := os.Getenv("SDT_USDT_POLL")
	switch v {
	case "":
		return defaultUSDTPoll, true
	case "off", "0":
		return 0, false
	}
	d, ok = parseDuration(v)
	if !ok || d < time.Millisecond {
		warnf("SDT_USDT_POLL=%q: want a duration of at least 1ms, or off; using %v", v, defaultUSDTPoll)
		return defaultUSDTPoll, true
	}
	return d, true
}

// parseDuration is time.ParseDuration without its error: the same syntax (a sign,
// then decimal numbers, each with an optional fraction and a unit: ns, us, µs, ms, s,
// m, h) and the same arithmetic, which truncates what is below a nanosecond and
// refuses what overflows. Not time.ParseDuration, whose error, quoting and table of
// units every traced program would link for this one variable (about 10 KB);
// TestParseDuration compares the two.
func parseDuration(s string) (time.Duration, bool) {
	neg := false
	if s != "" && (s[0] == '-' || s[0] == '+') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "0" {
		return 0, true
	}
	if s == "" {
		return 0, false
	}
	var d uint64
	for s != "" {
		var v, f uint64     // the digits before and after the point
		scale := float64(1) // the number is v + f/scale
		i := 0
		for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			if v > 1<<63/10 {
				return 0, false
			}
			if v = v*10 + uint64(s[i]-'0'); v > 1<<63 {
				return 0, false
			}
		}
		digits := i > 0
		if i < len(s) && s[i] == '.' {
			i++
			overflow := false
			for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
				digits = true
				if overflow || f > (1<<63-1)/10 {
					overflow = true
					continue
				}
				if y := f*10 + uint64(s[i]-'0'); y <= 1<<63 {
					f, scale = y, scale*10
				} else {
					overflow = true
				}
			}
		}
		if !digits {
			return 0, false
		}
		s = s[i:]
		i = 0
		for i < len(s) && s[i] != '.' && (s[i] < '0' || s[i] > '9') {
			i++
		}
		var unit uint64
		switch s[:i] {
		case "ns":
			unit = uint64(time.Nanosecond)
		case "us", "\u00b5s", "\u03bcs": // U+00B5 micro sign, U+03BC Greek mu
			unit = uint64(time.Microsecond)
		case "ms":
			unit = uint64(time.Millisecond)
		case "s":
			unit = uint64(time.Second)
		case "m":
			unit = uint64(time.Minute)
		case "h":
			unit = uint64(time.Hour)
		default:
			return 0, false // no unit, or an unknown one
		}
		s = s[i:]
		if v > 1<<63/unit {
			return 0, false
		}
		v *= unit
		if f > 0 {
			// float64 keeps a fraction of an hour exact to the nanosecond.
			if v += uint64(float64(f) * (float64(unit) / scale)); v > 1<<63 {
				return 0, false
			}
		}
		if d += v; d > 1<<63 {
			return 0, false
		}
	}
	if neg {
		return -time.Duration(d), true
	}
	if d > 1<<63-1 {
		return 0, false
	}
	return time.Duration(d), true
}

// usdtProbe is a probe name with a semaphore, and the owner that holds its sites on
// while a tracer is attached.
type usdtProbe struct {
	sealfmt.Probe
	o *owner // non-nil while held
}

// startUSDTWatch polls the semaphores of probes, if there are any.
func startUSDTWatch(probes []sealfmt.Probe) {
	if len(probes) == 0 {
		return
	}
	every, ok := usdtPollFromEnv()
	if !ok {
		return
	}
	watch := make([]*usdtProbe, len(probes))
	for i, p := range probes {
		watch[i] = &usdtProbe{Probe: p}
	}
	go func() {
		for {
			for _, p := range watch {
				p.sync()
			}
			time.Sleep(every)
		}
	}()
}

// sync holds or releases p's sites to match its semaphore.
func (p *usdtProbe) sync() {
	attached := sealfmt.Semaphore(p.Slot) != 0
	switch {
	case attached && p.o == nil:
		o := newOwner("usdt tracer on " + p.Provider + ":" + p.Name)
		reg.mu.Lock()
		reg.resolve()
		keys := namedKeys(p.Provider, p.Name)
		found := len(keys)
		_, err := reg.holdLocked(o, keys, true, o.Name)
		reg.mu.Unlock()
		if err != nil {
			warnf("usdt: enabling %s:%s for an attached tracer: %v", p.Provider, p.Name, err)
		}
		// A tracer may attach before the package defining the probe has initialised:
		// then nothing was found, and the next poll tries again. After an error too
		// the holder is kept, so that the warning is not repeated every interval.
		if found > 0 || err != nil {
			p.o = o
		}
	case !attached && p.o != nil:
		Release(p.o)
		p.o = nil
	}
}

// namedKeys returns every site and definition of the probes named provider:name.
// Call with reg.mu held, after resolve.
func namedKeys(provider, name string) []holdKey {
	var keys []holdKey
	for _, p := range reg.byName[provider+":"+name] {
		for _, s := range p.sites {
			keys = append(keys, holdKey{s: s})
		}
		keys = append(keys, holdKey{p: p})
	}
	return keys
}

// USDTSlot is the USDT semaphore slot of the probe provider:name in this sealed binary,
// 0 if it has none: the runtime of generated fbt code (sdt/internal/fbtrt) reads the
// clock for a return probe's latency while a tracer is attached to its note.
func USDTSlot(provider, name string) int {
	if reg.table == nil {
		return 0
	}
	for _, p := range reg.table.Probes {
		if p.Provider == provider && p.Name == name {
			return p.Slot
		}
	}
	return 0
}
