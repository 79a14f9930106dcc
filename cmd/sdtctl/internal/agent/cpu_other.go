//go:build !linux

package agent

import (
	"errors"
	"time"
)

// ProcCPU is the CPU time pid has used: only linux tells it (a cpu budget is refused
// elsewhere).
func ProcCPU(pid int) (time.Duration, error) {
	return 0, errors.New("a process's CPU time is read from /proc (linux)")
}
