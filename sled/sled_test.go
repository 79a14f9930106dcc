package sled_test

import (
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/patch"
	"github.com/gosdt/gosdt/sled"
	"github.com/gosdt/gosdt/sled/internal/fakesdt"
	"github.com/gosdt/gosdt/sled/offline"
)

var fake = fakesdt.New() // dynamic init: lives in bss, like a definition

//go:noinline
func fakeSites(n int) {
	for i := 0; i < n; i++ {
		fake.Fire(i)
	}
	if fake.Enabled() { // a guard around other code
		fakesdt.Sink *= 3
	}
}

// TestMain points discovery at the fake probe package: its sites in this test binary
// are the ones found.
func TestMain(m *testing.M) {
	restore := sled.SetProbePackage("github.com/gosdt/gosdt/sled/internal/fakesdt")
	code := testbin.Main(m)
	restore()
	os.Exit(code)
}

func TestDiscoverFindsSites(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("no site matcher for", runtime.GOARCH)
	}
	fakeSites(1)
	tab := sled.Discover()
	t.Logf("text %d bytes, %d candidates, %d sites, %d rejected, in %v",
		tab.TextBytes, tab.Candidates, len(tab.Sites), len(tab.Rejected), tab.Elapsed)
	var kinds []string
	for _, s := range tab.Sites {
		h := s.Describe()
		if h.Func == "sled.inlinesFake" {
			continue // TestSearchRanges's
		}
		if h.Func != "sled_test.fakeSites" {
			t.Errorf("site %#x in %s (%s), want only fakeSites", s.Addr, h.Func, h.Module)
			continue
		}
		if !s.Sealable() {
			t.Errorf("site %#x not sealable: %s", s.Addr, s.Refusal)
		}
		if h.Module != "github.com/gosdt/gosdt/sled_test" || !strings.HasSuffix(h.File, "sled_test.go") || h.Line == 0 {
			t.Errorf("site %#x named %+v", s.Addr, h)
		}
		end := s.ToggleAt + s.Toggle
		if len(s.Off) != s.Len || len(s.On) != s.Len || string(s.Off[end:]) != string(s.On[end:]) || string(s.Off[:s.ToggleAt]) != string(s.On[:s.ToggleAt]) {
			t.Errorf("site %#x: sleds % x / % x differ beyond the toggle (%d at +%d)", s.Addr, s.Off, s.On, s.Toggle, s.ToggleAt)
		}
		if !patch.CanAtomic(s.Addr+uintptr(s.ToggleAt), s.Toggle) && patch.Supported() {
			t.Errorf("site %#x: toggle of %d bytes at +%d is not one atomic store", s.Addr, s.Toggle, s.ToggleAt)
		}
		if s.Note != "" {
			t.Logf("site %#x sealed with a note: %s", s.Addr, s.Note)
		}
		if runtime.GOARCH == "arm64" && (s.Note == "") != (len(s.Also) == 1) {
			t.Errorf("site %#x: note %q with %d extra rewrites; want the load's rewrite or a note", s.Addr, s.Note, len(s.Also))
		}
		if s.Kind == sled.Fire && s.Return == 0 {
			t.Errorf("fire site %#x has no return address", s.Addr)
		}
		kinds = append(kinds, s.Kind.String())
	}
	if got := strings.Join(kinds, ","); got != "fire,guard" {
		t.Errorf("site kinds %q, want fire,guard", got)
	}
}

// BenchmarkDiscover measures a whole discovery of this test binary's text.
func BenchmarkDiscover(b *testing.B) {
	var tab *sled.Table
	for b.Loop() {
		tab = sled.Discover()
	}
	b.ReportMetric(float64(tab.TextBytes)/1e6, "text-MB")
	b.ReportMetric(float64(tab.Candidates), "candidates")
	b.ReportMetric(float64(len(tab.Sites)), "sites")
}

// TestDiscoverFile reads this test binary from its file (package offline): the same
// sites as the running program's, at their link-time addresses (the test binary is not
// PIE), named the same.
func TestDiscoverFile(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skip("no site matcher for", runtime.GOARCH)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	ft, err := offline.Discover(exe)
	if err != nil {
		t.Fatal(err)
	}
	lt := sled.Discover()
	if len(ft.Sites) != len(lt.Sites) || len(ft.Sites) == 0 {
		t.Fatalf("file: %d sites, live: %d", len(ft.Sites), len(lt.Sites))
	}
	for i, s := range ft.Sites {
		l := lt.Sites[i]
		if fh, lh := s.Describe(), l.Describe(); s.Addr != l.Addr || s.Kind != l.Kind || string(s.Off) != string(l.Off) || fh != lh {
			t.Errorf("file site %#x %v %+v, live %#x %v %+v", s.Addr, s.Kind, fh, l.Addr, l.Kind, lh)
		}
	}
	if _, err := offline.Discover("/bin/sh"); err == nil || !strings.Contains(err.Error(), "not a Go binary") {
		t.Errorf("offline.Discover(/bin/sh) = %v, want not a Go binary", err)
	}
}
