package fprobe

import (
	"strings"
	"unsafe"

	"github.com/gosdt/gosdt/internal/rawptr"
	"github.com/gosdt/gosdt/sdt/internal/rt"
)

// A trace's predicate (sdtctl's --where) run by the return path itself, so that a
// trace with one has its returns written into its shared buffers too (direct.go):
// a return waiting in a ring for a Go predicate dies with the process.
//
// Pred is package pred's compiled program, copied instruction for instruction: the
// same tests, jumps and masks, run on the values the drain's Args would hold for the
// same return (registry's returnArgs and setWord), so the answer is Match's. It runs
// in retWhere, between retHandler and retDirect, with no safe point: nosplit, no
// allocation, no lock, no call but to one nosplit leaf (cmpWords), no bounds check
// (unsafe.Add), no string compared there: a return's strings are one of three texts,
// each compared with a test's literal when the program is made (NewPred).

// Pred is a predicate as the return path runs it: package pred's Program.
type Pred struct {
	Code []PredIns
	Need int // arguments a return must have: 1 + the highest index compared
}

// PredIns is one test of a Pred, package pred's ins: the test holds when Mask has
// the outcome; then it goes to T, else to F (forward: len(Code) accepts,
// len(Code)+1 rejects). A test of an argument of another kind rejects the return.
type PredIns struct {
	Op, Mask, X, Y uint8
	LK             uint8 // the literal's kind (PredAny)
	T, F           int32
	K              uint64 // the literal's bits
	S              string // the literal's text

	texts [len(returnTexts)]uint8 // the outcome of each text a return's String may have against S (NewPred)
}

// The tests of a PredIns (package pred's opcodes, in its order).
const (
	PredConst = iota // Mask != 0
	PredBool         // arg X, a Bool, is true
	PredInt          // arg X, an Int, against the int64 K
	PredUint         // arg X, a Uint, against the uint64 K
	PredStrEq        // arg X, a String, == S: Mask is eq or not
	PredStr          // arg X, a String, against S
	PredArgs         // arg X against arg Y, whatever their kinds
	PredAny          // arg X against the literal K/S of kind LK, whatever X's kind
)

// The outcomes of a comparison, Mask's bits (package pred's).
const (
	PredLt = 1 << iota
	PredEq
	PredGt
	PredUnordered // a NaN
)

// NewPred makes the return path's program of package pred's code, which needs
// arguments up to need-1. It keeps code, which nobody may change after.
func NewPred(code []PredIns, need int) *Pred {
	pr := &Pred{Code: code, Need: need}
	for i := range pr.Code {
		in := &pr.Code[i]
		for t := range in.texts {
			in.texts[t] = order(strings.Compare(returnTexts[t], in.S))
		}
	}
	return pr
}

// The texts a String argument of a return may have, by its value (argsOf): an
// interface nil or not (registry's setWord); a string result is carried by its
// length, so none other has a text: "" (the drain's Args read no string of a
// return either).
const (
	textNil = iota
	textNonNil
	textNone
)

var returnTexts = [...]string{textNil: nilText, textNonNil: nonNilText, textNone: ""}

// textOrder is the outcome of text x against text y, by their values.
var textOrder = func() (o [len(returnTexts)][len(returnTexts)]uint8) {
	for x := range o {
		for y := range o[x] {
			o[x][y] = order(strings.Compare(returnTexts[x], returnTexts[y]))
		}
	}
	return o
}()

// order is the outcome of a comparison that gave c (-1, 0, 1).
func order(c int) uint8 { return PredLt << (c + 1) }

// MatchReturn reports whether the return path passes a return whose result words
// are words and latency lat (ns; -1 unseen) through pr, its results read as results
// say: what retWhere decides, for tests to hold against package pred's Match.
func (pr *Pred) MatchReturn(results []DirectArg, lat int64, words [ReturnWords]uint64) bool {
	s := &DirectSet{Results: results}
	if len(s.Results) > MaxDirectResults {
		s.Results = s.Results[:MaxDirectResults]
	}
	var p pendingRet
	p.lat = lat
	s.argsOf(&p, unsafe.Pointer(&words))
	return pr.match(&p)
}

// retWhere readies the return event pending on its P (pendDirect) for retDirect:
// its goroutine's id and its latency in ns, and, for each trace with a predicate
// on the probe, whether the trace takes it (a bit of p.skip when not, the return
// counted filtered in the trace's buffer of the P, as its Fire counts a fire its
// predicate rejects). Called by retBody after retHandler, before retDirect, when
// some set has Filters (whereOn), with no safe point between: a frame of its own
// beside retDirect's, where the nosplit chain has room for the predicate's
// (retDirect's has none left with -N -l). The arguments are read once into the P's
// pendingRet, not onto the stack.
//
//go:nosplit
//go:norace
func retWhere(regs uintptr) {
	pid := rt.ProcPin()
	if uint(pid) < uint(len(pending)) {
		p := (*pendingRet)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(pending)), uintptr(pid)*unsafe.Sizeof(pendingRet{})))
		if p.set != 0 {
			s := (*DirectSet)(rawptr.At(p.set))
			p.ready()
			if s.Filters {
				s.argsOf(p, rawptr.At(regs))
				for i := 0; i < len(s.Bufs) && i < 64; i++ {
					b, pr := (*(**DirectBufs)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.Bufs)), uintptr(i)*unsafe.Sizeof(uintptr(0))))).pred(s.Probe, pid)
					if pr != nil && !pr.match(p) {
						*b.Filtered++
						p.skip |= 1 << i
					}
				}
			}
		}
	}
	rt.ProcUnpin()
}

// ready reads the goroutine's id and converts the latency to ns, once for the
// event pending in p: by retWhere when it runs, else by retDirect (with no
// predicate to run, retBody does not call retWhere), which marks p not done for
// the next. The latency a predicate passes is the one written.
//
//go:nosplit
//go:norace
func (p *pendingRet) ready() {
	if p.done != 0 {
		p.done = 0 // retDirect's call, after retWhere's
		return
	}
	p.g = uintptr(goidOf(p.g)) // the id, from here on
	if p.lat >= 0 {
		r := load64(&rateBits)
		p.lat = int64(float64(p.lat) * *(*float64)(unsafe.Pointer(&r))) // ns, from here on
	}
	p.skip = 0 // none filtered yet (a past event's bits are not this one's)
	if p.set != 0 {
		p.done = 1 // retWhere's call: retDirect's finds it done
	}
}

// pred is d's predicate on probe id and d's buffer of P pid, when the return path
// is to run it: nil when d has none, has not described the probe, or has no buffer
// for the P (retDirect counts the event lost then, as a fire's).
//
//go:nosplit
//go:norace
func (d *DirectBufs) pred(id uint32, pid int) (*DirectBuf, *Pred) {
	wp := (*[]*Pred)(loadPtr(&d.where))
	if wp == nil || uint(id) >= uint(len(*wp)) {
		return nil, nil
	}
	pr := *(**Pred)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(*wp)), uintptr(id)*unsafe.Sizeof(uintptr(0))))
	kp := (*[]uint64)(loadPtr(&d.known))
	if pr == nil || kp == nil || uintptr(id/64) >= uintptr(len(*kp)) ||
		*(*uint64)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(*kp)), uintptr(id/64)*8))&(1<<(id%64)) == 0 {
		return nil, nil
	}
	bp := (*[]DirectBuf)(loadPtr(&d.bufs))
	if bp == nil || uint(pid) >= uint(len(*bp)) {
		return nil, nil
	}
	return (*DirectBuf)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(*bp)), uintptr(pid)*unsafe.Sizeof(DirectBuf{}))), pr
}

// argsOf reads the arguments of the return pending in p (its latency in ns) and
// of its result words res into p, as the drain's Args holds them (registry's
// setWord): argument 0 the latency (an Int), 1+i result i; a String's value is its
// text's index (returnTexts).
//
//go:nosplit
//go:norace
func (s *DirectSet) argsOf(p *pendingRet, res unsafe.Pointer) {
	p.n = uint8(1 + len(s.Results))
	p.kinds[0], p.vals[0] = DirectInt, uint64(p.lat)
	for i := 0; i < len(s.Results); i++ {
		a := (*DirectArg)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s.Results)), uintptr(i)*unsafe.Sizeof(DirectArg{})))
		w := *(*uint64)(unsafe.Add(res, uintptr(a.Word%returnRegs)*8))
		k := a.Kind
		switch {
		case a.Iface:
			k = DirectString
			if w != 0 {
				w = textNonNil
			} else {
				w = textNil
			}
		case k == DirectString:
			w = textNone
		case k == DirectFloat && a.Size == 4:
			w32 := uint32(w)
			f := float64(*(*float32)(unsafe.Pointer(&w32)))
			w = *(*uint64)(unsafe.Pointer(&f))
		case k == DirectInt && a.Size < 8:
			sh := 64 - 8*uint(a.Size)
			w = uint64(int64(w<<sh) >> sh)
		}
		*(*uint8)(unsafe.Add(unsafe.Pointer(&p.kinds), 1+i)) = k
		*(*uint64)(unsafe.Add(unsafe.Pointer(&p.vals), 8*(1+i))) = w
	}
}

// match is package pred's Match on the arguments argsOf read into p. It calls only
// cmpWords, which calls nothing.
//
//go:nosplit
//go:norace
func (pr *Pred) match(p *pendingRet) bool {
	if int(p.n) < pr.Need {
		return false
	}
	pc := 0
	for pc < len(pr.Code) {
		in := (*PredIns)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(pr.Code)), uintptr(pc)*unsafe.Sizeof(PredIns{})))
		if in.X >= p.n || in.Y >= p.n {
			return false // not compiled for this probe
		}
		xk := *(*uint8)(unsafe.Add(unsafe.Pointer(&p.kinds), in.X))
		xw := *(*uint64)(unsafe.Add(unsafe.Pointer(&p.vals), 8*uintptr(in.X)))
		c := in.Mask
		switch in.Op {
		case PredConst:
		case PredBool:
			if xk != DirectBool {
				return false
			}
			c &= -uint8(xw & 1) // Mask when true, 0 when false
		case PredInt, PredUint:
			if xk != DirectInt+in.Op-PredInt {
				return false
			}
			c &= cmpWords(xk, xw, xk, in.K)
		case PredStrEq, PredStr:
			if xk != DirectString {
				return false
			}
			o := *(*uint8)(unsafe.Add(unsafe.Pointer(&in.texts), xw))
			if in.Op == PredStrEq && o != PredEq {
				o = ^uint8(PredEq) // Match's mask &^ eq
			}
			c &= o
		default: // PredArgs, PredAny: any kinds, compared by their classes
			yk, yw := in.LK, in.K
			if in.Op == PredArgs {
				yk = *(*uint8)(unsafe.Add(unsafe.Pointer(&p.kinds), in.Y))
				yw = *(*uint64)(unsafe.Add(unsafe.Pointer(&p.vals), 8*uintptr(in.Y)))
			}
			switch {
			case xk == DirectString && yk == DirectString && in.Op == PredAny:
				c &= *(*uint8)(unsafe.Add(unsafe.Pointer(&in.texts), xw))
			case xk == DirectString && yk == DirectString:
				c &= *(*uint8)(unsafe.Add(unsafe.Pointer(&textOrder), xw*uint64(len(returnTexts))+yw))
			case (xk == DirectString) != (yk == DirectString), (xk == DirectBool) != (yk == DirectBool), xk > DirectString, yk > DirectString:
				return false // classes that do not compare
			case xk == DirectBool:
				c &= cmpWords(DirectUint, xw&1, DirectUint, yw&1)
			default:
				c &= cmpWords(xk, xw, yk, yw)
			}
		}
		if c != 0 {
			pc = int(in.T)
		} else {
			pc = int(in.F)
		}
	}
	return pc == len(pr.Code)
}

// cmpWords is the outcome of number x (of kind xk: Int, Uint or Float, its slot's
// bits) against number y, exactly, as package pred's compare: a float against an
// integer without rounding the integer, a negative Int below every Uint, a NaN
// unordered. It calls nothing: a frame fewer on the nosplit chain with -N -l.
//
//go:nosplit
//go:norace
func cmpWords(xk uint8, x uint64, yk uint8, y uint64) uint8 {
	flip := false
	if yk == DirectFloat && xk != DirectFloat {
		xk, x, yk, y, flip = yk, y, xk, x, true
	}
	var less, more bool // x < y, x > y
	switch {
	case xk == DirectFloat:
		f := *(*float64)(unsafe.Pointer(&x))
		g := *(*float64)(unsafe.Pointer(&y))
		switch {
		case f != f || yk == DirectFloat && g != g:
			return PredUnordered
		case yk == DirectFloat:
			less, more = f < g, f > g
		case yk == DirectInt || y <= 1<<63-1:
			// In range, f's integer part is exact as an int64; its fraction
			// breaks a tie.
			less = f < -(1<<63) || f < 1<<63 && (int64(f) < int64(y) || int64(f) == int64(y) && f < float64(int64(f)))
			more = f >= 1<<63 || f >= -(1<<63) && (int64(f) > int64(y) || int64(f) == int64(y) && f > float64(int64(f)))
		default: // y a Uint above MaxInt64; f is integral this large
			less = f < 1<<63 || f < 1<<64 && uint64(f) < y
			more = f >= 1<<64 || f >= 1<<63 && uint64(f) > y
		}
	case xk == DirectInt && yk == DirectInt:
		less, more = int64(x) < int64(y), int64(x) > int64(y)
	case xk == DirectInt && int64(x) < 0:
		less = true // y is a Uint
	case yk == DirectInt && int64(y) < 0:
		more = true // x is a Uint
	default:
		less, more = x < y, x > y
	}
	if flip {
		less, more = more, less
	}
	switch {
	case less:
		return PredLt
	case more:
		return PredGt
	}
	return PredEq
}
