//go:build !unix

package otelcoltest

import "os"

// Where processes cannot be paused (Need skips there anyway), they are killed.
var sigTerm, sigStop, sigCont os.Signal = os.Kill, nil, nil
