// Command bigprog is a large program that uses gosdt and nothing of it but its control
// server: the OpenTelemetry SDK and its exporters, the go/types checker, an HTTP
// server, templates. It measures what listing every function as run-time probes costs
// a program of about 30 MB (bench/README.md): it waits until killed.
package main

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	htmltemplate "html/template"
	"net/http"
	"os"
	"text/template"

	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	_ "github.com/gosdt/gosdt/sdt"
)

// linked keeps what the program could call: its code is in the binary.
var linked = []any{
	otlptracegrpc.New, otlptracehttp.New, otlpmetricgrpc.New, otlpmetrichttp.New,
	stdouttrace.New, stdoutmetric.New, sdktrace.NewTracerProvider, sdkmetric.NewMeterProvider,
	http.ListenAndServe, http.Get, json.Marshal, json.Unmarshal, xml.Marshal, xml.Unmarshal,
	template.New, htmltemplate.New, parser.ParseFile, importer.Default,
	(&types.Config{}).Check, token.NewFileSet,
}

func main() {
	if len(os.Args) > 1 {
		fmt.Println(len(linked)) // never: the functions stay reachable
	}
	fmt.Println("ready")
	select {}
}
