package offline_test

import (
	"bytes"
	"testing"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/arch/amd64"
	"github.com/gosdt/gosdt/arch/arm64"
	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/sled"
	"github.com/gosdt/gosdt/sled/offline"
)

// TestRescanSealedText: in the text of a sealed binary whose site table cannot be
// used, sled.Rescan finds exactly the sealed fire sites whose disabled sled jumps over
// their fire block, each as the table recorded it (address, length, flag, return
// address, sled, toggle), and nothing else: a guard site or a site whose fire block is
// out of line is never taken for one (nothing in the text says which probe it is, or
// where its jump goes). The sites sealing refused keep their compiler's code, and the
// scan finds them again. The fixture holds sites of every shape, for amd64 and arm64,
// optimized, as a PIE and (on a linux/amd64 host) with -race; sdt's test binary holds
// sdt's own probes, latency and guard sites among them.
func TestRescanSealedText(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a Go module six times, and sdt's tests twice")
	}
	dir := writeFixture(t)
	for _, a := range []*arch.Arch{&amd64.Arch, &arm64.Arch} {
		t.Run(a.Name+"/sdt.test", func(t *testing.T) {
			t.Parallel()
			scan, rescan, rejoins, err := offline.ScanAndRescanSealedRejoins(testbin.BuildTest(t, a.Name, "../../sdt"))
			if err != nil {
				t.Fatal(err)
			}
			checkRescan(t, a, scan, rescan, rejoins)
		})
		for _, mode := range fixtureModes {
			if !mode.inlined {
				continue
			}
			t.Run(a.Name+"/"+mode.name, func(t *testing.T) {
				t.Parallel()
				path := testbin.Build(t, dir, a.Name, ".", mode.flags...)
				scan, rescan, rejoins, err := offline.ScanAndRescanSealedRejoins(path)
				if err != nil {
					t.Fatal(err)
				}
				checkRescan(t, a, scan, rescan, rejoins)
			})
		}
	}
}

// checkRescan checks rescan against scan: rejoins says which fire sites' blocks come
// straight back to their jump's target after the fire call, which is what the text
// proves (a fire site whose block does more after it, as fbt's return sites do, stays
// disabled with the guards).
func checkRescan(t *testing.T, a *arch.Arch, scan, rescan *sled.Table, rejoins map[uintptr]bool) {
	t.Helper()
	want := map[uintptr]sled.Site{} // the sealed sites the text proves
	refused := map[uintptr]bool{}   // left as the compiler wrote them
	var guards, outOfLine int
	for _, s := range scan.Sites {
		switch {
		case !s.Sealable():
			refused[s.Addr] = true
		case s.Kind == sled.Guard:
			guards++
		case !a.Jumps(s.Off) || !rejoins[s.Addr]: // rejoins: only where the jump skips the fire block
			outOfLine++
		default:
			want[s.Addr] = s
		}
	}
	got := map[uintptr]bool{}
	for _, s := range rescan.Sites {
		if !s.Presealed {
			if !refused[s.Addr] {
				t.Errorf("site %#x found in compiler's form, which sealing replaced", s.Addr)
			}
			delete(refused, s.Addr)
			continue
		}
		got[s.Addr] = true
		w, ok := want[s.Addr]
		switch {
		case !ok:
			t.Errorf("site %#x (flag %#x) is no sealed fire site of the scan", s.Addr, s.Flag)
		case s.Len != w.Len || s.Flag != w.Flag || s.Kind != w.Kind || s.Return != w.Return ||
			!bytes.Equal(s.Off, w.Off) || !bytes.Equal(s.On, w.On) || s.ToggleAt != w.ToggleAt || s.Toggle != w.Toggle:
			t.Errorf("site %#x: found %+v\nsealed as %+v", s.Addr, s, w)
		case s.Orig != nil || !s.Sealable():
			t.Errorf("site %#x: compiler's bytes %x, refusal %v", s.Addr, s.Orig, s.Refusal)
		}
	}
	for addr := range want {
		if !got[addr] {
			t.Errorf("sealed fire site %#x not found in the text", addr)
		}
	}
	for addr := range refused {
		t.Errorf("site %#x, refused by sealing, not found again", addr)
	}
	if len(want) == 0 {
		t.Fatal("no sealed fire site to find")
	}
	t.Logf("%d sites: %d sealed fire sites found in the text, %d guard and %d out-of-line sites left disabled, %d refused",
		len(scan.Sites), len(got), guards, outOfLine, len(scan.Sites)-len(want)-guards-outOfLine)
}
