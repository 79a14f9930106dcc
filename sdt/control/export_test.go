package control

import (
	"io"
	"time"
)

// ServeConn serves one client connection, for tests that talk to the server over a
// pipe.
func ServeConn(c io.ReadWriteCloser, name string) { serve(c, name) }

// OpenConsumers is the number of traces and aggregations open.
func OpenConsumers() int64 { return consumers.Load() }

// SetTimeouts sets how long a client may take to send its hello and its next
// request, until the returned function restores them.
func SetTimeouts(hello, idle time.Duration) (restore func()) {
	h, i := testTimeouts[0].Swap(int64(hello)), testTimeouts[1].Swap(int64(idle))
	return func() { testTimeouts[0].Store(h); testTimeouts[1].Store(i) }
}

// SetBudget sets the memory budget (SDT_MEMORY, SDT_MEMORY_TRACE) until the returned
// function restores it.
func SetBudget(total, each uint64) (restore func()) {
	t, e := budgetLimits()
	budget.total.Store(total)
	budget.each.Store(each)
	return func() {
		budget.total.Store(t)
		budget.each.Store(e)
	}
}

// BudgetInUse is what open traces and aggregations hold of the budget.
func BudgetInUse() uint64 { return budget.used.Load() }

// TryBuffer makes a trace buffer of size bytes and frees it.
func TryBuffer(size int) error {
	b, err := newPbuf(size, true, nil)
	if err == nil {
		b.free()
	}
	return err
}

// BufSize is the size of each of t's buffers.
func (t *Trace) BufSize() int { return t.s.size }
