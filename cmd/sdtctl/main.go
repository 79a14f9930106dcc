// Command sdtctl lists, enables, traces and aggregates the probes of running Go
// programs that use gosdt, through each process's control socket (see
// internal/ctlproto), and lists the probe sites of a binary file offline.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Exit codes, one per kind of failure (see usage).
const (
	exitOK         = 0
	exitError      = 1
	exitUsage      = 2
	exitNoProcess  = 3
	exitNotGosdt   = 4
	exitPermission = 5
	exitNoMatch    = 6
	exitBadSpec    = 7
	exitExited     = 8
	exitStart      = 9
)

// exitError is an error with its exit code.
type cmdError struct {
	code int
	msg  string
}

func (e *cmdError) Error() string { return e.msg }

func fail(code int, format string, args ...any) error {
	return &cmdError{code: code, msg: fmt.Sprintf(format, args...)}
}

func exitCode(err error) int {
	if errors.Is(err, errHelp) {
		return exitOK
	}
	var e *cmdError
	if errors.As(err, &e) {
		return e.code
	}
	if err != nil {
		return exitError
	}
	return exitOK
}

func main() {
	err := run(os.Args[1:], os.Stdout, os.Stderr)
	if err != nil && !errors.Is(err, errHelp) && err.Error() != "" {
		fmt.Fprintln(os.Stderr, "sdtctl:", err)
	}
	os.Exit(exitCode(err))
}

var errHelp = errors.New("help")

const usage = `usage: sdtctl COMMAND [flags] [args]

Commands (a process is a running Go program that uses gosdt, found by its control
socket in $XDG_RUNTIME_DIR/gosdt/ or /tmp/gosdt-<uid>/; -n NAME names every process
whose command is NAME, each said by its pid):
  ps                                   gosdt processes you may control: pid, command, probes, sites on
  list [-p PID | -n NAME | BINARY] [SPEC]
                                       probes with their arguments, state, hits and sites, each probe
                                       once; without -p/-n, of every gosdt process of yours. For a
                                       BINARY file, the sites read offline from its ELF (amd64 or
                                       arm64), verified as at run time (a sealed binary's from its
                                       site table), named from the Define calls where readable
  enable  [-p PID | -n NAME] [--many] SPEC...
                                       switch probes on; without -p/-n, in every gosdt process of
                                       yours. They stay on after sdtctl exits, until disable.
  disable [-p PID | -n NAME] SPEC...   switch probes off (sites a running trace or stat holds stay on)
  trace [-p PID | -n NAME] SPEC [-c N] [-d DURATION] [--bufsize BYTES] [--where EXPR] [--stack] [--many]
       [--raw] [--detach] [-- CMD ARGS]
                                       enable, print one line per event (time, pid/goroutine, probe,
                                       arg=value), disable on exit, Ctrl-C, after N events or DURATION.
                                       With -n, every process of that name: their events merged, each
                                       with its pid, N events of them all, a summary per process.
                                       Each P of the process records into a buffer of its own (default
                                       4m): what does not fit is dropped, counted, and reported at the
                                       end (every fire is delivered or counted dropped, once). On
                                       linux sdtctl reads those buffers itself as they are written
                                       (shared memory; the process copies nothing; with --stack the
                                       process sends them). --raw writes the records as the buffers
                                       hold them, unformatted (the fastest output: redirect stdout
                                       to a file), for decode to print; to a file without --bufsize
                                       it asks for 32m buffers (the process halves them to fit its
                                       trace budget, SDT_MEMORY_TRACE: GOMAXPROCS x 32m of its
                                       memory at most, pages used as written)
  decode [--json] [FILE]               print a raw trace (trace --raw; FILE or stdin) as trace would
                                       have, then per process its events and drops (stderr; --json:
                                       an object per process on stdout). The format: "gosdtrw1",
                                       then chunks (u32 kind, u32 pid, u64 bytes, little-endian):
                                       kind 1 one control frame (clock, descriptions, the end), kind
                                       2 records as a buffer holds them (internal/ctlproto raw.go)
  trace|stat SPEC [flags] -- CMD ARGS  start CMD (a program that uses gosdt) with SPEC enabled from
                                       its first instruction (a probe fired in a package's init is
                                       seen), follow it until it exits, and say its exit status (--json:
                                       {"status":N}); it keeps sdtctl's stdin, stdout and stderr.
                                       SIGINT and SIGTERM to sdtctl are passed on to CMD (a second
                                       kills it); a trace that ends first (-c, -d) ends CMD (SIGTERM,
                                       SIGKILL 5s later) unless --detach
  stat [-p PID | -n NAME] SPEC [--by probe|site|stack|ARG] [--value ARG] [--hist ARG [--linear LOW,HIGH,STEP]]
       [--where EXPR] [--clear] [-i INTERVAL] [-d DURATION] [--pprof FILE] [--folded FILE] [--many]
       [--detach] [-- CMD ARGS]
                                       enable and count fires by key every INTERVAL (default 1s), in
                                       the process, each P apart, merged when shown; --value sums,
                                       bounds and averages a number argument; --hist also quantizes it
                                       (power-of-two buckets, DTrace's quantize; with --linear, linear
                                       buckets, lquantize); len(ARG) folds a string's length (a string
                                       itself is refused: --by ARG counts its values); --clear shows
                                       each interval's own values. ARG is argN or the argument's name.
                                       With -n, every process of that name, each snapshot a table of
                                       its own headed by its pid (processes fold apart: their counts
                                       are not added). --by stack keys by the fire's Go call stack
                                       (32 frames, as @[ustack()]); --pprof FILE and --folded FILE
                                       write the last snapshot as a pprof profile (go tool pprof) and
                                       as folded stacks (flamegraph.pl, speedscope). Disable on exit
                                       or Ctrl-C
  export [-p PID | -n NAME] SPEC... [-d DURATION] [-i INTERVAL] [--by KEY] [--bufsize BYTES]
       [--flush-timeout DURATION] [--many] [--detach] [-- CMD ARGS]
                                       OpenTelemetry: every call an entry/return pair (fbt) or a
                                       latency probe sees is a span, named after its function, nested
                                       per goroutine, with its arguments and results, an error status
                                       when it panicked or returned an error; other probes fired in a
                                       call are events of its span. Fires per probe and latency
                                       histograms are metrics (keyed as stat --by), every INTERVAL.
                                       Sent over OTLP as OTEL_EXPORTER_OTLP_ENDPOINT, _PROTOCOL
                                       (http/protobuf, grpc), _HEADERS say; sampled as
                                       OTEL_TRACES_SAMPLER(_ARG) say; the resource is the process's
                                       (its OTEL_SERVICE_NAME, else its executable's name). --json prints
                                       spans and metrics as JSON lines instead. With -n, every process
                                       of that name, and those that start during the export; with
                                       -- CMD, the command it starts, its first SPEC's probes placed
                                       before its main runs, until it exits. Until
                                       Ctrl-C or DURATION; then, per process, what was exported and what
                                       was dropped where (its buffers, the exporter's queue, failed
                                       exports), also exported as metrics. Never slows the process: what
                                       a slow or absent collector cannot take is dropped and counted
  seal [-o OUT] BINARY...              rewrite a linux/amd64 or arm64 Go binary that uses gosdt: its
                                       sites sealed in the file (no scan at start), a site table, and
                                       USDT notes for bpftrace/perf/gdb (usdt:BINARY:provider:name;
                                       a string argument is two note arguments, pointer and length).
                                       A tracer attaching raises the probe's semaphore and the
                                       program enables it within SDT_USDT_POLL (default 100ms).
                                       Sealing twice changes nothing; the file is replaced atomically
  toolexec [-rules FILE] TOOL ARGS...  for go build/test -toolexec 'sdtctl toolexec': runs the tool
                                       and seals what the linker writes (programs using gosdt only);
                                       -rules FILE gives the functions FILE names fbt probes
  agent --server URL [--max-functions N] [--header KEY=VALUE] [--scan INTERVAL]
       [--poll INTERVAL] [--flush-timeout DURATION]
                                       an OpAMP agent: reports this host's gosdt processes to the
                                       OpAMP server at URL and keeps in them the probe sets its
                                       remote configuration (gosdt.yaml) asks for, exported as
                                       export does, each until its ttl, its withdrawal, or the
                                       server's absence past its server_timeout; over budget
                                       (cpu or fires/s), a set leaves the process
  version [--json]                     sdtctl's module version, the Go that built it, and the Go
                                       releases supported (those whose layouts gosdt has been
                                       checked against)
  demo [-t PHASE] [-rounds N]          start a workload with probes, trace it, show a live histogram,
                                       and compare its throughput with probes disabled and enabled,
                                       measured over PHASE each (default 1s, at least 100ms), in N
                                       rounds (default 3) of alternated order, medians reported

SPEC is a DTrace probe description provider:module:function:name, filled from the right
(exit = ::: exit), globs allowed. The function field matches a function's whole name
(handlers.(*Server).ServeHTTP), the name without its package ((*Server).ServeHTTP), or
its last part (ServeHTTP): a short name matching several functions matches them all,
and trace, stat, enable and disable name them on stderr.
Function probes: fbt:PACKAGE:FUNCTION:entry|return is a function's entry or its
returns. Where rules placed them at build time (toolexec -rules) they are the build's;
on any other function of a running program they are placed at run time, by writing a
call over its code (list shows each probe's kind, and why a function refuses one).
A run-time entry carries the function's arguments, named and typed as the binary's DWARF
says (without DWARF, the register arguments as words, arg0...); a return latency_ns and
the results (r0...); a call that panics has no return event. A spec must name
a package, or a function with its package (store.(*DB).Get), to place run-time probes;
enable, trace, stat and export ask for --many beyond 16 functions; at most 256
functions have them at once. A command takes at most 64 SPECs (one request's limit;
a glob matches many probes in one spec).
Every command but demo and toolexec takes --json (one JSON object per line), and
--help (its flags, exit 0).
Values, in text and --json: integers and floats as numbers (in --json a JSON number
with every digit, also beyond 2^53: read int64/uint64 values as such, not as doubles,
e.g. Go's json.Decoder.UseNumber; jq before 1.7 rounds them), bools true/false,
strings quoted, pointers (fbt's *T, maps, chans, funcs) as 0x... hex (a JSON string),
an error as its text, or nil (JSON null).
trace, stat and export need -p or -n when more than one gosdt process runs.

Exit codes:
  0 success
  1 other error; export: anything dropped (the process's buffers, the exporter's queue)
    or failed, said where (a backend without metrics, 404, is said once, not a failure)
  2 usage: a bad flag, argument, OTEL_* value, or output file
  3 no such process (export -n: none came during the export)
  4 not a gosdt process (or program)
  5 permission denied
  6 spec matches no probe
  7 malformed spec
  8 process exited (trace, stat and export first say what they received: events and
    drops so far, or the snapshots and the last one's time; --json adds "exited": true)
  9 -- CMD could not be started (missing, not executable)
A command run on several processes exits with the first failure's code, after trying
every process.

Files written (seal, stat --pprof and --folded): a regular file is replaced whole through
a temporary file beside it, keeping its owner and mode; a symbolic link is followed and
its target written; a character device (/dev/null) or /dev/stdout is written in place,
and - is stdout; a directory, named pipe, socket or block device is refused (exit 2)
before anything is done.
`

func run(args []string, stdout, stderr io.Writer) error {
	err := runCommand(args, stdout, stderr)
	var h *helpError
	if errors.As(err, &h) {
		fmt.Fprint(stdout, h.text)
	}
	return err
}

func runCommand(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fail(exitUsage, "no command\n%s", shortUsage)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return nil
	case "ps":
		return cmdPs(rest, stdout, stderr)
	case "list":
		return cmdList(rest, stdout, stderr)
	case "enable", "disable":
		return cmdSwitch(cmd, rest, stdout, stderr)
	case "trace":
		return cmdTrace(rest, stdout, stderr, nil)
	case "stat":
		return cmdStat(rest, stdout, stderr, nil)
	case "decode":
		return cmdDecode(rest, stdout, stderr)
	case "export":
		return cmdExport(rest, stdout, stderr, nil)
	case "demo":
		return cmdDemo(rest, stdout, stderr)
	case "seal":
		return cmdSeal(rest, stdout, stderr)
	case "toolexec":
		return cmdToolexec(rest, stdout, stderr)
	case "agent":
		return cmdAgent(rest, stdout, stderr, nil)
	case "version":
		return cmdVersion(rest, stdout, stderr)
	}
	return fail(exitUsage, "unknown command %q\n%s", cmd, shortUsage)
}

// shortUsage follows a missing or unknown command: the error first, then this, not
// the whole usage.
const shortUsage = `usage: sdtctl COMMAND [flags] [args]
commands: ps list enable disable trace decode stat export seal toolexec agent demo version
sdtctl --help describes them all; sdtctl COMMAND --help lists a command's flags`
