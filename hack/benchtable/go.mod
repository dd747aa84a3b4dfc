// Module benchtable prints the tables of make bench from go test -bench
// output: a tool, not the SDK, so it stays out of the SDK's go.mod.
module github.com/opkit-dev/opkit/hack/benchtable

go 1.26.0
