package control

import (
	"io"
	"time"

	"github.com/gosdt/gosdt/sdt/internal/consume"
	"github.com/gosdt/gosdt/sdt/internal/ctlserver"
)

// ServeConn serves one client connection, for tests that talk to the server over a
// pipe.
func ServeConn(c io.ReadWriteCloser, name string) { ctlserver.ServeConn(c, name) }

// OpenConsumers is the number of traces and aggregations open.
func OpenConsumers() int64 { return consume.OpenConsumers() }

// SetTimeouts sets how long a client may take to send its hello and its next
// request, until the returned function restores them.
func SetTimeouts(hello, idle time.Duration) (restore func()) {
	return ctlserver.SetTimeouts(hello, idle)
}

// SetBudget sets the memory budget (SDT_MEMORY, SDT_MEMORY_TRACE) until the returned
// function restores it.
func SetBudget(total, each uint64) (restore func()) { return consume.SetBudget(total, each) }

// BudgetInUse is what open traces and aggregations hold of the budget.
func BudgetInUse() uint64 { return consume.BudgetInUse() }

// TryBuffer makes a trace buffer of size bytes and frees it.
func TryBuffer(size int) error { return consume.TryBuffer(size) }

// BufSize is the size of each of t's buffers.
func BufSize(t *Trace) int { return consume.BufSize(t) }
