package consume

// Hooks for package control's tests, which test the consumers through the API
// programs use; nothing else calls them.

// OpenConsumers is the number of traces and aggregations open.
func OpenConsumers() int64 { return consumers.Load() }

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
func BufSize(t *Trace) int { return t.s.size }
