// Module apilist writes and checks api/opkit.txt, the listing of opkit's
// exported API: a tool, not the SDK, so it stays out of the SDK's go.mod.
module github.com/opkit-dev/opkit/hack/apilist

go 1.26.0

require github.com/google/go-cmp v0.7.0
