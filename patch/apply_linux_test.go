//go:build amd64 || arm64

package patch

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// siteWrite switches testTarget's site from one state to the other. A width beyond the site
// rewrites the following bytes with themselves, which makes the write non-atomic.
func siteWrite(from, to []byte, width int) Write {
	addr := testTargetAddr()
	rest := append([]byte(nil), text(addr, width)[len(from):]...)
	return Write{
		Addr: addr,
		Old:  append(append([]byte(nil), from...), rest...),
		New:  append(append([]byte(nil), to...), rest...),
	}
}

func setSite(on bool, width int, o Options) (Report, error) {
	if on {
		return Apply([]Write{siteWrite(siteOff, siteOn, width)}, o)
	}
	return Apply([]Write{siteWrite(siteOn, siteOff, width)}, o)
}

// resetSite puts the site back to its initial state when the test ends.
func resetSite(t testing.TB) {
	t.Cleanup(func() {
		if bytes.Equal(text(testTargetAddr(), len(siteOn)), siteOn) {
			if _, err := setSite(false, len(siteOn), Options{}); err != nil {
				t.Fatalf("reset site: %v", err)
			}
		}
	})
}

// perms returns the /proc/self/maps permissions of the mapping holding addr.
func perms(t testing.TB, addr uintptr) string {
	t.Helper()
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		var lo, hi uint64
		fields := strings.Fields(s.Text())
		if _, err := fmt.Sscanf(fields[0], "%x-%x", &lo, &hi); err != nil {
			t.Fatalf("maps line %q: %v", s.Text(), err)
		}
		if uint64(addr) >= lo && uint64(addr) < hi {
			return fields[1]
		}
	}
	t.Fatalf("%#x not mapped", addr)
	return ""
}

func checkRX(t testing.TB) {
	t.Helper()
	if p := perms(t, testTargetAddr()); p != "r-xp" {
		t.Errorf("site page is %s, want r-xp", p)
	}
}

func TestTargetShape(t *testing.T) {
	addr := testTargetAddr()
	if got := text(addr, len(siteOff)); !bytes.Equal(got, siteOff) {
		t.Fatalf("site holds % x, want % x", got, siteOff)
	}
	if !CanAtomic(addr, len(siteOff)) {
		t.Fatalf("site %#x: 2-byte write not CanAtomic", addr)
	}
	if CanAtomic(addr, wideLen) {
		t.Fatalf("site %#x: %d-byte write CanAtomic", addr, wideLen)
	}
	if testTarget() != 0 {
		t.Fatal("testTarget returns 1 with the jump in place")
	}
	checkRX(t)
}

func TestApplyToggles(t *testing.T) {
	for _, tc := range []struct {
		proto, want Protocol
		width       int
	}{
		{Atomic, Atomic, len(siteOn)},
		{Rendezvous, Rendezvous, len(siteOn)},
		{Auto, Atomic, len(siteOn)},
		{Auto, Rendezvous, wideLen},
		{Rendezvous, Rendezvous, wideLen},
		// Nothing runs the test target while these tests toggle it: Quiescent's promise.
		{Quiescent, Quiescent, len(siteOn)},
		{Quiescent, Quiescent, wideLen},
	} {
		t.Run(fmt.Sprintf("%v/width=%d", tc.proto, tc.width), func(t *testing.T) {
			resetSite(t)
			for i, on := range []bool{true, false, true, false} {
				rep, err := setSite(on, tc.width, Options{Protocol: tc.proto})
				if err != nil {
					t.Fatalf("toggle %d: %v", i, err)
				}
				if rep.Protocol != tc.want || rep.Pages < 1 || (tc.want == Rendezvous) != (rep.Attempts > 0) {
					t.Errorf("toggle %d: report %+v", i, rep)
				}
				want := uint64(0)
				if on {
					want = 1
				}
				if got := testTarget(); got != want {
					t.Fatalf("toggle %d: testTarget() = %d, want %d", i, got, want)
				}
				checkRX(t)
			}
		})
	}
}

func TestAtomicRefusesWideWrite(t *testing.T) {
	_, err := setSite(true, wideLen, Options{Protocol: Atomic})
	if !errors.Is(err, ErrNotAtomic) {
		t.Fatalf("Apply = %v, want ErrNotAtomic", err)
	}
	if testTarget() != 0 {
		t.Fatal("site changed")
	}
}

func TestMismatch(t *testing.T) {
	for _, p := range []Protocol{Atomic, Rendezvous, Quiescent} {
		t.Run(p.String(), func(t *testing.T) {
			resetSite(t)
			before := append([]byte(nil), text(testTargetAddr(), wideLen)...)
			// Two writes: one that would succeed, one whose Old is wrong; neither may land.
			good := siteWrite(siteOff, siteOn, len(siteOn))
			n := len(siteOn)
			bad := Write{Addr: good.Addr + uintptr(n), Old: bytes.Repeat([]byte{0xcc}, n), New: siteOn}
			_, err := Apply([]Write{good, bad}, Options{Protocol: p})
			var me *SiteMismatchError
			if !errors.As(err, &me) {
				t.Fatalf("Apply = %v, want *SiteMismatchError", err)
			}
			if me.Addr != bad.Addr || !bytes.Equal(me.Want, bad.Old) || !bytes.Equal(me.Got, before[n:2*n]) {
				t.Errorf("error %+v", me)
			}
			if after := text(testTargetAddr(), wideLen); !bytes.Equal(after, before) {
				t.Errorf("text changed: % x -> % x", before, after)
			}
			checkRX(t)
		})
	}
}

// TestErrorRestoresRX fails the batch while the pages are writable.
func TestErrorRestoresRX(t *testing.T) {
	errHook := errors.New("injected")
	t.Cleanup(func() { testHookWritable = nil })
	for _, p := range []Protocol{Atomic, Rendezvous, Quiescent} {
		testHookWritable = func() error { return errHook } // inside the rendezvous: no allocation
		if p != Rendezvous {
			testHookWritable = func() error {
				if p := perms(t, testTargetAddr()); p != "rwxp" {
					t.Errorf("while writable the page is %s, want rwxp", p)
				}
				return errHook
			}
		}
		before := append([]byte(nil), text(testTargetAddr(), wideLen)...)
		if _, err := setSite(true, len(siteOn), Options{Protocol: p}); !errors.Is(err, errHook) {
			t.Errorf("%v: Apply = %v, want the injected error", p, err)
		}
		if after := text(testTargetAddr(), wideLen); !bytes.Equal(after, before) {
			t.Errorf("%v: text changed: % x -> % x", p, before, after)
		}
		checkRX(t)
	}
}

func TestApplyEmpty(t *testing.T) {
	if _, err := Apply(nil, Options{}); err != nil {
		t.Fatal(err)
	}
}

// TestPageSpans checks merging of the page ranges that get made writable.
func TestPageSpans(t *testing.T) {
	ps := pageSize
	w := func(a uintptr, n int) Write { return Write{Addr: a, Old: make([]byte, n), New: make([]byte, n)} }
	got := pageSpans([]Write{w(5*ps+10, 2), w(2*ps-1, 2), w(5*ps+20, 2), w(9*ps, 1)})
	want := []span{{ps, 3 * ps}, {5 * ps, 6 * ps}, {9 * ps, 10 * ps}}
	if fmt.Sprint(got) != fmt.Sprint(want) || countPages(got) != 4 {
		t.Errorf("pageSpans = %v (%d pages), want %v", got, countPages(got), want)
	}
}
