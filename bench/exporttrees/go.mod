module github.com/gosdt/gosdt/bench/exporttrees

go 1.26.0

require (
	github.com/gosdt/gosdt v0.0.0
	github.com/mccutchen/go-httpbin/v2 v2.26.0
)

require golang.org/x/sys v0.49.0 // indirect

replace github.com/gosdt/gosdt => ../..
