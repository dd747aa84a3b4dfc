// Module matrix prints the table of make test-matrix from go test -json
// output: a tool, not the SDK, so it stays out of the SDK's go.mod.
module github.com/opkit-dev/opkit/hack/matrix

go 1.26.0
