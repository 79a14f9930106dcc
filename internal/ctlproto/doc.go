// Package ctlproto is the wire protocol between sdtctl and the control server of a
// process that uses gosdt (package sdt/control, and sdt's side of it, which answers
// list in its types). Nothing else should import it. It is hand-written binary, so that the process side links no encoding/json.
//
// # Transport
//
// A unix stream socket per process, at $XDG_RUNTIME_DIR/gosdt/<pid>.sock, or
// /tmp/gosdt-<uid>/<pid>.sock when XDG_RUNTIME_DIR is unset. The directory has mode
// 0700 and belongs to the user; the server refuses a directory that is not owned by
// its uid or is accessible to group or others. The server checks each connection's
// peer credentials (SO_PEERCRED): the same uid or root, else the connection gets a
// "permission" error and is closed.
//
// # Framing
//
// Every message is a frame: a 4-byte big-endian length n, then n bytes of payload,
// 0 < n <= MaxFrame (1 MiB). The payload's first byte says what it is (an op for a
// request, a kind for a response: 1 + its index in the lists of proto.go, never
// reused); fields follow, each a uvarint key, tag<<1 | type, and a value: type 0 a
// uvarint, type 1 a uvarint length and that many bytes (a string, a nested message,
// packed records). Signed integers are zigzag-encoded; a zero or empty field is left
// out; a repeated field is repeated. The tags are the constants of proto.go.
//
// A frame that is empty, too long, truncated (the connection ends inside it), or a
// request with a malformed or unknown field, is an error: the server replies with
// "badrequest" where it can and closes the connection; nothing is changed in the
// process. A client skips response fields it does not know, so that a newer server
// can tell more.
//
// # Session
//
// The client speaks first, with a Request of op "hello" carrying Version (this
// package's Version, 3). The server answers with a Response of kind "hello" (Version,
// Pid, Command, NProbes, SitesOn, GoVersion, and Layouts when gosdt has not read that
// Go's layouts) or, for another version, an error with code
// "version" and closes. Then the client sends requests, one at a time; each gets
// exactly one reply, except trace and stat, which stream until the client sends op
// "stop" (or disconnects), and then end with a reply of kind "end".
//
// Requests (op, then fields):
//
//	hello    version                        version handshake, first message only
//	list     spec                           reply "list": Probes, as sdt.List
//	enable   specs, persist                 reply "ok": N sites switched on, AlreadyOn
//	disable  specs                          reply "ok": N sites switched off, Kept still held by others
//	trace    spec, count, duration_ms,      reply "started" (buffers, bufsize, clock; on linux
//	         bufsize                        shared: the buffers' descriptors), then "events"
//	                                        batches (heads), then "end"
//	stat     spec, by, value, hist,         reply "started", then "stat" snapshots, then "end"
//	         lin_low, lin_high, lin_step,
//	         clear, interval_ms, duration_ms
//	stop                                    ends the running trace or stat
//
// Probes that a connection enables (enable without persist, and the enables that
// trace and stat make) belong to that connection: when it closes, for any reason,
// they are disabled, unless another owner still holds them. enable with persist
// (what `sdtctl enable` sends) hands the probes to the process: they stay on after
// the connection closes, until a disable. A disable releases the connection's and
// the process's holds on what it matches; sites other owners still hold stay on, are
// counted in Kept and named in KeptBy.
//
// Responses (kind): hello, ok, list, started, events, stat, end, error.
//
// A trace is recorded in the process into one buffer per P (bufsize bytes each): a
// fire writes its record into the buffer of the P it runs on, or, when that is full,
// is dropped and counted there. An events batch carries the records as the buffers
// hold them (events.go: packed, little-endian, 8-byte aligned; time in ticks of the
// process's CPU counter), the descriptions (Desc: probe name, site, argument names,
// types and kinds) of the probe sites it is the first to name, the clock that turns
// its ticks into wall-clock time, and Drops, all told so far. Records of one P arrive
// in the order they fired; records of different Ps may not.
//
// A trace ends at its count, at once: what fired after the count's last event is
// neither sent nor counted. At its duration or a stop, its probes are switched off
// first and what they fired before is sent. "end" carries Delivered (records sent),
// Drops, and BufferDrops (per buffer, then those fired on a P that had none yet):
// every fire between the start and the end is delivered or dropped, once.
//
// A stat is folded in the process, each P into cells of its own, merged when a
// snapshot is taken: per key (by: probe, site, or an argument's values) the count,
// and of value the sum, minimum, maximum and a histogram (quantize: powers of two;
// linear: lin_step wide from lin_low to lin_high). Each snapshot holds everything
// since the start, or with clear what its interval folded.
//
// # Errors
//
// A Response of kind "error" has Code and Message. Codes:
//
//	badspec       the probe spec is malformed
//	nomatch       the spec matches no probe
//	notsupported  nothing the spec matches can be switched on this platform
//	badrequest    malformed frame or request, unknown op or field, bad argument
//	version       unsupported protocol version
//	permission    the peer's uid may not control this process
//	budget        the trace or stat would take more memory than the process allows
//	busy          the process serves as many connections as it allows; try later
//	timeout       the client sent nothing for too long; the connection is closed
//	internal      anything else (patching failed, a recovered panic)
//
// A client treats a code it does not know as an error with its message: codes are
// added without a new Version.
//
// # Limits
//
// MaxFrame bytes per frame; MaxSpecs specs per enable or disable; specs as in
// internal/spec (1024 bytes); a stat interval of at least 100 ms.
//
// The server serves at most 64 connections at once, and at most a quarter of the
// process's file descriptor limit (RLIMIT_NOFILE, as it was when the socket was
// bound): one more is answered "busy" and closed. A client sends its hello within
// 10 s of connecting, and each next request within a minute of the last reply
// unless a trace or stat is running; else it gets "timeout" and the connection is
// closed.
//
// Traces and stats take the process's memory within a budget its owner sets in its
// environment: SDT_MEMORY_TRACE for one (256 MiB by default), SDT_MEMORY for all
// at once (512 MiB), and a trace at most half of what the process's memory limits
// leave (ulimit -v, its cgroup's memory limit). A trace's buffers are GOMAXPROCS x
// bufsize: one over the budget is refused with "budget", whose message names the
// size asked for, the budget and how to change it; without a bufsize the default
// (4 MiB) is halved until it fits, and "started" says the size used. A stat's keys
// past its budget are not folded but counted in Overflow, as are the rows of a
// snapshot that do not fit in one frame (those with the fewest fires).
package ctlproto
