module github.com/gosdt/gosdt

go 1.26.0

require (
	go.opentelemetry.io/otel/trace v1.47.0
	golang.org/x/arch v0.32.0
	golang.org/x/sys v0.49.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
)
