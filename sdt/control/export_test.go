package control

import "io"

// ServeConn serves one client connection, for tests that talk to the server over a
// pipe.
func ServeConn(c io.ReadWriteCloser, name string) { serve(c, name) }

// OpenConsumers is the number of traces and aggregations open.
func OpenConsumers() int64 { return consumers.Load() }
