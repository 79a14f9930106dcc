package registry

import (
	"os"

	"github.com/gosdt/gosdt/patch"
)

// mode is how the process starts, from SDT_MODE (the modes of ruby-static-tracing).
type mode uint8

const (
	modeOff    mode = iota // every probe disabled until enabled (default)
	modeOn                 // every probe enabled at start
	modeSignal             // SDT_SIGNAL (default SIGUSR2) toggles every probe
)

func modeFromEnv() mode {
	switch v := os.Getenv("SDT_MODE"); v {
	case "", "off":
		return modeOff
	case "on":
		return modeOn
	case "signal":
		return modeSignal
	default:
		warnf("SDT_MODE=%q: want off, on or signal; using off", v)
		return modeOff
	}
}

// optionsFromEnv reads SDT_PATCH_PROTOCOL: auto (default), atomic or rendezvous.
func optionsFromEnv() patch.Options {
	var o patch.Options
	if v := os.Getenv("SDT_PATCH_PROTOCOL"); v != "" {
		p, err := patch.ParseProtocol(v)
		if err != nil {
			warnf("SDT_PATCH_PROTOCOL=%q: %v; using auto", v, err)
		}
		o.Protocol = p
	}
	// Where a W^X policy refuses to make text writable, patch writes it through
	// /proc/self/mem unless told not to.
	o.NoProcMem = os.Getenv("SDT_PATCH_PROCMEM") == "off"
	return o
}
