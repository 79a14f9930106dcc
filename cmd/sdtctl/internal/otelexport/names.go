package otelexport

import (
	"strings"

	"github.com/gosdt/gosdt/cmd/sdtctl/internal/calls"
)

// conventions name the arguments of some providers' probes by OpenTelemetry's
// semantic conventions, where one applies: http:::done's status is
// http.response.status_code. Other arguments are gosdt.arg.<name>, results
// gosdt.result.<name>.
var conventions = map[string]map[string]string{
	"http": {
		"status": "http.response.status_code", "status_code": "http.response.status_code", "code": "http.response.status_code",
		"method": "http.request.method", "path": "url.path", "url": "url.full", "route": "http.route",
		"scheme": "url.scheme", "query": "url.query", "host": "server.address", "port": "server.port",
	},
	"db": {
		"query": "db.query.text", "statement": "db.query.text", "sql": "db.query.text", "table": "db.collection.name",
		"collection": "db.collection.name", "system": "db.system.name", "db": "db.namespace", "database": "db.namespace",
		"operation": "db.operation.name", "op": "db.operation.name",
	},
	"rpc": {"method": "rpc.method", "service": "rpc.service", "system": "rpc.system"},
}

func init() {
	conventions["sql"] = conventions["db"]
	conventions["grpc"] = conventions["rpc"]
}

// AttrKey names argument name of a probe of provider as an attribute.
func AttrKey(provider, name string) string { return attrKey(provider, name, false) }

// attrKey names an argument, or a return probe's result, as an attribute.
func attrKey(provider, name string, result bool) string {
	if k := conventions[provider][strings.ToLower(name)]; k != "" {
		return k
	}
	if result {
		return "gosdt.result." + name
	}
	return "gosdt.arg." + name
}

// spanName is what a call's span is named: its function (store.(*DB).Get), or for a
// probe outside any function, provider:name.
func spanName(p *calls.Probe) string {
	if p.Function != "" {
		return p.Function
	}
	return p.Provider + ":" + p.Probe
}

// codeNames are the code.namespace and code.function of a probe's function, split as
// OpenTelemetry's Go bridges split a runtime function name: at its last dot outside
// brackets, so that a method's namespace is its type (example.com/app/store.(*DB),
// Get) and a function's its package (example.com/app/store, Fib).
func codeNames(module, function string) (namespace, fn string) {
	if function == "" {
		return module, ""
	}
	// The probe names a function after its package's name (store.Fib); its full name
	// is the package path's.
	full := function
	if module != "" {
		if i := strings.IndexByte(function, '.'); i >= 0 {
			full = module + "." + function[i+1:]
		}
	}
	depth := 0
	for i := len(full) - 1; i >= 0; i-- {
		switch full[i] {
		case ']', ')':
			depth++
		case '[', '(':
			depth--
		case '.':
			if depth == 0 && i > strings.LastIndexByte(full, '/') {
				return full[:i], full[i+1:]
			}
		}
	}
	return "", full
}

// pointerType reports whether a Go type is carried by address.
func pointerType(t string) bool {
	return strings.HasPrefix(t, "*") || strings.HasPrefix(t, "map[") || strings.HasPrefix(t, "chan ") ||
		strings.HasPrefix(t, "func(") || t == "unsafe.Pointer"
}
