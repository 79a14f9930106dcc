package sled

import (
	"runtime"

	"github.com/gosdt/gosdt/internal/spec"
)

// Holder names the function that holds the probe statement at pc in the running
// program. The site's pc is in inlined code, so runtime.FuncForPC would name the
// innermost inlined function (sdt's Probe1); the inline tree, walked by CallersFrames,
// has the user's function. Frames of the probe package itself are skipped unless there
// is no other (a Probe1 body that was not inlined).
func (live) Holder(pc uint64) Holder {
	// CallersFrames wants return addresses (it looks up pc-1), and it expands the
	// inline tree of a pc only while more pcs follow: hence the trailing 0.
	frames := runtime.CallersFrames([]uintptr{uintptr(pc) + 1, 0})
	var h Holder
	for {
		f, more := frames.Next()
		if f.Function == "" {
			break
		}
		mod, name := spec.SplitFunc(f.Function)
		h = Holder{Module: mod, Func: name, File: f.File, Line: f.Line}
		if !IsProbePackage(mod) || !more {
			break
		}
	}
	return h
}
