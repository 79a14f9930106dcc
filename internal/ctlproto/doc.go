// Package ctlproto is the wire protocol between sdtctl and the control server of a
// process that uses gosdt (package sdt). Both sides import it; nothing else should.
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
// Every message is a frame: a 4-byte big-endian length n, then n bytes of one JSON
// object. 0 < n <= MaxFrame (1 MiB). A frame that is empty, too long, truncated
// (the connection ends inside it) or not a JSON object of the expected shape is an
// error: the server replies with an error message where it can ("badrequest") and
// closes the connection; nothing is changed in the process.
//
// # Session
//
// The client speaks first, with a Request of op "hello" carrying Version (this
// package's Version, 1). The server answers with a Response of kind "hello" (Version,
// Pid, Command, Probes, SitesOn) or, for another version, an error with code
// "version" and closes. Then the client sends requests, one at a time; each gets
// exactly one reply, except trace and stat, which stream until the client sends op
// "stop" (or disconnects), and then end with a reply of kind "end".
//
// Requests (field "op"):
//
//	hello    {version}                     version handshake, first message only
//	list     {spec}                        reply "list": probes (Probes, as sdt.List)
//	enable   {specs, persist}              reply "ok": N sites switched on
//	disable  {specs}                       reply "ok": N sites switched off, Kept still held by others
//	trace    {spec, count, duration_ms}    reply "started", then "event"s, then "end"
//	stat     {spec, by, hist, interval_ms} reply "started", then "stat" snapshots, then "end"
//	stop     {}                            ends the running trace or stat
//
// Probes that a connection enables (enable without persist, and the enables that
// trace and stat make) belong to that connection: when it closes, for any reason,
// they are disabled, unless another connection still holds them (a count per site
// and per definition). enable with persist: true (what `sdtctl enable` sends) hands
// the probes to the process: they stay on after the connection closes, until a
// disable. A disable releases the connection's and the process's holds on what it
// matches; sites other connections still hold stay on and are counted in Kept.
//
// Responses (field "kind"): hello, ok, list, started, event, stat, end, error.
// An event carries: the time (RFC 3339 with nanoseconds), the probe's full name,
// the site's address, and the arguments as name, type and value (strings cut to 64
// bytes, see sdt.StringMax). There is no goroutine id. "end" carries Drops: events
// lost to this trace (the process's ring was full or the client too slow).
//
// # Errors
//
// A Response of kind "error" has Code and Message. Codes:
//
//	badspec     the probe spec is malformed
//	nomatch     the spec matches no probe
//	badrequest  malformed frame or request, unknown op, bad argument
//	version     unsupported protocol version
//	permission  the peer's uid may not control this process
//	internal    anything else (patching failed, too many traces, a recovered panic)
//
// # Limits
//
// MaxFrame bytes per frame; MaxSpecs specs per enable or disable; specs as in
// internal/spec (1024 bytes); 64 concurrent traces per process; a stat interval of
// at least 100 ms.
package ctlproto
