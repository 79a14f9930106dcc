// Package ctlserver is the control server sdtctl talks to: the unix socket and its
// peers' check (linux), each connection's requests, and when it starts (Start).
package ctlserver
