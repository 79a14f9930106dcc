// Package otelexport makes OpenTelemetry spans and metrics of what a traced process's
// streams carry, for sdtctl export, with the OpenTelemetry SDK: a Process per traced
// process, with its own resource (Resource: the process's, not sdtctl's), tracer
// provider and meter provider, over Exporters that every process shares (the SDK's
// OTLP exporters, configured from the environment as the SDK configures them: FromEnv).
//
// Spans: the calls package pairs the trace streams' events into calls; each call is a
// span, started at its entry (where the sampler decides, before any attribute is made)
// and given its attributes and status at its end. Spans wait in a bounded queue that
// drops rather than wait, and counts what it dropped, what the exporter failed to send
// and what it sent.
//
// Metrics: the stat streams' snapshots (folded in the process, as sdtctl stat folds)
// are the data of a metric Producer that the SDK's periodic reader exports, with what
// the export dropped where.
package otelexport
