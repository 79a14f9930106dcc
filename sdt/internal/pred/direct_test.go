package pred

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/sdt/internal/fprobe"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// TestDirectAgrees: the return path's run of a predicate (Program.Direct, fprobe's
// Pred) answers as Match does on the Args the drain builds for the same return
// (registry.ReturnArgs), for random predicates on random return layouts and values:
// the latency and results of every kind a return carries (integers of each size,
// floats of both, bools, interfaces nil or not), compiled for the layout's kinds,
// for kinds only fires tell, or for another layout.
func TestDirectAgrees(t *testing.T) {
	rounds := 100000
	if testing.Short() {
		rounds = 4000
	}
	r := rand.New(rand.NewPCG(1, uint64(rounds)))
	var programs, fires, matched, rejected int
	for range rounds {
		layout := randLayout(r)
		args := layoutArgs(layout)
		switch r.IntN(4) {
		case 0: // kinds only fires tell
			for i := range args {
				args[i].Kind = registry.Unknown
			}
		case 1: // compiled for another layout than the one that fires
			args = layoutArgs(randLayout(r))
		}
		src := randExpr(r, len(args), 0)
		p, err := Compile(src, args)
		if err != nil {
			continue
		}
		programs++
		d := p.Direct()
		for range 20 {
			lat := randLatency(r)
			var w [fprobe.ReturnWords]uint64
			for i := range w {
				w[i] = randWord(r)
			}
			a := registry.ReturnArgs(layout, lat, w)
			want := p.Match(a)
			if got := d.MatchReturn(layout, lat, w); got != want {
				t.Fatalf("%q (%s) on latency %d, words %#x, layout %+v: return path %v, Match %v\nargs %+v",
					src, p, lat, w, layout, got, want, a)
			}
			fires++
			if want {
				matched++
			} else {
				rejected++
			}
		}
	}
	t.Logf("%d programs, %d returns: %d matched, %d rejected", programs, fires, matched, rejected)
	if programs < rounds/4 || matched < fires/10 || rejected < fires/10 {
		t.Fatalf("too few programs compiled or one-sided answers: %d programs, %d matched, %d rejected", programs, matched, rejected)
	}
}

// randLayout is a return probe's results as the registry reads them (resultArg).
func randLayout(r *rand.Rand) []fprobe.DirectArg {
	l := make([]fprobe.DirectArg, r.IntN(fprobe.MaxDirectResults+1))
	for i := range l {
		a := fprobe.DirectArg{Word: uint8(r.IntN(fprobe.ReturnWords))}
		switch r.IntN(7) {
		case 0:
			a.Kind, a.Size = fprobe.DirectInt, []uint8{1, 2, 4, 8}[r.IntN(4)]
		case 1:
			a.Kind, a.Size = fprobe.DirectUint, []uint8{1, 2, 4, 8}[r.IntN(4)]
		case 2:
			a.Kind, a.Size = fprobe.DirectBool, 1
		case 3:
			a.Kind, a.Size = fprobe.DirectFloat, []uint8{4, 8}[r.IntN(2)]
		case 4, 5:
			a.Kind, a.Size, a.Iface = fprobe.DirectString, 8, true
		case 6:
			a.Kind, a.Size = fprobe.DirectInt, 8
		}
		l[i] = a
	}
	return l
}

// layoutArgs is the return probe's arguments: the latency, then the results.
func layoutArgs(l []fprobe.DirectArg) []Arg {
	args := []Arg{{"latency_ns", registry.Int}}
	for i, a := range l {
		args = append(args, Arg{"r" + strconv.Itoa(i), registry.Kind(a.Kind)})
	}
	return args
}

func randLatency(r *rand.Rand) int64 {
	switch r.IntN(4) {
	case 0:
		return -1 // unseen entry
	case 1:
		return int64(r.IntN(3))
	}
	return r.Int64N(1 << 40)
}

// randWord is a result register: small numbers, extremes, float64 and float32
// bits of edge values, and anything.
func randWord(r *rand.Rand) uint64 {
	floats := []float64{0, math.Copysign(0, -1), 0.5, -0.5, 1, -1, 2.5, 1e19, -1e19, 1 << 63, -(1 << 63),
		1 << 64, math.Inf(1), math.Inf(-1), math.NaN(), 9007199254740993, float64(1<<63) - 1024}
	switch r.IntN(8) {
	case 0:
		return uint64(r.IntN(5))
	case 1:
		return []uint64{math.MaxUint64, 1 << 63, math.MaxInt64, 0xff, 0x80, 0xffff, 0x8000, 0x7fffffff, 0x80000000, 0xffffffff}[r.IntN(10)]
	case 2:
		return math.Float64bits(floats[r.IntN(len(floats))])
	case 3:
		return uint64(math.Float32bits(float32(floats[r.IntN(len(floats))])))
	case 4:
		return 0 // a nil interface, false, zero
	}
	return r.Uint64()
}

// randExpr is a predicate's source on n arguments (argN), up to a few levels deep.
func randExpr(r *rand.Rand, n, depth int) string {
	if depth < 3 {
		switch r.IntN(6) {
		case 0:
			return randExpr(r, n, depth+1) + " && " + randExpr(r, n, depth+1)
		case 1:
			return randExpr(r, n, depth+1) + " || " + randExpr(r, n, depth+1)
		case 2:
			return "!(" + randExpr(r, n, depth+1) + ")"
		}
	}
	if r.IntN(10) == 0 {
		return randOperand(r, n) // a bool argument alone, or a literal
	}
	ops := []string{"==", "!=", "<", "<=", ">", ">="}
	return randOperand(r, n) + " " + ops[r.IntN(len(ops))] + " " + randOperand(r, n)
}

func randOperand(r *rand.Rand, n int) string {
	switch r.IntN(10) {
	case 0, 1, 2, 3:
		return "arg" + strconv.Itoa(r.IntN(n))
	case 4:
		return strconv.FormatInt(r.Int64N(7)-3, 10)
	case 5:
		return []string{"-9223372036854775808", "9223372036854775807", "0xffffffffffffffff", "0x8000000000000000",
			"1000000000000", "-1", "255", "-128"}[r.IntN(8)]
	case 6, 7:
		return strconv.Quote([]string{"<nil>", "non-nil", "", "<", "non", "non-nil\x00", "<nil>x", "a", "\xff"}[r.IntN(9)])
	case 8:
		return []string{"true", "false"}[r.IntN(2)]
	}
	return strconv.FormatUint(r.Uint64N(1<<20), 10)
}

// TestDirectSameCode: Direct copies every instruction of the program.
func TestDirectSameCode(t *testing.T) {
	p := mustCompile(t, `n > 5 && (path == "/a" || !ok) && u != f && x < "b"`, probe)
	d := p.Direct()
	if len(d.Code) != len(p.code) || d.Need != p.need {
		t.Fatalf("Direct: %d instructions needing %d, want %d needing %d", len(d.Code), d.Need, len(p.code), p.need)
	}
	for i, in := range p.code {
		c := d.Code[i]
		if c.Op != uint8(in.op) || c.Mask != in.mask || c.X != in.x || c.Y != in.y || c.LK != uint8(in.lk) ||
			c.T != in.t || c.F != in.f || c.K != in.k || c.S != in.s {
			t.Fatalf("instruction %d: %+v, want %+v", i, c, in)
		}
	}
	if (*Program)(nil).Direct() != nil {
		t.Fatal("a nil Program's Direct is not nil")
	}
	if !strings.Contains(p.String(), "&&") {
		t.Fatal(p.String())
	}
}

// FuzzDirect: for any predicate that compiles for a return layout (kinds and sizes
// from layout's bytes) and any latency and result words, the return path's run of it
// answers as Match does on the drain's Args.
func FuzzDirect(f *testing.F) {
	f.Add(`r0 == "<nil>" || arg2 > -3`, []byte{4, 0, 5}, int64(7), uint64(0), uint64(1<<63), uint64(5), uint64(math.Float64bits(2.5)))
	f.Add(`arg1 < arg2 && !(latency_ns >= 1000)`, []byte{3, 6, 0}, int64(-1), uint64(math.Float32bits(-1.5)), uint64(math.MaxUint64), uint64(0), uint64(0))
	f.Add(`r1 != r2 && r0`, []byte{2, 4, 5}, int64(0), uint64(3), uint64(0), uint64(9), uint64(0))
	f.Fuzz(func(t *testing.T, src string, layout []byte, lat int64, w0, w1, w2, w3 uint64) {
		var l []fprobe.DirectArg
		for i, b := range layout {
			if i == fprobe.MaxDirectResults {
				break
			}
			a := fprobe.DirectArg{Word: b >> 4 % fprobe.ReturnWords}
			switch b & 0xf % 7 {
			case 0:
				a.Kind, a.Size = fprobe.DirectInt, 1<<(b>>6)
			case 1:
				a.Kind, a.Size = fprobe.DirectUint, 8
			case 2:
				a.Kind, a.Size = fprobe.DirectBool, 1
			case 3:
				a.Kind, a.Size = fprobe.DirectFloat, 4
			case 4:
				a.Kind, a.Size = fprobe.DirectFloat, 8
			case 5:
				a.Kind, a.Size, a.Iface = fprobe.DirectString, 8, true
			case 6:
				a.Kind, a.Size = fprobe.DirectInt, 8
			}
			l = append(l, a)
		}
		p, err := Compile(src, layoutArgs(l))
		if err != nil {
			return
		}
		w := [fprobe.ReturnWords]uint64{w0, w1, w2, w3}
		if got, want := p.Direct().MatchReturn(l, lat, w), p.Match(registry.ReturnArgs(l, lat, w)); got != want {
			t.Fatalf("%q on latency %d, words %#x, layout %+v: return path %v, Match %v", src, lat, w, l, got, want)
		}
	})
}
