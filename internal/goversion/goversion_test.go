package goversion

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

func TestOf(t *testing.T) {
	for v, want := range map[string]string{
		"go1.26.8": "go1.26", "go1.27.3": "go1.27", "go1.27": "go1.27", "go1.27rc1": "go1.27",
		"go1.28beta1": "go1.28", "go1.27.3 X:nosynchashtriemap": "go1.27", "go1.28.0": "go1.28",
		"devel go1.28-6f5ff3f7 Tue Nov 3 2026": "", "": "", "go2": "", "go1.": "", "go1.x": "", "go1.27x": "",
	} {
		if got := Of(v); got != want {
			t.Errorf("Of(%q) = %q, want %q", v, got, want)
		}
	}
}

func TestCheck(t *testing.T) {
	for _, v := range []string{"go1.26.0", "go1.26.8", "go1.27.3", "go1.27rc2"} {
		for _, p := range Parts {
			if err := Check(v, p); err != nil {
				t.Errorf("Check(%q, %v) = %v", v, p, err)
			}
		}
	}
	for _, v := range []string{"go1.28.0", "devel go1.28-abcdef +0000", "go1.25.4", ""} {
		for _, p := range Parts {
			err := Check(v, p)
			var e *Error
			if !errors.As(err, &e) || e.Part != p || e.Version != v {
				t.Fatalf("Check(%q, %v) = %v, want an *Error for it", v, p, err)
			}
			// One message: the version, the part, the versions read, and what still works.
			msg := err.Error()
			for _, w := range []string{p.String(), "go1.26, go1.27", "branch check"} {
				if !strings.Contains(msg, w) {
					t.Errorf("Check(%q, %v): %q lacks %q", v, p, msg, w)
				}
			}
			if v != "" && !strings.Contains(msg, v) {
				t.Errorf("Check(%q, %v): %q does not name the version", v, p, msg)
			}
		}
		if r := Refusal(v); !strings.Contains(r, "function table") || !strings.Contains(r, "DWARF") {
			t.Errorf("Refusal(%q) = %q", v, r)
		}
	}
	if r := Refusal("go1.27.3"); r != "" {
		t.Errorf("Refusal(go1.27.3) = %q, want none", r)
	}
}

// Every release read says what was checked for every part.
func TestReleasesComplete(t *testing.T) {
	for _, r := range Releases {
		for _, p := range Parts {
			if r.Checked[p] == "" {
				t.Errorf("%s: nothing said of its %v", r.Go, p)
			}
		}
	}
}

// The tests run on a Go that was read: every other test of the repository relies on it.
func TestRunning(t *testing.T) {
	if Running() != runtime.Version() {
		t.Fatalf("Running() = %q, runtime.Version() %q: fake set in a test binary", Running(), runtime.Version())
	}
	if err := CheckRunning(FuncTab); err != nil {
		t.Fatalf("the tests run on a Go whose layouts are not read: %v", err)
	}
}
