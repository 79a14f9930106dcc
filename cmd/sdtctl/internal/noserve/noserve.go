// Package noserve keeps sdtctl from serving a control socket: sdtctl links package sdt
// for its demo workload, and sdt's initialisation would make sdtctl reachable too.
//
// Its init runs before sdt's, whose end arms the automatic Serve: the Go spec (since
// Go 1.21) initialises first, of the packages whose imports are all initialised, the
// one with the smallest import path; this one (.../cmd/sdtctl/...) sorts before
// .../sdt and needs only package control, which sdt needs too. So Stop comes before
// the start and nothing is ever armed. (Were the order different, Stop would still
// cancel the pending start; TestServesNoSocket would see the socket.)
package noserve

import (
	"os"

	"github.com/gosdt/gosdt/sdt/control"
)

func init() {
	if len(os.Args) > 1 && os.Args[1] == "demo-workload" {
		return // the demo's traced child: it serves
	}
	control.Stop()
}
