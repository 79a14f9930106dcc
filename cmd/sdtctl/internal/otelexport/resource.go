package otelexport

import (
	"bytes"
	"context"
	"crypto/sha1"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
)

// Resource describes a traced process, not sdtctl: its service.name is its
// OTEL_SERVICE_NAME (read from /proc/PID/environ), else service.name in its
// OTEL_RESOURCE_ATTRIBUTES, else sdtctl's own OTEL_SERVICE_NAME or
// OTEL_RESOURCE_ATTRIBUTES service.name, else its executable's name; its attributes
// are its OTEL_RESOURCE_ATTRIBUTES and then sdtctl's (which win), process.pid (as
// sdtctl's PID namespace sees it), process.executable.name and .path, host.name, and
// service.instance.id, the same for every export of one run of the process (made of
// the boot, its pid and its start time). command is the process's name as its
// control server tells it, used where /proc cannot be read.
func Resource(pid int, command string, getenv func(string) string) (*resource.Resource, error) {
	env := processEnv(pid)
	attrs := map[string]attribute.KeyValue{}
	var order []string
	set := func(kv attribute.KeyValue) {
		k := string(kv.Key)
		if _, ok := attrs[k]; !ok {
			order = append(order, k)
		}
		attrs[k] = kv
	}
	theirs := parseResourceAttrs(env["OTEL_RESOURCE_ATTRIBUTES"])
	ours := parseResourceAttrs(getenv("OTEL_RESOURCE_ATTRIBUTES"))
	for _, kv := range theirs {
		set(kv)
	}
	for _, kv := range ours {
		set(kv)
	}
	exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	exe = strings.TrimSuffix(exe, " (deleted)")
	name := filepath.Base(exe)
	if exe == "" {
		name = command
	}
	service := firstOf(env["OTEL_SERVICE_NAME"], valueOf(theirs, "service.name"), getenv("OTEL_SERVICE_NAME"), valueOf(ours, "service.name"), name)
	set(attribute.String("service.name", service))
	set(attribute.Int("process.pid", pid))
	if name != "" {
		set(attribute.String("process.executable.name", name))
	}
	if exe != "" {
		set(attribute.String("process.executable.path", exe))
	}
	if h, err := os.Hostname(); err == nil {
		set(attribute.String("host.name", h))
	}
	if _, ok := attrs["service.instance.id"]; !ok {
		set(attribute.String("service.instance.id", instanceID(pid)))
	}
	kvs := make([]attribute.KeyValue, 0, len(order))
	for _, k := range order {
		kvs = append(kvs, attrs[k])
	}
	return resource.New(context.Background(), resource.WithTelemetrySDK(), resource.WithAttributes(kvs...))
}

// processEnv is the environment of pid, as far as it can be read.
func processEnv(pid int) map[string]string {
	m := map[string]string{}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return m
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if k, v, ok := strings.Cut(string(kv), "="); ok {
			m[k] = v
		}
	}
	return m
}

// parseResourceAttrs parses OTEL_RESOURCE_ATTRIBUTES: key=value pairs separated by
// commas, values percent-encoded. A pair without '=' is ignored, as the SDK does.
func parseResourceAttrs(s string) []attribute.KeyValue {
	var out []attribute.KeyValue
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			continue
		}
		v = strings.TrimSpace(v)
		if u, err := url.PathUnescape(v); err == nil {
			v = u
		}
		out = append(out, attribute.String(k, v))
	}
	return out
}

func valueOf(kvs []attribute.KeyValue, key string) string {
	for _, kv := range kvs {
		if string(kv.Key) == key {
			return kv.Value.AsString()
		}
	}
	return ""
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// instanceID names one run of a process as a UUID (version 5's layout): a hash of the
// machine's boot, the pid and the process's start time, so that every export of it
// agrees, and a process that later gets the same pid does not.
func instanceID(pid int) string {
	boot, _ := os.ReadFile("/proc/sys/kernel/random/boot_id")
	start := ""
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Fields after the command (which may hold spaces and parentheses): the 22nd
		// field of the line is the start time.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 19 {
				start = f[19]
			}
		}
	}
	host, _ := os.Hostname()
	h := sha1.Sum([]byte(strings.TrimSpace(string(boot)) + "/" + host + "/" + strconv.Itoa(pid) + "/" + start))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
