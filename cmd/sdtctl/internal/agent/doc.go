// Package agent is sdtctl's OpAMP agent: it reports the gosdt processes of its host to
// an OpAMP server and keeps the probe sets the server's remote configuration asks for.
//
// The server's configuration (YAML under the config map key gosdt.yaml, see Parse)
// names processes by globs, probe specs, what to export and for how long; it can name
// neither a command, nor a file, nor a library. The agent places and removes probes
// through a Fleet, which sdtctl implements with its control client and its export: a
// set's probes are held by the agent's control connections, so that they go when the
// set ends, and when the agent dies (a process releases what a closed connection held).
package agent
