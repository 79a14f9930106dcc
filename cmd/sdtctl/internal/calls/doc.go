// Package calls turns the events of a process's trace streams into calls: it puts
// each goroutine's events in the order they fired, pairs every function's entry with
// its return, nests the calls a goroutine makes inside one another, and hands a Sink
// each call as it opens and closes, and every other event with the call it fired in.
// sdtctl export makes spans of them.
//
// It works from what the control protocol says of a probe (ctlproto.Desc: its name,
// its arguments' names and kinds), not from how the probe was made, so that every kind
// of timed pair is a call:
//
//	entry   a probe named "entry": opens a call of its function (provider, module and
//	        function of the probe's name), its arguments the call's
//	return  a probe named "return" whose first argument is latency_ns: closes the
//	        innermost open call of its function on the goroutine; without one (its
//	        entry was not traced, or lost), a call of latency_ns that ends here
//	timed   any other probe whose first argument is latency_ns (sdt.DefineLatency):
//	        a call of latency_ns that ends here
//	plain   every other probe: an event of the innermost call open on its goroutine
//
// fbt probes (sdtctl toolexec -rules) are entry and return; run-time function probes
// named the same are too.
//
// # Order
//
// Records of one P arrive in the order they fired; records of different Ps, and of
// different streams, may not. An Assembler holds what it is given for a window of
// the process's time (in the ticks its records carry, which all of a process's
// streams share) behind the newest record of every stream still sending, and releases
// what is older in the order the records fired. A stream that has sent nothing for
// a while (Idle) no longer holds the others back; but silence does not say that a
// process has sent everything (it may not have been running, and the returns of
// run-time probes wait in rings drained after their calls' entries were sent), so
// the last window is held until every stream has been silent for Settle. A record
// that comes after its window has passed is still used, in the order it came, and
// counted Late; past MaxPending records held, the oldest go before their window has
// passed, counted Early.
package calls
