// Package sdt is gosdt's API: DTrace-style static probes whose disabled sites cost one
// jump, switched on and off in the running process by rewriting that jump.
//
// Define a probe once, as a package-level variable, and fire it where it happens:
//
//	var procExit = sdt.Define1[int]("proc", "exit", "reason")
//	...
//	sdt.Probe1(&procExit, reason)
//
// At start, before any package that uses it initialises, the probe registry finds
// every site (package sled) and seals it into a jump over the fire call (package
// patch); this package's init then starts package sdt/control, which serves sdtctl on a unix socket (linux) from 20 ms later: a
// program needs no code for sdtctl to reach it. Enable and Disable take DTrace probe
// descriptions, provider:module:function:name. Typed handlers (Attach) consume fires
// in the process; so do sdt/control's traces and aggregations (what sdtctl trace and
// stat use), without the socket.
//
// Latency probes (DefineLatency, DefineLatency1) time a block: Start reads the clock
// only while the probe is on, End fires with latency_ns. Function-boundary probes
// (fbt:<package>:<function>:entry and :return) are not written by hand: sdtctl
// toolexec -rules gives them to the functions a rules file names, and HookFuncs
// attaches in-process hooks to them.
//
// A site is on while anyone holds it: the program (Enable), SDT_MODE, each sdtctl
// client and each USDT tracer hold it separately, and each Disable releases only its
// own hold (a *StillHeldError names who keeps the rest on). Errors match ErrNoMatch,
// ErrMalformedSpec (a *SpecError with the byte at fault) and ErrNotSupported (a
// platform where nothing the spec names can be switched).
//
// Environment: SDT_MODE (off, on, signal), SDT_SIGNAL (the toggle of signal mode,
// SIGUSR2 by default; one that cannot be caught, stops or suspends a program, reports
// a fault or is the runtime's or the system's own is refused with a warning on stderr
// and SIGUSR2 kept: Ctrl-C goes on stopping the program), SDT_PATCH (off: branch checks
// only), SDT_PATCH_PROTOCOL (auto, atomic, rendezvous), SDT_CONTROL (off: no socket),
// SDT_USDT_POLL (sealed binaries: how often USDT semaphores are read, default 100ms),
// SDT_MEMORY and SDT_MEMORY_TRACE (what traces and aggregations may take of its
// memory: all of them, default 512m; each, default 256m).
// A binary sealed by sdtctl seal starts from its site table instead of a scan, and
// enables a probe while bpftrace, perf or SystemTap is attached to its USDT notes.
package sdt
