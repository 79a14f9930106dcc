package sdt

import (
	"github.com/gosdt/gosdt/sdt/control"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// The registry (sdt/internal/registry) sealed every site at its initialisation,
// which ran before this package's: the control plane, linked into every program that
// uses probes so that sdtctl reaches any of them with no change to its code, starts
// once it is complete.
func init() { control.Start() }

// MaxArgs is the most arguments a probe has (Define0..Define6).
const MaxArgs = registry.MaxArgs

// Errors of Enable, Disable and List, to match with errors.Is and errors.As.
// Package control's traces and aggregations return the same errors.
var (
	// ErrNoMatch: the spec matches no probe of this process.
	ErrNoMatch = registry.ErrNoMatch
	// ErrMalformedSpec: the spec does not parse; the error is a *SpecError.
	ErrMalformedSpec = registry.ErrMalformedSpec
	// ErrNotSupported: nothing the spec matches can be switched on this platform.
	ErrNotSupported = registry.ErrNotSupported
	// ErrStillHeld is what a StillHeldError matches with errors.Is.
	ErrStillHeld = registry.ErrStillHeld
)

// SpecError is a malformed probe spec: what is wrong (Reason), and where (Pos, the
// byte offset in Spec where it goes wrong; -1: the spec as a whole).
type SpecError = registry.SpecError

// StillHeldError is returned by Disable when the caller's hold is released but other
// owners still hold some of what the spec matches on: those sites stay on.
type StillHeldError = registry.StillHeldError

// Enable switches on every probe site that spec matches (a DTrace probe description,
// provider:module:function:name, globs allowed, filled from the right) and returns how
// many sites changed state. All sealed sites switch in one patch batch. The program
// then holds them on, beside any other owner (sdtctl, a USDT tracer, the signal mode).
func Enable(spec string) (int, error) { return registry.Enable(spec) }

// Disable releases the program's hold on what spec matches and switches off what no
// other owner holds; it returns how many sites changed state. When sdtctl, a USDT
// tracer or the signal mode still holds some of them on, those stay on, and the error
// is a *StillHeldError (errors.Is(err, ErrStillHeld)) that names them.
func Disable(spec string) (int, error) { return registry.Disable(spec) }

// ProbeInfo describes one logical probe: a definition as it appears in one function.
type ProbeInfo = registry.ProbeInfo

// ArgInfo is a probe argument's name and Go type.
type ArgInfo = registry.ArgInfo

// SiteInfo describes one physical site.
type SiteInfo = registry.SiteInfo

// SiteState is what a site's text holds.
type SiteState = registry.SiteState

const (
	SealedOff  = registry.SealedOff  // canonical sled, jumping over the fire block
	SealedOn   = registry.SealedOn   // canonical sled, falling into the fire block
	BranchOnly = registry.BranchOnly // the compiler's check, left alone; Reason says why
	Unpatched  = registry.Unpatched  // a run-time probe's point: the function's own code
	Patched    = registry.Patched    // a run-time probe's point: a call to its stub written
	Refused    = registry.Refused    // a run-time probe's point that may take none; Reason says why
)

// List describes the logical probes that spec matches ("" matches all), sorted by name.
// A definition whose fires come from code that could not be attributed to a site
// (non-inlined builds, pointer uses) is listed with an empty function. Functions that
// may take run-time probes (fbt specs naming a package or a function) follow, in the
// order of their addresses. Hits count every fire made before the call (run-time
// return events included).
func List(spec string) ([]ProbeInfo, error) { return registry.List(spec) }

// DiscoveryStats says what discovery did at start-up.
type DiscoveryStats = registry.DiscoveryStats

// Discovery reports the start-up discovery of this process's sites.
func Discovery() DiscoveryStats { return registry.Discovery() }
