package consume

import (
	"runtime"
	"strconv"
	"strings"

	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// An aggregation keyed by stack (sdtctl stat --by stack, DTrace's @[ustack()]) folds
// each fire into the cell of its probe and its Go call stack: up to AggStackDepth
// return addresses from the function that fired (callStack, as trace --stack takes
// them), the key's string their bytes. A stack is a key like any: at most MaxRows
// per P, within the aggregation's budget, the rest counted (overflow). A row's name is
// the probe's, then one line per frame, innermost first, inlined calls expanded:
// "function\tfile:line".

// AggStackDepth is how many return addresses a stack key holds.
const AggStackDepth = MaxStack

// stackCell is the cell of f's probe and stack in sh; nil when there is no room (counted).
func (a *aggregation) stackCell(sh *aggShard, f *registry.Firing) *aggCell {
	var pcs [AggStackDepth + stackSkip]uintptr
	stack := callStack(pcs[:], f.Ret, AggStackDepth)
	var buf [AggStackDepth * 8]byte
	for i, pc := range stack {
		for j := range 8 {
			buf[8*i+j] = byte(pc >> (8 * j))
		}
	}
	k := aggKey{x: uint64(f.Probe), s: stringView(buf[:8*len(stack)]), str: true}
	if c := sh.recent(k.x); c != nil && c.key.is(&k) {
		return c
	}
	return sh.lookup(a, &k, a.hash(&k)) // insert copies the string
}

// stackName is a stack key's row name, made once per key (a.stackNames: readers,
// under a.mu; as many as the aggregation's cells).
func (a *aggregation) stackName(k aggKey) string {
	if n, ok := a.stackNames[k]; ok {
		return n
	}
	var b strings.Builder
	b.WriteString(a.c.name(uint32(k.x), a.c.soleFuncSite(uint32(k.x))))
	pcs := make([]uintptr, len(k.s)/8)
	for i := range pcs {
		for j := range 8 {
			pcs[i] |= uintptr(k.s[8*i+j]) << (8 * j)
		}
	}
	frames := runtime.CallersFrames(pcs)
	for {
		fr, more := frames.Next()
		if fr.Function != "" || fr.File != "" {
			b.WriteString("\n" + fr.Function + "\t" + fr.File + ":" + strconv.Itoa(fr.Line))
		}
		if !more {
			break
		}
	}
	n := b.String()
	if a.stackNames == nil {
		a.stackNames = map[aggKey]string{}
	}
	a.stackNames[k] = n
	return n
}
