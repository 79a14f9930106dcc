package sdt

import (
	"errors"
	"runtime"
	"testing"

	"github.com/gosdt/gosdt/internal/hooks"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// ToggleLayout is where a patchable site's run-time switch writes.
type ToggleLayout = registry.ToggleLayout

// ToggleLayouts returns the layout of every patchable site of the probes provider
// defines, for tests that check what one switch writes.
func ToggleLayouts(provider string) []ToggleLayout { return registry.ToggleLayouts(provider) }

// For the external tests: what gosdt's own tools reach through internal/hooks.
var SetPatchOptions = hooks.SetPatchOptions

// NeedSwitchable skips a test whose probes nothing can switch on this platform
// (js/wasm: no site is verified and no definition can be located).
func NeedSwitchable(t testing.TB, spec string) {
	t.Helper()
	_, err := Enable(spec)
	if errors.Is(err, ErrNotSupported) {
		t.Skipf("%s/%s: %v", runtime.GOOS, runtime.GOARCH, err)
	}
	if err == nil {
		Disable(spec)
	}
}

// Every switch in this package's tests, torture included, checks that the four
// representations of "on" agree afterwards.
func init() { registry.CheckSwitches() }

// CheckOn verifies the invariant of "on" now.
func CheckOn() error { return registry.CheckOn() }

// Consumed reports whether a sink is fed the fires of the definition provider:name.
func Consumed(provider, name string) bool { return registry.Consumed(provider, name) }
