package sdt

import (
	"errors"
	"runtime"
	"testing"
)

// ToggleLayout is where a patchable site's run-time switch writes.
type ToggleLayout struct {
	Func   string  // the function holding it
	Addr   uintptr // the site
	At     int     // offset of the toggle in the sled
	Toggle int     // its length
	Off    []byte  // the disabled sled
}

// ToggleLayouts returns the layout of every patchable site of the probes provider
// defines, for tests that check what one switch writes.
func ToggleLayouts(provider string) []ToggleLayout {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reg.resolve()
	var out []ToggleLayout
	for _, p := range reg.probes {
		if p.provider != provider {
			continue
		}
		for _, s := range p.sites {
			if s.Patchable() {
				out = append(out, ToggleLayout{s.Func, s.Addr, s.ToggleAt, s.Toggle, s.Off})
			}
		}
	}
	return out
}

// For the external tests: what gosdt's own tools reach through internal/hooks.
var SetPatchOptions = setPatchOptions

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
func init() { checkSwitches = true }

// CheckOn verifies the invariant of "on" now.
func CheckOn() error {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	return reg.checkOn()
}

// Consumed reports whether a sink is fed the fires of the definition provider:name.
func Consumed(provider, name string) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for _, p := range reg.byName[provider+":"+name] {
		if p.cons.Load() != nil {
			return true
		}
	}
	return false
}
