# The Mirror sample operator (cmd/sample-operator) as a static binary on a
# distroless base that runs as a non-root user. Build from the module root:
#
#   docker build -t ghcr.io/opkit-dev/sample-operator:latest .

FROM golang:1.26 AS builder
WORKDIR /src

# Modules first, so that editing the code does not download them again.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
# Static: no cgo, so the binary runs on distroless/static, which has no libc.
# -tags nolocal leaves out --local (make run's mode), which links a test
# control plane that a pod never uses.
RUN CGO_ENABLED=0 GOOS=linux go build -tags nolocal -trimpath -ldflags="-s -w" -o /out/sample-operator ./cmd/sample-operator

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/sample-operator /sample-operator
# 65532 is distroless's "nonroot"; numeric, so runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["/sample-operator"]
