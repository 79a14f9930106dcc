package agent

import (
	"errors"
	"time"
)

// Process is a gosdt process the agent can reach.
type Process struct {
	Pid       int    `json:"pid"`
	Service   string `json:"service"` // its OTEL_SERVICE_NAME, else its command
	Command   string `json:"command"`
	GoVersion string `json:"go_version,omitempty"`
}

// Plan is what a set's specs match in one process, read before anything is placed.
type Plan struct {
	Probes    int      // probes the specs match
	Functions []string // functions run-time probes would be placed on
	Refused   []string // "probe: why", for sites the process refuses
	Missing   []string // specs that match no probe
}

// Fleet is how the agent reaches processes: sdtctl's control client and export.
type Fleet interface {
	// Processes lists the gosdt processes reachable now, in pid order.
	Processes() []Process
	// Plan lists what specs match in pid, changing nothing.
	Plan(pid int, specs []string) (Plan, error)
	// Start places e's probes in pid and exports what they see, and returns once its
	// probes are on (or it failed).
	Start(pid int, e *Entry) (Session, error)
	// CPU is the CPU time pid has used.
	CPU(pid int) (time.Duration, error)
}

// Session is one set running in one process.
type Session interface {
	// Fires is how many times the set's probes fired in the process so far.
	Fires() (uint64, error)
	// Done is closed when the session ended by itself (the process exited); Err then
	// says why.
	Done() <-chan struct{}
	Err() error
	// Stop releases the probes and flushes what was exported; it returns the summary
	// of the export.
	Stop() string
}

// ErrGone is what a Fleet's error wraps when the process exited.
var ErrGone = errors.New("process exited")
