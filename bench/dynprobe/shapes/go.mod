module github.com/gosdt/gosdt/bench/dynprobe/shapes
go 1.26
