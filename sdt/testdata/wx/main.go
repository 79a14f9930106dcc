// Command wx is the program sdt's W^X tests start under a policy that refuses to make
// text writable (testdata/wxlaunch). It prints, as JSON, what List says of its sites,
// what Enable and Disable returned, how many fires its handler saw before, while and
// after the probe is enabled, and which of its mappings are writable and executable.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/gosdt/gosdt/patch"
	"github.com/gosdt/gosdt/sdt"
)

var hit = sdt.Define1[int]("wx", "hit", "i")

//go:noinline
func work(n int) {
	for i := range n {
		sdt.Probe1(&hit, i)
	}
}

type result struct {
	Sites, Branch   int
	Reasons, Notes  []string
	EnableErr       string
	TextNotWritable bool // errors.Is(EnableErr, patch.ErrTextNotWritable)
	ListedOn        bool // List says the probe is on after Enable
	FlagOn          bool // hit.Enabled() after Enable
	Fires           [3]int64
	DisableErr      string
	WX              []string // writable and executable mappings at the end
}

func main() {
	var r result
	var fires atomic.Int64
	defer hit.Attach(func(int) { fires.Add(1) })()
	list := func() []sdt.ProbeInfo {
		infos, err := sdt.List("wx:::hit")
		if err != nil {
			panic(err)
		}
		return infos
	}
	for _, pi := range list() {
		for _, s := range pi.Sites {
			r.Sites++
			if s.State == sdt.BranchOnly {
				r.Branch++
			}
			if s.Reason != "" && !slices.Contains(r.Reasons, s.Reason) {
				r.Reasons = append(r.Reasons, s.Reason)
			}
			if s.Note != "" && !slices.Contains(r.Notes, s.Note) {
				r.Notes = append(r.Notes, s.Note)
			}
		}
	}
	work(10)
	r.Fires[0] = fires.Swap(0)
	if _, err := sdt.Enable("wx:::hit"); err != nil {
		r.EnableErr = err.Error()
		r.TextNotWritable = errors.Is(err, patch.ErrTextNotWritable)
	}
	for _, pi := range list() {
		r.ListedOn = r.ListedOn || pi.Enabled
	}
	r.FlagOn = hit.Enabled()
	work(10)
	r.Fires[1] = fires.Swap(0)
	if r.EnableErr == "" {
		if _, err := sdt.Disable("wx:::hit"); err != nil {
			r.DisableErr = err.Error()
		}
	}
	work(10)
	r.Fires[2] = fires.Swap(0)
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		panic(err)
	}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if p := strings.Fields(s.Text())[1]; p[1] == 'w' && p[2] == 'x' {
			r.WX = append(r.WX, s.Text())
		}
	}
	json.NewEncoder(os.Stdout).Encode(r)
}
