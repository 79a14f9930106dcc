package sled

import (
	"reflect"
	"strings"

	"github.com/gosdt/gosdt/arch"
)

// probePackage is the import path of package sdt, this package's sibling: the probe
// package whose fire methods a site's guarded block calls, and whose own functions
// hold no site (a check there is the body of a Probe function that was not inlined,
// shared by every probe of that shape: patching it would switch all of them). Tests
// point it at a fake.
var probePackage = strings.TrimSuffix(reflect.TypeFor[Site]().PkgPath(), "sled") + "sdt"

// ProbePackage returns the import path of package sdt, whose Define calls and fire
// methods discovery looks for.
func ProbePackage() string { return probePackage }

// funcRuntime is the path, below the probe package, of the runtime of generated fbt
// code (sdt/internal/fbtrt), whose Func's checks and fire method are sites as the
// probe package's are.
const funcRuntime = "/internal/fbtrt"

// IsProbePackage reports whether mod, a package path, is the probe package or the
// runtime of generated fbt code: where fire methods are, and where no site is.
func IsProbePackage(mod string) bool {
	return mod == probePackage || mod == probePackage+funcRuntime
}

// IsFire reports whether sym, a function's symbol, is the fire method of a probe type
// of the probe package (P0..P6, the latency probes) or of generated fbt code's
// runtime (Func): what a site's guarded block must call for discovery to accept it
// as a fire site.
func IsFire(sym string) bool {
	if !strings.HasSuffix(sym, ").fire") {
		return false
	}
	rest, ok := strings.CutPrefix(sym, probePackage)
	rest, _ = strings.CutPrefix(rest, funcRuntime)
	return ok && strings.HasPrefix(rest, ".(*")
}

// raceCall reports calls that -race inserts around memory accesses; they may precede
// the fire call in a guarded block and do not end it.
func raceCall(sym string) bool {
	return strings.HasPrefix(sym, "runtime.race")
}

// callEffect says what a call to the function named sym does to a register that holds
// a probe flag. The fire method is an ordinary Go function: nothing survives it.
// Runtime helpers may preserve registers (the write barrier does), so the walk goes on
// after them, except after those that never return.
func callEffect(sym string) arch.CallEffect {
	switch {
	case IsFire(sym):
		return arch.CallKills
	case strings.HasPrefix(sym, "runtime.panic"), strings.HasPrefix(sym, "runtime.goPanic"),
		sym == "runtime.throw", sym == "runtime.gopanic":
		return arch.CallNoReturn
	}
	return arch.CallKeeps
}
