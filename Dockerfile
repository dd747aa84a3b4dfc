# The Mirror sample operator (cmd/sample-operator) as a static binary on a
# base of two files, run as a non-root user, for people with Docker:
#
#   docker build -t ghcr.io/opkit-dev/sample-operator:latest .
#
# 'make image' builds the same image without Docker (hack/image, package
# hack/image/ociimage): the same go build flags, the same base files
# (hack/image/ociimage/rootfs), user, entrypoint and labels.
# TestDockerfileMatches in hack/image/ociimage fails when the two drift. The
# layer digests differ: Docker stamps its own file times.

FROM golang:1.26 AS builder
WORKDIR /src

# Modules first, so that editing the code does not download them again.
COPY go.mod go.sum ./
RUN go mod download

COPY . .
# Static: no cgo, so the binary runs on a base without libc.
# -tags nolocal leaves out --local (make run's mode), which links a test
# control plane that a pod never uses.
RUN CGO_ENABLED=0 GOOS=linux go build -tags nolocal -trimpath -ldflags="-s -w" -o /out/sample-operator ./cmd/sample-operator

# No base image: /etc/passwd and /etc/group name root and nonroot (65532),
# the Mozilla roots at /etc/ssl/certs/ca-certificates.crt (here the golang
# image's Debian bundle; make image's come from the pinned Go module
# golang.org/x/crypto/x509roots/fallback), and the binary is the only
# program. No shell.
FROM scratch
COPY hack/image/ociimage/rootfs/ /
COPY --from=builder /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=builder /out/sample-operator /sample-operator
# Numeric, so that runAsNonRoot can verify it.
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/sample-operator"]
LABEL org.opencontainers.image.title="sample-operator" \
      org.opencontainers.image.description="opkit's Mirror sample operator: copies a ConfigMap or Secret into every namespace that matches a selector" \
      org.opencontainers.image.source="https://github.com/opkit-dev/opkit" \
      org.opencontainers.image.licenses="Apache-2.0"
