package consume

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
)

// The memory budget: what traces and aggregations, sdtctl's and the program's own,
// may take of the process's memory. Two limits, both the process owner's to change
// in its environment: SDT_MEMORY_TRACE for one trace or aggregation, SDT_MEMORY for
// all of them at once. A trace takes its buffers (Ps x buffer size) whole when it
// opens; an aggregation is charged as keys come, a cell per key and P, and what
// does not fit is counted in its overflow, as a full trace buffer counts drops.
//
// The defaults: one trace may take 256 MiB, the default 4 MiB buffers of 64 Ps, and
// all together 512 MiB. A trace's buffers are committed by the kernel page by page
// as a P first writes them (linux), so Ps that never fire cost address space, not
// memory; the budget counts address space, the figure a limit like ulimit -v sees.
// Where the process has a memory limit (ulimit -v, its cgroup's), a trace may also
// take at most half of what is left under it, so that the program's own heap keeps
// room to grow.

// Budget defaults (SDT_MEMORY, SDT_MEMORY_TRACE).
const (
	defaultMemory      = 512 << 20
	defaultMemoryTrace = 256 << 20
)

// ErrBudget is matched (errors.Is) by the error of a trace or aggregation that
// would take more memory than its budget allows.
var ErrBudget = errors.New("over the memory budget")

// budgetError is a refusal: what was asked, and which budget it is over.
type budgetError struct{ msg string }

func (e *budgetError) Error() string        { return e.msg }
func (e *budgetError) Is(target error) bool { return target == ErrBudget }

// budget is the process's: the configured limits, and what all open traces and
// aggregations hold of them.
var budget struct {
	once        sync.Once     // reads the environment, at the first trace or aggregation
	total, each atomic.Uint64 // the limits
	used        atomic.Uint64
}

// budgetLimits is the budget's limits, read from the environment the first time.
func budgetLimits() (total, each uint64) {
	budget.once.Do(func() {
		total, each := budgetFromEnv()
		budget.total.Store(total)
		budget.each.Store(each)
	})
	return budget.total.Load(), budget.each.Load()
}

// budgetFromEnv reads SDT_MEMORY and SDT_MEMORY_TRACE.
func budgetFromEnv() (total, each uint64) {
	return envSize("SDT_MEMORY", defaultMemory), envSize("SDT_MEMORY_TRACE", defaultMemoryTrace)
}

// envSize is the size in bytes the variable name says, with an optional k, m or g
// (powers of 1024); def if it is unset, or in error (which is said on stderr).
func envSize(name string, def uint64) uint64 {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	num, shift := s, uint(0)
	switch s[len(s)-1] {
	case 'k', 'K':
		shift = 10
	case 'm', 'M':
		shift = 20
	case 'g', 'G':
		shift = 30
	}
	if shift > 0 {
		num = s[:len(s)-1]
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil || n > 1<<50>>shift {
		Warnf("%s=%q: want bytes, with k, m or g (at most 1024 TiB); %d kept", name, s, def)
		return def
	}
	return n << shift
}

// sizeString says n bytes in the largest unit it reaches: "256 MiB", "1.5 GiB".
func sizeString(n uint64) string {
	unit, shift := " bytes", uint(0)
	switch {
	case n >= 1<<30:
		unit, shift = " GiB", 30
	case n >= 1<<20:
		unit, shift = " MiB", 20
	case n >= 1<<10:
		unit, shift = " KiB", 10
	}
	s := strconv.FormatUint(n>>shift, 10)
	if tenths := (n & (1<<shift - 1)) * 10 >> shift; tenths > 0 {
		s += "." + strconv.FormatUint(tenths, 10)
	}
	return s + unit
}

// allowance is what a trace or aggregation may take now, the least of: what its
// own budget leaves it, half of what the process's memory limits leave, and what is
// left of the total; and which of them it is, for a refusal.
type allowance struct {
	n     uint64
	own   uint64 // n but for the total: what the consumer may grow to as others close
	by    int    // which n is: byTrace, byLimit or byTotal
	limit uint64 // that budget or limit, in bytes
	what  string // byLimit: its name
}

const (
	byTrace = iota
	byLimit
	byTotal
)

// currentAllowance is the allowance of a trace or aggregation that holds held bytes.
func currentAllowance(held uint64) allowance {
	total, each := budgetLimits()
	a := allowance{by: byTrace, limit: each}
	if held < each {
		a.n = each - held
	}
	if room, what, ok := headroom(); ok && room/2 < a.n {
		a = allowance{n: room / 2, by: byLimit, limit: room, what: what}
	}
	a.own = a.n
	if used := budget.used.Load(); used+a.n > total {
		a.n, a.by, a.limit = 0, byTotal, total
		if used < total {
			a.n = total - used
		}
	}
	return a
}

// refuse is the error of a request for asked bytes (what says of what) over a.
func (a allowance) refuse(what string, asked uint64) error {
	var why string
	switch a.by {
	case byTrace:
		why = fmt.Sprintf("the %s one trace or aggregation may take (SDT_MEMORY_TRACE in the process's environment)", sizeString(a.limit))
	case byLimit:
		why = fmt.Sprintf("half of the %s the %s leaves the process", sizeString(a.limit), a.what)
	default:
		why = fmt.Sprintf("the %s left of the %s all traces and aggregations may take (SDT_MEMORY in the process's environment)",
			sizeString(a.n), sizeString(a.limit))
	}
	return &budgetError{fmt.Sprintf("control: %s: %s, more than %s", what, sizeString(asked), why)}
}

// takeBudget charges n bytes to the process's total; false, and nothing charged, if
// they do not fit. Safe on a pinned goroutine (atomics only): the limits were read
// when the consumer opened (currentAllowance).
func takeBudget(n uint64) bool {
	if budget.used.Add(n) > budget.total.Load() {
		budget.used.Add(-n)
		return false
	}
	return true
}

// giveBudget gives back what takeBudget took.
func giveBudget(n uint64) { budget.used.Add(-n) }
